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
-- #include chunks
local z, p, r, m, e = KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[7]
local epoch = tonumber(redis.call('GET', e) or 0)
if tonumber(ARGV[1]) < epoch then return redis.error_reply('STALE ' .. epoch) end
-- One ZMSCORE and one SMISMEMBER, then variadic writes (lib/chunks.lua); an
-- ID given twice is seeded once, as by two calls.
local ids = {}
for i = 2, #ARGV, 5 do ids[#ids + 1] = ARGV[i] end
if #ids == 0 then return 0 end
local here, moved = chunks_read('ZMSCORE', z, ids), chunks_read('SMISMEMBER', m, ids)
local zargs, pargs, rargs, margs, seen = {}, {}, {}, {}, {}
for j = 1, #ids do
    local id, i = ids[j], 5 * j - 3
    if not here[j] and moved[j] == 0 and not seen[id] then
        seen[id] = true
        zargs[#zargs + 1] = ARGV[i + 1]; zargs[#zargs + 1] = id
        if ARGV[i + 2] == '1' then pargs[#pargs + 1] = id; pargs[#pargs + 1] = ARGV[i + 3] end
        if ARGV[i + 4] ~= '' then rargs[#rargs + 1] = id; rargs[#rargs + 1] = ARGV[i + 4] end
        margs[#margs + 1] = id
    end
end
chunks_write('ZADD', z, zargs)
chunks_write('HSET', p, pargs)
chunks_write('HSET', r, rargs)
chunks_write('SADD', m, margs)
return #margs
