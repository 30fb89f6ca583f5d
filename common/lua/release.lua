-- release: give up the shard's lock if it is still ours (clean shutdown), so
-- a standby takes over at once instead of after the lease.
--
-- KEYS[1..4] the shard's keys (unused), KEYS[5] its lock; ARGV[1] our token
-- Returns 1 if released, 0 if it was not ours (any more).
if redis.call('GET', KEYS[5]) == ARGV[1] then
    redis.call('DEL', KEYS[5])
    return 1
end
return 0
