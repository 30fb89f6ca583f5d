-- apply: a producer's batch of operations on one shard, in one call.
--
-- KEYS[1] zset   ID -> deadline ms (integer) or lease (half-integer, in flight)
-- KEYS[2] hash   ID -> payload
-- KEYS[3] hash   ID -> deadline of an in-flight ID (set by claim)
-- KEYS[4] hash   ID -> "period_ms:fired" of a repeating ID
-- ARGV: groups of 6: op, id, when, period, has_payload ("1"/"0"), payload
--   op:     "t" touch, "e" extend, "r" repeat, "c" cancel
--   when:   "+<ms>" relative to this shard's Redis clock, "@<ms>" absolute,
--           "" for cancel
--   period: repeat's period in ms, "" otherwise
-- Returns the number of operations that changed a deadline.
--
-- Invariants: producers only ever write integer scores, so a half-integer
-- score always means "claimed by a scanner"; the scanner's acknowledgement
-- removes (or re-arms) an ID only if its score is still that exact lease, so
-- any write here while the ID is in flight (a reset) wins. Scores are passed
-- to Redis as exact decimal strings: Lua's own number formatting keeps only
-- 14 digits.
local z, p, f, r = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local changed = 0

for i = 1, #ARGV, 6 do
    local op, id, when = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if op == 'c' then
        redis.call('ZREM', z, id)
        redis.call('HDEL', p, id)
        redis.call('HDEL', f, id)
        redis.call('HDEL', r, id)
        changed = changed + 1
    else
        local at = tonumber(string.sub(when, 2))
        if string.sub(when, 1, 1) == '+' then at = now + at end
        local set = true
        if op == 'e' then
            -- extend compares with the pending deadline; for an ID in flight
            -- that is the deadline being dispatched, not the lease.
            local cur = redis.call('ZSCORE', z, id)
            if cur then
                cur = tonumber(cur)
                if cur % 1 ~= 0 then cur = tonumber(redis.call('HGET', f, id)) or cur end
                set = at > cur
            end
        end
        if set then
            redis.call('ZADD', z, string.format('%d', at), id)
            if ARGV[i + 4] == '1' then redis.call('HSET', p, id, ARGV[i + 5]) end
            if op == 'r' then
                redis.call('HSET', r, id, ARGV[i + 3] .. ':0')
            else
                redis.call('HDEL', r, id) -- touch/extend: one-shot again
            end
            changed = changed + 1
        end
    end
end
return changed
