-- ack: forget IDs whose events Kafka acknowledged.
--
-- KEYS[1] zset, KEYS[2] payloads, KEYS[3] in-flight deadlines (see apply.lua)
-- ARGV: pairs of id, lease (the exact score claim gave it)
-- Returns the number of IDs removed.
--
-- Compare-and-delete: an ID is removed only if its score is still the lease
-- of this claim. A reset (integer score) or a newer claim (another lease)
-- means the ID lives on; a cancelled ID is already gone.
local z, p, f = KEYS[1], KEYS[2], KEYS[3]
local removed = 0
for i = 1, #ARGV, 2 do
    local id = ARGV[i]
    local cur = redis.call('ZSCORE', z, id)
    if cur and tonumber(cur) == tonumber(ARGV[i + 1]) then
        redis.call('ZREM', z, id)
        redis.call('HDEL', p, id)
        redis.call('HDEL', f, id)
        removed = removed + 1
    elseif not cur or tonumber(cur) % 1 == 0 then
        redis.call('HDEL', f, id)
    end
end
return removed
