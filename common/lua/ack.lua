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

-- One ZMSCORE for all, then variadic ZREM/HDEL in chunks (Lua's unpack has
-- a limit); repeats, which re-arm, are rare and done one by one.
local ids = {}
for i = 2, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
local score = {}
for k = 1, #ids, 1000 do
    local part = redis.call('ZMSCORE', z, unpack(ids, k, math.min(k + 999, #ids)))
    for j = 1, #part do score[ids[k + j - 1]] = part[j] and tonumber(part[j]) or false end
end
local has_r = redis.call('EXISTS', r) == 1
local zrem, pdel, fdel = {}, {}, {}

for i = 2, #ARGV, 2 do
    local id = ARGV[i]
    local cur = score[id]
    if cur and cur == tonumber(ARGV[i + 1]) then
        local rep = has_r and redis.call('HGET', r, id)
        if rep then
            local period, fired = string.match(rep, '^(%d+):(%d+)$')
            period, fired = tonumber(period), tonumber(fired) + 1
            local deadline = tonumber(redis.call('HGET', f, id)) or math.floor(cur)
            local next = deadline + period
            if next <= now then
                next = deadline + period * (math.floor((now - deadline) / period) + 1)
            end
            redis.call('ZADD', z, string.format('%d', next), id)
            redis.call('HSET', r, id, string.format('%d:%d', period, fired))
            score[id] = next
        else
            zrem[#zrem + 1] = id
            pdel[#pdel + 1] = id
            score[id] = false
        end
        fdel[#fdel + 1] = id
        settled = settled + 1
    elseif not cur or cur % 1 == 0 then
        fdel[#fdel + 1] = id
    end
end
for k = 1, #zrem, 1000 do
    local last = math.min(k + 999, #zrem)
    redis.call('ZREM', z, unpack(zrem, k, last))
    redis.call('HDEL', p, unpack(pdel, k, last))
end
for k = 1, #fdel, 1000 do redis.call('HDEL', f, unpack(fdel, k, math.min(k + 999, #fdel))) end
return settled
