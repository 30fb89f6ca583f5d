-- release: give up the shard's lock if it is still ours (clean shutdown), so
-- a standby takes over at once instead of after the lease.
--
-- KEYS: the shard's keys (see apply.lua); [6] is its lock. ARGV[1] our token
-- Returns 1 if released, 0 if it was not ours (any more).
if redis.call('GET', KEYS[6]) == ARGV[1] then
    redis.call('DEL', KEYS[6])
    return 1
end
return 0
