-- claim: take up to ARGV[1] due IDs of one shard for dispatch.
--
-- KEYS[1] zset, KEYS[2] payloads, KEYS[3] in-flight deadlines,
-- KEYS[4] repeats (see apply.lua)
-- ARGV[1] batch size, ARGV[2] lease ms
-- Returns { now_ms, lease, next_ms, id1, deadline1, payload1, seq1, id2, ... }
--   lease:    the score every claimed ID now carries (string, half-integer)
--   next_ms:  the lowest score left in the zset after the claim, or -1
--   payloadN: the stored payload, or false when none
--   seqN:     for a repeating ID the number of this fire (1, 2, ...), else 0
--
-- Due means score <= now on this Redis server's clock: never early. A claimed
-- ID stays in the zset with score now + lease + 0.5, so if its scanner dies
-- before acknowledging, the ID falls due again when the lease runs out and is
-- claimed anew with the same deadline and seq (at-least-once); its deadline
-- is kept in KEYS[3] meanwhile.
local z, p, f, r = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = string.format('%d.5', now + tonumber(ARGV[2]))
local due = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))
local out = { now, lease, -1 }

for i = 1, #due, 2 do
    local id, score = due[i], tonumber(due[i + 1])
    local deadline = score
    if score % 1 ~= 0 then
        -- an expired lease: its scanner never acknowledged; fire again with
        -- the deadline that fell due
        deadline = tonumber(redis.call('HGET', f, id)) or math.floor(score)
    end
    redis.call('ZADD', z, lease, id)
    redis.call('HSET', f, id, string.format('%d', deadline))
    local seq = 0
    local rep = redis.call('HGET', r, id)
    if rep then seq = tonumber(string.match(rep, ':(%d+)$')) + 1 end
    out[#out + 1] = id
    out[#out + 1] = deadline
    out[#out + 1] = redis.call('HGET', p, id)
    out[#out + 1] = seq
end

local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
if first[2] then out[3] = math.floor(tonumber(first[2])) end
return out
