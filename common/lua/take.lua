-- take: during a split, reserve the old-shard twins of IDs a producer is
-- about to write in their new shard.
--
-- KEYS: the old shard's keys (see apply.lua)
-- ARGV[1] the producer's layout epoch, ARGV[2] lease ms, then IDs
-- Returns { lease, state1, deadline1, payload1, repeat1, watch1, state2, ... }
-- or the error "STALE <epoch>" (watch: the ID's watch record, lib/watch.lua,
-- or false; whatever the state: the producer carries it to the new shard,
-- apply.lua's flag O, and drop.lua deletes it here after):
--   state "a": no twin; "t": taken (pending, now leased to this producer
--   until it copied it to the new shard and dropped it: drop.lua with lease);
--   "b": busy (in flight, or taken by another producer): deadline is the one
--   being dispatched (0 for a one-shot ID a scanner's claim took out of the
--   zset: nothing is pending); its payload is returned (an op without one
--   keeps it), its repeat record is not (any write in the new shard ends the
--   repeat).
--
-- A taken twin is leased like a claimed ID (the call's taken twins and their
-- deadlines are one record in f, lib/inflight.lua), so if the
-- producer dies before copying it, the lease runs out and the old shard's
-- scanner fires it (or drops it if the copy was made): nothing is lost,
-- nothing fires twice. Its score is lease + 0.75, not + 0.5 as a claim's:
-- a claim's lease score then holds that claim's IDs only (ack.lua settles a
-- whole claim by its lease's range).
-- #include chunks
-- #include inflight
-- #include wake
-- #include watch
local z, p, f, r, e = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[7]
local sh = bk_open(z, p, r)
local epoch = tonumber(redis.call('GET', e) or 0)
if tonumber(ARGV[1]) < epoch then return redis.error_reply('STALE ' .. epoch) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = string.format('%d.75', now + tonumber(ARGV[2]))
local out = { lease }
local n = #ARGV - 2
if n == 0 then return out end
-- Read everything first, with one call per command (lib/chunks.lua), then
-- write the taken twins with one variadic ZADD and their record: the first
-- write of a moving ID is the expensive one of a split, and this keeps its
-- cost near a claim's.
local scores = bk_read(sh, 'ZMSCORE', 'z', ARGV, 3)
local has_p, has_r = bk_has(sh, 'p'), bk_has(sh, 'r')
local payloads = has_p and bk_read(sh, 'HMGET', 'p', ARGV, 3) or {}
local repeats = has_r and bk_read(sh, 'HMGET', 'r', ARGV, 3) or {}
local watches = bk_has(sh, 'o') and bk_read(sh, 'HMGET', 'o', ARGV, 3) or {}
local zargs, fargs, taken = {}, {}, {}
for i = 1, n do
    local id, cur = ARGV[i + 2], scores[i]
    local o = #out
    if taken[id] then
        -- the same ID again in this call: taken just above, so now busy
        -- with the deadline it was taken with (as a second call would see)
        out[o + 1] = 'b'; out[o + 2] = taken[id]; out[o + 3] = payloads[i] or false; out[o + 4] = false
    elseif not cur and payloads[i] then
        -- out of the zset with a payload stored: a scanner's claim has it
        -- (claim.lua; the ack deletes the payload of an ID not written
        -- since), so nothing is pending, but an op without a payload keeps
        -- this one, as it would in one shard
        out[o + 1] = 'b'; out[o + 2] = 0; out[o + 3] = payloads[i]; out[o + 4] = false
    elseif not cur then
        out[o + 1] = 'a'; out[o + 2] = 0; out[o + 3] = false; out[o + 4] = false
    elseif tonumber(cur) % 1 ~= 0 then
        out[o + 1] = 'b'
        out[o + 2] = inflight_dispatched(f, cur, id)
        out[o + 3] = payloads[i] or false; out[o + 4] = false
    else
        taken[id] = tonumber(cur)
        zargs[#zargs + 1] = lease; zargs[#zargs + 1] = id
        fargs[#fargs + 1] = id; fargs[#fargs + 1] = cur
        out[o + 1] = 't'; out[o + 2] = tonumber(cur)
        out[o + 3] = payloads[i] or false; out[o + 4] = repeats[i] or false
    end
    out[o + 5] = not watch_is_busy(watches[i]) and watches[i] or false
end
bk_write(sh, 'ZADD', 'z', zargs)
if #fargs > 0 then
    inflight_add(f, lease, fargs)
    wake_ring(sh) -- the lease may run out before the scanner's next look
end
return out
