-- drop: remove stale old-shard twins (split), each only if it is still in
-- flight under the lease the caller holds on it (take.lua or claim.lua).
--
-- KEYS: the old shard's keys (see apply.lua)
-- ARGV: pairs of id, lease; or of id, "o": the ID's watch record
-- (lib/watch.lua) goes, a producer carried it to the new shard (take.lua);
-- an online one ("") of an ID out of the zset (its timeout in flight) stays
-- as a busy record, and a busy record stays as it is
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
local z, p, f, r = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local sh = bk_open(z, p, r)
local A = ARGV
do -- the watch records first (their pairs leave ARGV)
    local wids, rest = {}, {}
    for i = 1, #ARGV, 2 do
        local t = ARGV[i + 1] == 'o' and wids or rest
        t[#t + 1] = ARGV[i]
        if t == rest then t[#t + 1] = ARGV[i + 1] end
    end
    if #wids > 0 and bk_has(sh, 'o') then
        local cur, off = bk_read(sh, 'HMGET', 'o', wids), 0
        local pending = bk_read(sh, 'ZMSCORE', 'z', wids)
        local del, busy, now = {}, {}, nil
        for k = 1, #wids do
            if cur[k] == '' and not pending[k] then
                if not now then now = tonumber(redis.call('TIME')[1]) * 1000 end
                busy[#busy + 1] = wids[k]
                busy[#busy + 1] = watch_busy(now)
            elseif cur[k] and not watch_is_busy(cur[k]) then
                del[#del + 1] = wids[k]
                if cur[k] ~= '' then off = off + 1 end
            end
        end
        bk_write(sh, 'HDEL', 'o', del)
        bk_write(sh, 'HSET', 'o', busy)
        watch_count(sh, -off)
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
bk_write(sh, 'HDEL', 'p', ids)
bk_write(sh, 'HDEL', 'r', ids)
if #ids > 0 and bk_has(sh, 'o') then
    local cur, busy = bk_read(sh, 'HMGET', 'o', ids), {}
    for k = 1, #ids do
        if watch_is_busy(cur[k]) then busy[#busy + 1] = ids[k] end
    end
    bk_write(sh, 'HDEL', 'o', busy)
end
inflight_forget(sh, f, leases)
return n
