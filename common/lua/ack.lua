-- ack: settle IDs whose events Kafka acknowledged.
--
-- KEYS: the shard's keys (see apply.lua); [6] is its lock (acquire.lua)
-- ARGV[1] token, then groups: lease (the lease of one claim, claim.lua),
-- count n, then n IDs of that claim; or lease, -n: all n IDs of that
-- claim, not listed (a claim acknowledged whole: no argument per ID)
-- Returns the number of IDs settled, or the error "FENCED lock not held"
-- when the lock is not ours (nothing changed; the new holder redelivers
-- those IDs).
--
-- A claim's record in f (lib/inflight.lua) is what holds its one-shot IDs
-- (claim.lua took them out of the zset): settling them is deleting them
-- from it, the whole record at once for a claim acknowledged whole (one
-- HDEL, nothing per ID when the shard has no payloads or repeating IDs).
-- A record that is gone came back meanwhile (its lease ran out, or a new
-- holder took the shard): its IDs were claimed again, and those events
-- settle them.
--
-- Settling never touches the zset for a one-shot ID: if it is there, it was
-- written after the claim (a reset), and the reset wins. Its stored payload
-- goes with it unless the ID is pending again (written since, with or
-- without a payload: "a touch without payload keeps it"); an ID claimed
-- again meanwhile has its payload in that claim's record too, should that
-- one come back. A repeating ID held its lease in the zset: if its score is
-- still that lease (not touched, cancelled or claimed since), it is re-armed
-- at the next point of its period after now (missed points are skipped, not
-- fired in a burst) and its fire count goes up; else it lives on as it is.
-- An ID with a watch record "" (recovery on, lib/watch.lua) goes offline
-- ("D F") when it is settled, or, when it was written while its timeout was
-- being dispatched, comes back at once: its recovered event is queued now,
-- after Kafka took the timeout. So does one with a busy record (a split
-- moved it while its timeout was in flight here).
-- #include chunks
-- #include inflight
-- #include watch
local z, p, f, r, lock = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6]
if redis.call('GET', lock) ~= ARGV[1] then return redis.error_reply('FENCED lock not held') end
local now -- (read when a repeating ID is re-armed)
local settled = 0
local sh = bk_open(z, p, r)
local has_r = bk_has(sh, 'r')
local has_p = bk_has(sh, 'p')
local has_o = bk_has(sh, 'o')
local gone, done = {}, {} -- payloads that go; records that go
local wfinal, wback, wdelta = {}, {}, 0 -- watch records (lib/watch.lua)

local function time_now()
    if not now then
        local t = redis.call('TIME')
        now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    return now
end

-- Settles ids[j] (with deadlines[j]) of the claim with `lease`.
local function settle(lease, ids, deadlines)
    if not has_p and not has_r and not has_o then
        settled = settled + #ids
        return
    end
    local cur = bk_read(sh, 'ZMSCORE', 'z', ids)
    if has_o then
        local w = bk_read(sh, 'HMGET', 'o', ids)
        for j = 1, #ids do
            local id, c = ids[j], cur[j]
            if watch_is_busy(w[j]) and wfinal[id] == nil then
                -- moved by a split while this timeout was in flight: its
                -- new shard took a write meanwhile, so it came back
                wback[#wback + 1] = id
                wback[#wback + 1] = string.format('%d %d %d', tonumber(deadlines[j]), time_now(), time_now())
                wfinal[id] = false
            elseif w[j] == '' and wfinal[id] == nil then -- (an ID twice in a call: the first settles it)
                local d = tonumber(deadlines[j])
                if not c then -- not written since: offline
                    wfinal[id] = watch_record(d, time_now())
                    wdelta = wdelta + 1
                elseif c ~= lease and not string.find(c, '.', 1, true) then
                    -- written while in flight (not a lease: not in flight
                    -- again, whose ack settles it): back at once
                    wback[#wback + 1] = id
                    wback[#wback + 1] = string.format('%d %d %d', d, time_now(), time_now())
                    wfinal[id] = ''
                end
            end
        end
    end
    for j = 1, #ids do
        local id, c = ids[j], cur[j]
        if not c then -- one-shot, not written since
            gone[#gone + 1] = id
            settled = settled + 1
        elseif c == lease then -- repeating, not touched since: re-arm
            local rep = has_r and bk_one(sh, 'HGET', 'r', id)
            if rep then
                local period, fired = string.match(rep, '^(%d+):(%d+)$')
                period, fired = tonumber(period), tonumber(fired) + 1
                time_now()
                local deadline = tonumber(deadlines[j])
                local next = deadline + period
                if next <= now then
                    next = deadline + period * (math.floor((now - deadline) / period) + 1)
                end
                bk_write(sh, 'ZADD', 'z', { string.format('%d', next), id })
                bk_one(sh, 'HSET', 'r', id, string.format('%d:%d', period, fired))
            else -- (no repeat record: not written by lapse) settle it as a one-shot
                bk_one(sh, 'ZREM', 'z', id)
                gone[#gone + 1] = id
            end
            settled = settled + 1
        end
    end
end

local i = 2
while i <= #ARGV do
    local lease, n = ARGV[i], tonumber(ARGV[i + 1])
    local last = i + 1 + math.max(n, 0)
    if n < 0 and not has_p and not has_r and not has_o then
        -- the usual case: the record is the claim
        if redis.call('HDEL', f, lease) == 1 then settled = settled - n end
    else
        local rec = redis.call('HGET', f, lease)
        if rec then
            local list, pl = inflight_pairs(rec, lease)
            local ids, deadlines = {}, {}
            if n < 0 then
                for k = 1, #list, 2 do
                    ids[#ids + 1] = list[k]
                    deadlines[#deadlines + 1] = list[k + 1]
                end
                done[#done + 1] = lease
            else
                local acked, keep, kept = {}, {}, {}
                for k = i + 2, last do acked[ARGV[k]] = true end
                for k = 1, #list, 2 do
                    local id = list[k]
                    if acked[id] then
                        acked[id] = nil -- (an ID twice in the group counts once)
                        ids[#ids + 1] = id
                        deadlines[#deadlines + 1] = list[k + 1]
                    else
                        keep[#keep + 1] = id
                        keep[#keep + 1] = list[k + 1]
                        if pl and pl[id] then
                            kept[#kept + 1] = id
                            kept[#kept + 1] = pl[id]
                        end
                    end
                end
                if #keep == 0 then
                    done[#done + 1] = lease
                elseif #ids > 0 then
                    redis.call('HSET', f, lease, inflight_encode_out(keep, kept))
                end
            end
            settle(lease, ids, deadlines)
        end
    end
    i = last + 1
end
if has_p then bk_write(sh, 'HDEL', 'p', gone) end
chunks_write('HDEL', f, done)
if has_o then
    watch_write(sh, wfinal)
    watch_queue(sh, wback, string.format('%d', time_now()))
    watch_count(sh, wdelta)
end
return settled
