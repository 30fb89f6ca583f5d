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
local z, p, r, m, e = KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[7]
local epoch = tonumber(redis.call('GET', e) or 0)
if tonumber(ARGV[1]) < epoch then return redis.error_reply('STALE ' .. epoch) end
-- One ZMSCORE and one SMISMEMBER, then variadic writes (chunked: Lua's
-- unpack has a limit); an ID given twice is seeded once, as by two calls.
local ids = {}
for i = 2, #ARGV, 5 do ids[#ids + 1] = ARGV[i] end
local function each_read(cmd, key)
    local got = {}
    for k = 1, #ids, 1000 do
        local part = redis.call(cmd, key, unpack(ids, k, math.min(k + 999, #ids)))
        for j = 1, #part do got[k - 1 + j] = part[j] end
    end
    return got
end
if #ids == 0 then return 0 end
local here, moved = each_read('ZMSCORE', z), each_read('SMISMEMBER', m)
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
local function each_write(cmd, key, args)
    for k = 1, #args, 1000 do redis.call(cmd, key, unpack(args, k, math.min(k + 999, #args))) end
end
each_write('ZADD', z, zargs)
each_write('HSET', p, pargs)
each_write('HSET', r, rargs)
each_write('SADD', m, margs)
return #margs
