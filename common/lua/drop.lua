-- drop: remove stale old-shard twins (split), each only if it is still in
-- flight under the lease the caller holds on it (take.lua or claim.lua).
--
-- KEYS: the old shard's keys (see apply.lua)
-- ARGV: pairs of id, lease; or of id, "o" or "f" and then the watch record
-- take.lua answered (lib/watch.lua): a producer carried that record to the
-- new shard, so it goes here ("f": the op forgot it, a cancel or repeat;
-- whatever record is here goes, a busy one too, which take does not
-- answer: the ID's recovery is off, so its timeout in flight here must
-- not queue a recovered event when acked).
-- With "o", an online one ("") of an ID out of the zset (its timeout in
-- flight) stays as a busy record; one that went offline since take (its
-- timeout's ack came in between) comes back now: its recovered event is
-- queued here, as the new shard holds it online; a busy record stays.
-- Returns the number of twins removed. The busy records of the twins it
-- removes go with them (their timeouts are never sent).
--
-- Under a producer's take (".75") an ID holds its lease in the zset. Under
-- a scanner's claim (".25") a one-shot ID left the zset and is in the
-- claim's record (lib/inflight.lua), which it leaves here so that it never
-- comes back; one written here since (in the zset again) is not stale
-- twin data but the ID's new life, and stays.
-- #include chunks
-- #include inflight
-- #include watch
-- #include wake
local z, p, f, r = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local sh = bk_open(z, p, r)
local A = ARGV
do -- the watch records first (their pairs leave ARGV)
    local wids, taken, forgets, rest = {}, {}, {}, {}
    for i = 1, #ARGV, 2 do
        local tag = string.sub(ARGV[i + 1], 1, 1)
        if tag == 'o' or tag == 'f' then
            local id = ARGV[i]
            if not taken[id] then wids[#wids + 1] = id end
            taken[id] = string.sub(ARGV[i + 1], 2)
            forgets[id] = forgets[id] or tag == 'f' -- (any op of the ID that forgets wins)
        else
            rest[#rest + 1] = ARGV[i]
            rest[#rest + 1] = ARGV[i + 1]
        end
    end
    if #wids > 0 and bk_has(sh, 'o') then
        local cur, off = bk_read(sh, 'HMGET', 'o', wids), 0
        local pending = bk_read(sh, 'ZMSCORE', 'z', wids)
        local t = redis.call('TIME')
        local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
        local del, busy, back = {}, {}, {}
        for k = 1, #wids do
            local id, rec = wids[k], cur[k]
            if forgets[id] then
                if rec then
                    del[#del + 1] = id
                    if watch_parse(rec) then off = off + 1 end
                end
            elseif rec == '' and not pending[k] then
                busy[#busy + 1] = id
                busy[#busy + 1] = watch_busy(tonumber(now))
            elseif rec and not watch_is_busy(rec) then
                del[#del + 1] = id
                local d, f = watch_parse(rec)
                if d then
                    off = off + 1
                    if taken[id] == '' then -- offline since take: the new shard has it online
                        back[#back + 1] = id
                        back[#back + 1] = string.format('%d %d %s', d, f, now)
                    end
                end
            end
        end
        bk_write(sh, 'HDEL', 'o', del)
        bk_write(sh, 'HSET', 'o', busy)
        watch_queue(sh, back, now)
        watch_count(sh, -off)
        if #back > 0 then wake_ring(sh) end -- (the shard's scanner may be napping)
    end
    A = rest
end
-- One ZMSCORE, then variadic ZREM/HDEL (chunked: Lua's unpack has a limit);
-- an ID given twice is removed once. The records (f) of the leases whose
-- last holder it removed go too.
local ids, seen, leases, out = {}, {}, {}, {}
for i = 1, #A, 2000 do
    local last = math.min(i + 1999, #A)
    local want = {}
    for k = i, last, 2 do want[#want + 1] = A[k] end
    local cur = bk_read(sh, 'ZMSCORE', 'z', want)
    for j = 1, #want do
        local id, l = want[j], A[i + 2 * j - 1]
        if not seen[id] and (cur[j] and tonumber(cur[j]) == tonumber(l)
                             or not cur[j] and inflight_out(l)) then
            seen[id] = true
            ids[#ids + 1] = id
            if cur[j] then leases[#leases + 1] = cur[j] end
            if inflight_out(l) then
                out[l] = out[l] or {}
                out[l][id] = true
            end
        end
    end
end
-- a claim's IDs leave its record; one no longer there (the record came
-- back or was settled meanwhile) is not removed here
local n = #ids
for l, set in pairs(out) do
    local rec = redis.call('HGET', f, l)
    local list, pl = {}, nil
    if rec then list, pl = inflight_pairs(rec, l) end
    local keep, kept, found = {}, {}, {}
    for k = 1, #list, 2 do
        local id = list[k]
        if set[id] then
            found[id] = true
        else
            keep[#keep + 1] = id
            keep[#keep + 1] = list[k + 1]
            if pl and pl[id] then kept[#kept + 1] = id; kept[#kept + 1] = pl[id] end
        end
    end
    if rec and #keep == 0 then
        redis.call('HDEL', f, l)
    elseif rec and #keep < #list then
        redis.call('HSET', f, l, inflight_encode_out(keep, kept))
    end
    for id in pairs(set) do
        if not found[id] and bk_one(sh, 'ZSCORE', 'z', id) == false then
            -- (neither in the zset nor in the record any more)
            for k = #ids, 1, -1 do
                if ids[k] == id then table.remove(ids, k); n = n - 1; break end
            end
        end
    end
end
bk_write(sh, 'ZREM', 'z', ids)
watch_drop_twins(sh, ids)
inflight_forget(sh, f, leases)
return n
