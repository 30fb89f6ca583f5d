-- health: one shard's counters as lapse-scale status and check read them
-- (tools/scale/health.c). It only reads (TIME, GET, ZRANGE, ZRANGEBYSCORE,
-- ZCARD, ZCOUNT, ZMSCORE, HKEYS, HGET), so it may run against a busy
-- primary at any time without changing what the scanners see.
--
-- KEYS: [1] z, [2] f the claims' records (lib/inflight.lua), [3] the lock
-- ARGV: [1] the listpack limit (below), [2] "0": no MEMORY USAGE of the
-- largest key (-1 for its bytes: it walks a large key whole, O(n), which a
-- reader that comes back every second must not make Redis do)
-- Returns { pending, due, in flight, the oldest due score or -1, now, the
-- lock's holder or "", the earliest deadline being dispatched or -1, keys,
-- the largest key's IDs and bytes, keys over the listpack limit, IDs
-- offline (lib/watch.lua) }.
--
-- In flight: the IDs of a claim's record in f (field = lease "<ms>.25",
-- value cmsgpack of groups { deadline, { id, ... }, ... } and pairs { id,
-- deadline, ... }) that were not written since (not in the zset, or a
-- repeating one still on the lease), and the IDs holding an older kind of
-- lease (".5", ".75": the score) that has a record ("id deadline ..." or a
-- space and cmsgpack). The earliest deadline being dispatched counts only
-- those: a reset one left the record but is no longer in flight. A field
-- that is not a lease (an entry of lapse before records) is skipped, as
-- claim.lua does.
--
-- A shard in small keys (lib/bucket.lua) is read bucket by bucket: pending
-- sums every bucket; due IDs can only be in the buckets whose index entry
-- is due (the entry is a lower bound of the bucket's lowest score), whose
-- true scores are then read; an ID's score is read in its own bucket.
-- #include bucket
local z, f = KEYS[1], KEYS[2]
-- (f tells bk_open where the kind letter is; this script needs no p or r)
local sh = bk_open(z, f)
sh.readonly = true -- (a converting shard's old keys are read, not moved)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- The zsets that may hold a score up to max: the shard's one key, or the
-- buckets whose index entry is at most max.
local function zsets(max)
    if sh.one then return { sh.z } end
    local keys = sh.old and { sh.z } or {}
    for _, j in ipairs(bk_due(sh, max, math.huge)) do
        keys[#keys + 1] = sh.z .. ':' .. j
    end
    return keys
end

-- The shard's keys: how many zsets (1, or its buckets), the largest (its
-- members, and its bytes where MEMORY USAGE is allowed, else -1), and how
-- many hold more members than ARGV[1] (Redis's zset-max-listpack-entries:
-- they are in the large encoding).
local limit = tonumber(ARGV[1]) or 128
local pending, due, oldest = 0, 0, -1
local nkeys, largest, largest_key, over = 0, 0, nil, 0
local function count(key)
    local c = redis.call('ZCARD', key)
    pending = pending + c
    if c > 0 then nkeys = nkeys + 1 end
    if c > largest then largest, largest_key = c, key end
    if c > limit then over = over + 1 end
end
if sh.one then
    count(z)
else
    for j = 0, sh.n + sh.s - 1 do count(z .. ':' .. j) end
    if sh.old then count(z) end
end
local largest_bytes = -1
if largest_key and ARGV[2] ~= '0' then
    local m = redis.pcall('MEMORY', 'USAGE', largest_key, 'SAMPLES', 0)
    if type(m) == 'number' then largest_bytes = m end
end
for _, key in ipairs(zsets(now)) do
    due = due + redis.call('ZCOUNT', key, '-inf', now)
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]
    if first and tonumber(first) <= now then
        local s = math.floor(tonumber(first))
        if oldest < 0 or s < oldest then oldest = s end
    end
end

local inflight, earliest = 0, -1
for _, l in ipairs(redis.call('HKEYS', f)) do
    if string.sub(l, -3) == '.25' and tonumber(l) then
        local groups, flat = cmsgpack.unpack(redis.call('HGET', f, l))
        local list, ids = {}, {}
        for g = 1, #groups, 2 do
            for _, id in ipairs(groups[g + 1]) do list[#list + 1] = id; list[#list + 1] = groups[g] end
        end
        for i = 1, #flat do list[#list + 1] = flat[i] end
        for i = 1, #list, 2 do ids[#ids + 1] = list[i] end
        local cur = bk_read(sh, 'ZMSCORE', 'z', ids)
        for j = 1, #ids do
            if not cur[j] or cur[j] == l then
                inflight = inflight + 1
                local d = tonumber(list[2 * j])
                if d and (earliest < 0 or d < earliest) then earliest = d end
            end
        end
    elseif string.find(l, '.', 1, true) and tonumber(l) then
        local held = {}
        for _, key in ipairs(zsets(l)) do
            for _, id in ipairs(redis.call('ZRANGEBYSCORE', key, l, l)) do held[#held + 1] = id end
        end
        inflight = inflight + #held
        if #held > 0 then
            local set = {}
            for i = 1, #held do set[held[i]] = true end
            local rec, list = redis.call('HGET', f, l), {}
            if rec and string.sub(rec, 1, 1) == ' ' then list = cmsgpack.unpack(string.sub(rec, 2))
            elseif rec then
                for id, d in string.gmatch(rec, '([^ ]+) ([^ ]+)') do
                    list[#list + 1] = id; list[#list + 1] = d
                end
            end
            for i = 1, #list, 2 do
                local d = tonumber(list[i + 1])
                if set[list[i]] and d and (earliest < 0 or d < earliest) then earliest = d end
            end
        end
    end
end
return { pending, due, inflight, oldest, now, redis.call('GET', KEYS[3]) or '', earliest,
         nkeys, largest, largest_bytes, over, tonumber(redis.call('GET', bk_key(sh, 'n')) or 0) }
