-- drop: remove stale old-shard twins (split), each only if its score is
-- still the lease the caller holds on it (take.lua or claim.lua).
--
-- KEYS: the old shard's keys (see apply.lua)
-- ARGV: pairs of id, lease
-- Returns the number removed.
-- #include chunks
-- #include inflight
local z, p, f, r = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
-- One ZMSCORE, then variadic ZREM/HDEL (chunked: Lua's unpack has a limit);
-- an ID given twice is removed once. The records (f) of the leases whose
-- last holder it removed go too.
local ids, seen, leases = {}, {}, {}
for i = 1, #ARGV, 2000 do
    local last = math.min(i + 1999, #ARGV)
    local want = {}
    for k = i, last, 2 do want[#want + 1] = ARGV[k] end
    local cur = redis.call('ZMSCORE', z, unpack(want))
    for j = 1, #want do
        local id = want[j]
        if cur[j] and not seen[id] and tonumber(cur[j]) == tonumber(ARGV[i + 2 * j - 1]) then
            seen[id] = true
            ids[#ids + 1] = id
            leases[#leases + 1] = cur[j]
        end
    end
end
chunks_write('ZREM', z, ids)
chunks_write('HDEL', p, ids)
chunks_write('HDEL', r, ids)
inflight_forget(z, f, leases)
return #ids
