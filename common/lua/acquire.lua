-- acquire: become the one active scanner of a shard.
--
-- KEYS: the shard's keys (see apply.lua); [6] is its lock
-- ARGV[1] this scanner's token, ARGV[2] lease ms
-- Returns { 1, recovered } when the lock was free and is now ours, or
-- { 0, holder } with the current holder's token.
--
-- The lock is a plain key with a PX expiry; claim.lua renews it, and every
-- claim and ack checks it (fencing), so a scanner that lost it (paused past
-- the lease, cut off) can no longer change the shard. Whoever acquires it
-- knows every other scanner of the shard is fenced, so IDs still leased by
-- the previous holder get their deadline back at once (due now) instead of
-- waiting for their leases to run out: takeover redelivers immediately.
local z, f, lock = KEYS[1], KEYS[3], KEYS[6]
if not redis.call('SET', lock, ARGV[1], 'NX', 'PX', math.floor(tonumber(ARGV[2]) * 0.9)) then
    return { 0, redis.call('GET', lock) or '' }
end
local recovered = 0
local inflight = redis.call('HGETALL', f)
for i = 1, #inflight, 2 do
    local id, deadline = inflight[i], inflight[i + 1]
    local cur = redis.call('ZSCORE', z, id)
    if cur and tonumber(cur) % 1 ~= 0 then
        redis.call('ZADD', z, deadline, id)
        recovered = recovered + 1
    end
    redis.call('HDEL', f, id)
end
return { 1, recovered }
