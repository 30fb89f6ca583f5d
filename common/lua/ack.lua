-- ack: settle IDs whose events Kafka acknowledged.
--
-- KEYS: the shard's keys (see apply.lua); [6] is its lock (acquire.lua)
-- ARGV[1] token, then pairs of id, lease (the exact score claim gave it)
-- Returns the number of IDs settled, or -1 when the lock is not ours (fenced:
-- nothing changed; the new holder redelivers those IDs).
--
-- Compare-and-settle: an ID is touched only if its score is still the lease
-- of this claim. A reset (integer score) or a newer claim (another lease)
-- means the ID lives on as it is; a cancelled ID is already gone. A settled
-- one-shot ID is removed with its payload; a repeating one is re-armed at
-- the next point of its period after now (missed points are skipped, not
-- fired in a burst) and its fire count goes up.
local z, p, f, r, lock = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6]
if redis.call('GET', lock) ~= ARGV[1] then return -1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local settled = 0
for i = 2, #ARGV, 2 do
    local id = ARGV[i]
    local cur = redis.call('ZSCORE', z, id)
    if cur and tonumber(cur) == tonumber(ARGV[i + 1]) then
        local rep = redis.call('HGET', r, id)
        if rep then
            local period, fired = string.match(rep, '^(%d+):(%d+)$')
            period, fired = tonumber(period), tonumber(fired) + 1
            local deadline = tonumber(redis.call('HGET', f, id)) or math.floor(tonumber(cur))
            local next = deadline + period
            if next <= now then
                next = deadline + period * (math.floor((now - deadline) / period) + 1)
            end
            redis.call('ZADD', z, string.format('%d', next), id)
            redis.call('HSET', r, id, string.format('%d:%d', period, fired))
        else
            redis.call('ZREM', z, id)
            redis.call('HDEL', p, id)
        end
        redis.call('HDEL', f, id)
        settled = settled + 1
    elseif not cur or tonumber(cur) % 1 == 0 then
        redis.call('HDEL', f, id)
    end
end
return settled
