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

for i = 2, #ARGV, 8 do
    local op, id, when, moving = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 6]
    local set = true
    if op == 'c' then
        redis.call('ZREM', z, id)
        redis.call('HDEL', p, id)
        redis.call('HDEL', f, id)
        redis.call('HDEL', r, id)
    else
        local at = tonumber(string.sub(when, 2))
        if string.sub(when, 1, 1) == '+' then at = now + at end
        if op == 'e' then
            -- extend compares with the pending deadline; for an ID in flight
            -- that is the deadline being dispatched, not the lease.
            local cur = redis.call('ZSCORE', z, id)
            if cur then
                cur = tonumber(cur)
                if cur % 1 ~= 0 then cur = tonumber(redis.call('HGET', f, id)) or cur end
                set = at > cur
            end
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
            else
                redis.call('HDEL', r, id) -- touch/extend: one-shot again
            end
        end
    end
    if set then
        changed = changed + 1
        if moving ~= '' then redis.call('SADD', m, id) end
    end
end
return changed
