-- seed: copy taken twins into their new shard (split), before the
-- producer's operations on them apply.
--
-- KEYS: the new shard's keys (see apply.lua)
-- ARGV[1] the producer's layout epoch, then groups of 5:
--   id, deadline, has_payload ("1"/"0"), payload, repeat record ("" if none)
-- Returns the number seeded, or the error "STALE <epoch>".
--
-- A twin is copied only if the ID has no life here yet (not pending, not in
-- m): otherwise what is here already accounts for it. Seeding adds the ID to
-- m, which makes the old twin stale for good.
local z, p, r, m, e = KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[7]
local epoch = tonumber(redis.call('GET', e) or 0)
if tonumber(ARGV[1]) < epoch then return redis.error_reply('STALE ' .. epoch) end
local seeded = 0
for i = 2, #ARGV, 5 do
    local id = ARGV[i]
    if not redis.call('ZSCORE', z, id) and redis.call('SISMEMBER', m, id) == 0 then
        redis.call('ZADD', z, ARGV[i + 1], id)
        if ARGV[i + 2] == '1' then redis.call('HSET', p, id, ARGV[i + 3]) end
        if ARGV[i + 4] ~= '' then redis.call('HSET', r, id, ARGV[i + 4]) end
        redis.call('SADD', m, id)
        seeded = seeded + 1
    end
end
return seeded
