-- seed: copy taken twins into their new shard (split), before the
-- producer's operations on them apply.
--
-- KEYS: the new shard's keys (see apply.lua)
-- ARGV[1] the producer's layout epoch, then groups of 5:
--   id, deadline, has_payload ("1"/"0"), payload, repeat record ("" if none)
-- Returns the number seeded, or the error "STALE <epoch>".
--
-- A twin is copied by lib/twins.lua's rule: only if the ID has no life here
-- yet (not pending, not in m); seeding adds the ID to m, which makes the old
-- twin stale for good.
-- #include twins
-- #include wake
local z, p, r, m, e = KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[7]
local sh = bk_open(z, p, r)
local epoch = tonumber(redis.call('GET', e) or 0)
if tonumber(ARGV[1]) < epoch then return redis.error_reply('STALE ' .. epoch) end
-- An ID given twice is seeded once, as by two calls.
local ids, deadlines, payloads, repeats = {}, {}, {}, {}
for i = 2, #ARGV, 5 do
    local j = #ids + 1
    ids[j], deadlines[j] = ARGV[i], ARGV[i + 1]
    payloads[j] = ARGV[i + 2] == '1' and ARGV[i + 3]
    repeats[j] = ARGV[i + 4] ~= '' and ARGV[i + 4]
end
local seeded = twins_copy(sh, ids, deadlines, payloads, repeats)
wake_ring(sh) -- a sleeping scanner is woken when a twin lands before its next look
return seeded
