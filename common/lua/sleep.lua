-- sleep: an idle scanner's lock renewal, and the mark that lets it sleep
-- until its shard's next deadline instead of polling (scanner/wake.c).
--
-- KEYS: [1] z, [2] the lock, [3] s the mark (lib/wake.lua), [4] e the
--   shard's layout epoch, [5] c the last claim's lease record (claim.lua),
--   [6] f the claims' records (lib/inflight.lua)
-- ARGV[1] token, ARGV[2] the lock's life in ms, ARGV[3] the mark the
-- scanner knows, or "" to be told the Redis time in any case, ARGV[4] the
-- scanner's layout epoch
-- Returns the error "FENCED lock not held" when the lock is not ours; the
-- error "STALE <epoch>" when the layout changed (a split: the scanner
-- claims, and claim.lua tells it more); { 0 } when the mark is still
-- ARGV[3]; else { now_ms, mark }:
-- mark the shard's lowest score ("inf" when the shard is empty), or when a
-- claim record runs out if that is earlier, as it now stands in s.
--
-- The mark is set by the call that reads the zset, so a write after this
-- call is measured against it (lib/wake.lua): none is missed between the
-- read and the nap. Every call reads the zset, so a write that rang
-- nothing (the mark lost with a failover, a write by other means than
-- lapse's scripts) is seen at the next renewal at the latest. While nothing
-- changes the call writes only the lock's PEXPIRE: an idle shard's one
-- write per renewal.
-- #include bucket
local z, lock, s, e, c, f = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
-- (k, the shard's form, read with the rest: lib/bucket.lua; a migrating
-- Cluster slot refuses it, and the call ends whole as TRYAGAIN)
local at = 1
while string.byte(z, at) == string.byte(s, at) do at = at + 1 end
local k = string.sub(z, 1, at - 1) .. 'k' .. string.sub(z, at + 1)
local cur = redis.pcall('MGET', lock, s, e, c, k)
if cur.err then return redis.error_reply('TRYAGAIN shard keys moving (' .. cur.err .. ')') end
if cur[1] ~= ARGV[1] then return redis.error_reply('FENCED lock not held') end
if tonumber(cur[3] or 0) > tonumber(ARGV[4]) then return redis.error_reply('STALE ' .. cur[3]) end
-- (p and r named from z: a split bucket moves them; opened before the
-- first write: lib/bucket.lua)
local sh = bk_open(z, s, nil, cur[5])
redis.call('PEXPIRE', lock, ARGV[2])
-- A shard in small keys that has outgrown its buckets splits some here
-- (lib/bucket.lua), a converting one moves a chunk of its old keys into
-- buckets, and while more is to do the scanner does not nap: the claims
-- that follow go on (claim.lua). Only a filling or converting shard writes.
-- The fullness is checked when the mark is gone (a write rang: one that
-- fills the next bucket to split rings too, lib/bucket.lua) or the scanner
-- asks afresh, so that an idle shard's nap costs no look at its buckets.
local look = not cur[2] or cur[2] == '0' or ARGV[3] == ''
local growing = bk_drain(sh, 256) > 0 or (look and bk_grow(sh, 16) > 0 and bk_full(sh))
local mark = bk_min(sh) or 'inf'
-- Claims that keep their IDs out of the zset while in flight record when
-- the earliest of those records runs out as the second number of c
-- ("<lease ms> <ms>"); its IDs come back only through a claim then, so
-- that is a time to look too. (A c of one number holds no such time.) c
-- is written by claims only: once the acks deleted every record (f is
-- gone), its time is stale and no reason to look.
local out_at = string.match(cur[4] or '', '^%d+ (%d+)$')
if out_at and redis.call('EXISTS', f) == 0 then out_at = nil end
if out_at and (mark == 'inf' or tonumber(out_at) < tonumber(mark)) then mark = out_at end
if growing then mark = '0' end
if cur[2] ~= mark then redis.call('SET', s, mark) end
if mark == ARGV[3] and not growing then return { 0 } end
local t = redis.call('TIME')
return { tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), mark }
