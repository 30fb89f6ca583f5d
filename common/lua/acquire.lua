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
-- knows every other scanner of the shard is fenced, so IDs still in flight
-- under the previous holder get their deadline back at once (due now)
-- instead of waiting for their leases to run out: takeover redelivers
-- immediately. Every record in f (lib/inflight.lua) is read: a claim's
-- (".25") IDs not reset or claimed since go back into the zset
-- (inflight_back: a reset that landed meanwhile wins); the IDs still
-- holding an older kind of lease (".5", a claim of lapse before
-- 2026-11-26: a scanner upgraded while IDs were in flight; ".75", a
-- producer's take) get their deadline back. (It also reads f as lapse
-- wrote it before records, an entry per ID.)
-- #include inflight
local z, p, f, lock = KEYS[1], KEYS[2], KEYS[3], KEYS[6]
local sh = bk_open(z, p, KEYS[4]) -- (before the first write: lib/bucket.lua)
if not redis.call('SET', lock, ARGV[1], 'NX', 'PX', math.floor(tonumber(ARGV[2]) * 0.9)) then
    return { 0, redis.call('GET', lock) or '' }
end
local recovered = 0
local records = redis.call('HGETALL', f)
for i = 1, #records, 2 do
    local lease, list = records[i], nil
    if inflight_out(lease) then
        local back = inflight_back(sh, f, lease, records[i + 1])
        local zargs = {}
        for j = 1, #back, 2 do
            zargs[#zargs + 1] = back[j + 1]
            zargs[#zargs + 1] = back[j]
        end
        bk_write(sh, 'ZADD', 'z', zargs)
        recovered = recovered + #back / 2
    else
        if string.find(records[i + 1], ' ', 1, true) then -- (a record holds at least one)
            list = inflight_pairs(records[i + 1], lease)
        else -- an entry of lapse before records (ID -> deadline): any lease will do
            list, lease = { lease, records[i + 1] }, nil
        end
        local lease_n = lease and tonumber(lease)
        for j = 1, #list, 2 do
            local id = list[j]
            local cur = bk_one(sh, 'ZSCORE', 'z', id)
            if cur and (cur == lease or tonumber(cur) == lease_n
                        or (not lease and string.find(cur, '.', 1, true))) then
                bk_write(sh, 'ZADD', 'z', { list[j + 1], id })
                recovered = recovered + 1
            end
        end
    end
end
redis.call('DEL', f)
return { 1, recovered }
