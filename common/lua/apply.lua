-- apply: a producer's batch of operations on one shard, in one call.
--
-- KEYS: the shard's keys (layout.h): [1] z zset ID -> deadline ms (integer)
--   or lease (half-integer, in flight), [2] p payloads, [3] f deadlines of
--   in-flight IDs, [4] r "period_ms:fired" of repeating IDs, [5] m IDs written
--   here during a split, [6] lock, [7] e the shard's layout epoch
-- ARGV[1] the producer's layout epoch, then groups of 8:
--   op, id, when, period, has_payload ("1"/"0"), payload, moving, inherit
--   op:     "t" touch, "e" extend, "r" repeat, "c" cancel
--   when:   "+<ms>" relative to this shard's Redis clock, "@<ms>" absolute,
--           "" for cancel
--   period: repeat's period in ms, "" otherwise
--   moving: "" normally; during a split, for an ID whose home is this new
--           shard: "m", or "m<D>" when its twin in the old shard is in flight
--           with deadline D (an extend must then beat D too)
--   inherit: with "m<D>": "1" + the busy twin's payload, kept by an op that
--           brings none (as it would be in one shard); "" otherwise
-- Returns the number of operations that changed something, or the error
-- "STALE <epoch>" (nothing applied) when the producer's layout is older than
-- the shard's: it must reload the layout and route again.
--
-- Invariants: producers only ever write integer scores, so a half-integer
-- score always means "claimed"; the scanner's acknowledgement removes (or
-- re-arms) an ID only if its score is still that exact lease, so any write
-- here while the ID is in flight (a reset) wins. A moving ID that changed
-- here is added to m: from then on its twin in the old shard is stale and is
-- never fired (see common/split.c). Scores are passed to Redis as exact
-- decimal strings: Lua's own number formatting keeps only 14 digits.
local z, p, f, r, m, e = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[7]
local epoch = tonumber(redis.call('GET', e) or 0)
if tonumber(ARGV[1]) < epoch then return redis.error_reply('STALE ' .. epoch) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local changed = 0

-- The fast path: runs of plain touches and extends are staged and written
-- with one variadic ZADD / HSET / HDEL each (one redis.call per run instead
-- of two or three per op). Anything else (cancel, repeat, IDs moving in a
-- split) first writes what is staged, so per-ID order is kept. The repeat
-- hash is only touched when it exists.
local zargs, pargs, rdel, staged = {}, {}, {}, {}
local has_r = redis.call('EXISTS', r) == 1
local function flush()
    if #zargs > 0 then redis.call('ZADD', z, unpack(zargs)) end
    if #pargs > 0 then redis.call('HSET', p, unpack(pargs)) end
    if #rdel > 0 then redis.call('HDEL', r, unpack(rdel)) end
    zargs, pargs, rdel, staged = {}, {}, {}, {}
end

-- The scores of the fast path's extends, read with one ZMSCORE; an ID the
-- slow path writes is dropped from it (read again when needed).
local pre, ids = {}, {}
for i = 2, #ARGV, 8 do
    if ARGV[i] == 'e' and ARGV[i + 6] == '' then ids[#ids + 1] = ARGV[i + 1] end
end
if #ids > 0 then
    local scores = redis.call('ZMSCORE', z, unpack(ids))
    for k = 1, #ids do pre[ids[k]] = scores[k] end
end

-- The pending deadline of an ID (for extend): what is staged, else the
-- zset's; for an ID in flight the deadline being dispatched, not the lease.
local function pending(id)
    local cur = staged[id]
    if cur then return cur end
    cur = pre[id]
    if cur == nil then cur = redis.call('ZSCORE', z, id) end
    if not cur then return nil end
    cur = tonumber(cur)
    if cur % 1 ~= 0 then cur = tonumber(redis.call('HGET', f, id)) or cur end
    return cur
end

for i = 2, #ARGV, 8 do
    local op, id, when, moving = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 6]
    local set = true
    local at
    if op ~= 'c' then
        at = tonumber(string.sub(when, 2))
        if string.sub(when, 1, 1) == '+' then at = now + at end
    end
    if (op == 't' or op == 'e') and moving == '' then
        if op == 'e' then
            local cur = pending(id)
            set = not cur or at > cur
        end
        if set then
            zargs[#zargs + 1] = string.format('%d', at)
            zargs[#zargs + 1] = id
            staged[id] = at
            if ARGV[i + 4] == '1' then
                pargs[#pargs + 1] = id
                pargs[#pargs + 1] = ARGV[i + 5]
            end
            if has_r then rdel[#rdel + 1] = id end -- one-shot again
        end
    else
        flush()
        pre[id] = nil
        if op == 'c' then
            redis.call('ZREM', z, id)
            redis.call('HDEL', p, id)
            redis.call('HDEL', f, id)
            redis.call('HDEL', r, id)
        else
            if op == 'e' then
                local cur = pending(id)
                set = not cur or at > cur
                if #moving > 1 and at <= tonumber(string.sub(moving, 2)) then set = false end
            end
            if set then
                redis.call('ZADD', z, string.format('%d', at), id)
                if ARGV[i + 4] == '1' then
                    redis.call('HSET', p, id, ARGV[i + 5])
                elseif #ARGV[i + 7] > 0 then
                    redis.call('HSETNX', p, id, string.sub(ARGV[i + 7], 2))
                end
                if op == 'r' then
                    redis.call('HSET', r, id, ARGV[i + 3] .. ':0')
                    has_r = true
                else
                    redis.call('HDEL', r, id) -- touch/extend: one-shot again
                end
            end
        end
        if set and moving ~= '' then redis.call('SADD', m, id) end
    end
    if set then changed = changed + 1 end
end
flush()
return changed
