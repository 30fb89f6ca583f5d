-- drop: remove stale old-shard twins (split), each only if its score is
-- still the lease the caller holds on it (take.lua or claim.lua).
--
-- KEYS: the old shard's keys (see apply.lua)
-- ARGV: pairs of id, lease
-- Returns the number removed.
local z, p, f, r = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local removed = 0
for i = 1, #ARGV, 2 do
    local id = ARGV[i]
    local cur = redis.call('ZSCORE', z, id)
    if cur and tonumber(cur) == tonumber(ARGV[i + 1]) then
        redis.call('ZREM', z, id)
        redis.call('HDEL', p, id)
        redis.call('HDEL', f, id)
        redis.call('HDEL', r, id)
        removed = removed + 1
    end
end
return removed
