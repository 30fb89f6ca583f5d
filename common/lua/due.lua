-- due: one shard's pending deadlines by when they fall due, for lapse-scale
-- status --due (tools/scale/due.c). It only reads (TIME, GET, HKEYS, HGET,
-- ZMSCORE, ZCOUNT, ZRANGEBYSCORE): it may run against a busy primary at any
-- time without changing what the scanners see.
--
-- KEYS: [1] z, [2] f the claims' records (lib/inflight.lua)
-- ARGV[1] the first bucket to count, ARGV[2] how many buckets at most (a
-- shard in small keys is read in calls of that many buckets, so that no
-- call holds Redis long), ARGV[3] now as the first call gave it ("": read
-- TIME), ARGV[4..] the ranges' upper edges as ms from now.
-- Returns { now, inflight, range1, ..., rangeN, next, buckets, soonest }: N
-- = #edges + 1; next the bucket the next call starts at, -1 when this was
-- the last; buckets how many the shard has (1: one key), which the caller
-- compares between calls (a bucket split between them moves IDs: it starts
-- again); soonest the earliest deadline after now in the buckets this call
-- read, -1 when none (a score with a fraction is a lease, not a deadline).
-- In flight is counted by the call that starts at bucket 0, which also
-- takes the held IDs (below) out of its ranges: summed over the calls,
-- each range is right.
--
-- How the counts stay right: a range is ZCOUNT over its score range minus
-- the IDs in flight whose score falls in that range. A claim takes
-- one-shot IDs out of the sorted set into a record (claim.lua): they are
-- counted from the record, in their own column, and are in no range. A
-- repeating ID in flight, and an ID under an older kind of lease ("<ms>.5",
-- "<ms>.75" for a producer's take during a split), stays in the set with a
-- lease for its score, which is not its deadline, so it comes out of the
-- range its lease lands in. Which IDs are in flight is decided by one
-- function, due_inflight.
-- #include bucket
local z, f = KEYS[1], KEYS[2]
local sh = bk_open(z, f)
-- (a converting shard's old zset is read as one more bucket, after the
-- others, and nothing is moved)
sh.readonly = true
local from, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local edges = {}
for i = 4, #ARGV do edges[#edges + 1] = now + tonumber(ARGV[i]) end

-- How many IDs hold score s exactly: in the one key, or in the buckets
-- whose index entry (a lower bound) is at most s.
local function held_at(s)
    if sh.one then return redis.call('ZCOUNT', sh.z, s, s) end
    local n = 0
    for _, j in ipairs(bk_due(sh, s, math.huge)) do
        n = n + redis.call('ZCOUNT', sh.z .. ':' .. j, s, s)
    end
    if sh.old then n = n + redis.call('ZCOUNT', sh.z, s, s) end
    return n
end

-- How many IDs are in flight, and how many of those hold a place in the
-- zset(s), per range (by their score), as lapse-scale status counts them
-- (health.lua): the IDs of a claim's record (lease "<ms>.25") not written
-- since — out of the set, or a repeating one still on the lease (that one
-- is in the set, in its lease's range) — and the IDs holding an older kind
-- of lease (".5", ".75") that has a record. A field that is not a lease is
-- skipped.
local function due_inflight()
    local total, held = 0, {}
    for b = 1, #edges + 1 do held[b] = 0 end
    for _, l in ipairs(redis.call('HKEYS', f)) do
        local s = string.find(l, '.', 1, true) and tonumber(l)
        local b = 1
        while s and b <= #edges and s > edges[b] do b = b + 1 end
        if s and string.sub(l, -3) == '.25' then
            local groups, flat = cmsgpack.unpack(redis.call('HGET', f, l))
            local ids = {}
            for g = 1, #groups, 2 do
                for _, id in ipairs(groups[g + 1]) do ids[#ids + 1] = id end
            end
            for i = 1, #flat, 2 do ids[#ids + 1] = flat[i] end
            local cur = bk_read(sh, 'ZMSCORE', 'z', ids)
            for j = 1, #ids do
                if not cur[j] then total = total + 1
                elseif cur[j] == l then total, held[b] = total + 1, held[b] + 1 end
            end
        elseif s then
            local n = held_at(l)
            total, held[b] = total + n, held[b] + n
        end
    end
    return total, held
end

local inflight, held = 0, {}
for b = 1, #edges + 1 do held[b] = 0 end
if from == 0 then inflight, held = due_inflight() end
local out = { now, inflight }
for b = 1, #edges + 1 do out[#out + 1] = -held[b] end
local nb = sh.one and 1 or sh.n + sh.s
local buckets = nb + (sh.old and 1 or 0)
local last = math.min(from + count, buckets) - 1
local soonest = -1
for j = from, last do
    local key = (sh.one or j == nb) and sh.z or sh.z .. ':' .. j
    local lo = '-inf'
    for b = 1, #edges + 1 do
        local hi = edges[b] and string.format('%d', edges[b]) or '+inf'
        out[2 + b] = out[2 + b] + redis.call('ZCOUNT', key, lo, hi)
        lo = '(' .. hi
    end
    -- the first whole score after now: leases (a claim's shared score)
    -- are stepped over a score at a time, a bounded number of them
    local after = string.format('(%d', now)
    for _ = 1, 64 do
        local r = redis.call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
        local s = r[2] and tonumber(r[2])
        if not s or (soonest >= 0 and s >= soonest) then break end
        if s == math.floor(s) then soonest = s break end
        after = '(' .. r[2]
    end
end
out[#out + 1] = last + 1 < buckets and last + 1 or -1
out[#out + 1] = buckets
out[#out + 1] = soonest
return out
