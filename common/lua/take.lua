-- take: during a split, reserve the old-shard twins of IDs a producer is
-- about to write in their new shard.
--
-- KEYS: the old shard's keys (see apply.lua)
-- ARGV[1] the producer's layout epoch, ARGV[2] lease ms, then IDs
-- Returns { lease, state1, deadline1, payload1, repeat1, state2, ... } or the
-- error "STALE <epoch>":
--   state "a": no twin; "t": taken (pending, now leased to this producer
--   until it copied it to the new shard and dropped it: drop.lua with lease);
--   "b": busy (in flight, or taken by another producer): deadline is the one
--   being dispatched; its payload is returned (an op without one keeps it),
--   its repeat record is not (any write in the new shard ends the repeat).
--
-- A taken twin is leased exactly like a claimed ID (score lease + 0.5, its
-- deadline in f), so if the producer dies before copying it, the lease runs
-- out and the old shard's scanner fires it (or drops it if the copy was
-- made): nothing is lost, nothing fires twice.
local z, p, f, r, e = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[7]
local epoch = tonumber(redis.call('GET', e) or 0)
if tonumber(ARGV[1]) < epoch then return redis.error_reply('STALE ' .. epoch) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = string.format('%d.5', now + tonumber(ARGV[2]))
local out = { lease }
for i = 3, #ARGV do
    local id = ARGV[i]
    local cur = redis.call('ZSCORE', z, id)
    if not cur then
        out[#out + 1] = 'a'; out[#out + 1] = 0; out[#out + 1] = false; out[#out + 1] = false
    elseif tonumber(cur) % 1 ~= 0 then
        out[#out + 1] = 'b'
        out[#out + 1] = tonumber(redis.call('HGET', f, id)) or math.floor(tonumber(cur))
        out[#out + 1] = redis.call('HGET', p, id); out[#out + 1] = false
    else
        redis.call('ZADD', z, lease, id)
        redis.call('HSET', f, id, cur)
        out[#out + 1] = 't'; out[#out + 1] = tonumber(cur)
        out[#out + 1] = redis.call('HGET', p, id)
        out[#out + 1] = redis.call('HGET', r, id)
    end
end
return out
