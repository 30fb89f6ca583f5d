-- ack: settle IDs whose events Kafka acknowledged.
--
-- KEYS: the shard's keys (see apply.lua); [6] is its lock (acquire.lua)
-- ARGV[1] token, then groups: lease (the exact score one claim gave its
-- IDs), count n, then n IDs of that claim; or lease, -n: all n IDs of that
-- claim, not listed (see "Whole claims" below)
-- Returns the number of IDs settled, or -1 when the lock is not ours (fenced:
-- nothing changed; the new holder redelivers those IDs); when a whole-claim
-- group could not be settled unlisted: { settled, its group number (1-based),
-- ... }, and the caller sends those again with their IDs.
--
-- Compare-and-settle: an ID is touched only if its score is still the lease
-- of its claim. A reset (integer score) or a newer claim (another lease)
-- means the ID lives on as it is; a cancelled ID is already gone. A settled
-- one-shot ID is removed with its payload; a repeating one is re-armed at
-- the next point of its period after now (missed points are skipped, not
-- fired in a burst) and its fire count goes up. A lease's record in f
-- (lib/inflight.lua) goes when no ID holds the lease any more.
--
-- Grouped by lease, so each ID costs one argument. Which IDs of a group
-- still hold its lease is asked in one of two ways: when the group is most of
-- the IDs holding that lease (the usual case: a claim acknowledged whole), by
-- the range of that exact score (ZRANGEBYSCORE lease lease: no score is
-- formatted, and formatting half-integers is most of what ZMSCORE costs);
-- else per ID with ZMSCORE, comparing the strings (tonumber only for the
-- rare ID whose string differs). ZCOUNT (O(log n)) picks the way, so a claim
-- acknowledged piece by piece never scans its whole range each time.
--
-- When the range's IDs are all in the group (a claim acknowledged piece by
-- piece, but its last piece), they leave with one ZREMRANGEBYSCORE of the lease instead of
-- a ZREM of each: a claim's IDs sit together at the far end of the skiplist,
-- and each ZREM walked there again (and went to the AOF as one more
-- argument); the range is walked once. Exact, not a guess from counts: the
-- range is what ZRANGEBYSCORE just read in this same script, and every one of
-- its IDs was matched to the group (a repeating one was re-armed out of it).
--
-- Whole claims: a claim whose every event Kafka acknowledged comes as its
-- lease and its size alone, and costs no argument or Lua string per ID (none
-- at all when the shard has no payloads or repeating IDs: ZCOUNT, then
-- ZREMRANGEBYSCORE and the record's HDEL). Every ID holding that lease is then one of that claim's: each
-- claim's lease is its own (claim.lua: later than the shard's previous one,
-- which it keeps in Redis, so a claim whose reply was lost counts too; a new
-- holder of the shard first gives every leased ID its deadline back,
-- acquire.lua; a producer's take during a split ends in .75, never .5). So if
-- the lease's range holds all n, that range is the claim, settled as above;
-- if it holds fewer (one was reset or cancelled meanwhile), the group is
-- answered back to be sent with its IDs (it is not known which of them are
-- still to settle: the rest may be unacknowledged parts of other groups).
-- #include chunks
-- #include inflight
local z, p, f, r, lock = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6]
if redis.call('GET', lock) ~= ARGV[1] then return -1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local settled = 0
local has_r = redis.call('EXISTS', r) == 1
local has_p = redis.call('EXISTS', p) == 1
local zrem = {}
local gone = {} -- removed by a lease's range: their payloads go too
local done, check = {}, {} -- leases whose records go; that may go (if none holds it)

-- A repeating ID is re-armed instead of removed (rare: one by one).
local function rearm(id, rep, cur)
    local period, fired = string.match(rep, '^(%d+):(%d+)$')
    period, fired = tonumber(period), tonumber(fired) + 1
    local deadline = inflight_dispatched(f, cur, id)
    local next = deadline + period
    if next <= now then
        next = deadline + period * (math.floor((now - deadline) / period) + 1)
    end
    redis.call('ZADD', z, string.format('%d', next), id)
    redis.call('HSET', r, id, string.format('%d:%d', period, fired))
end

-- id still holds the lease of its claim: remove it (or re-arm it)
local function settle(id, lease)
    local rep = has_r and redis.call('HGET', r, id)
    if rep then
        rearm(id, rep, lease)
    else
        zrem[#zrem + 1] = id
    end
    settled = settled + 1
end

local i, group, listed = 2, 0, {}
while i <= #ARGV do
    local lease, n = ARGV[i], tonumber(ARGV[i + 1])
    local last = i + 1 + math.max(n, 0)
    group = group + 1
    if n < 0 then
        if redis.call('ZCOUNT', z, lease, lease) ~= -n then
            listed[#listed + 1] = group
        elseif has_r then
            local still = redis.call('ZRANGEBYSCORE', z, lease, lease)
            for j = 1, #still do settle(still[j], lease) end
            done[#done + 1] = lease
        else
            if has_p then
                local still = redis.call('ZRANGEBYSCORE', z, lease, lease)
                for j = 1, #still do gone[#gone + 1] = still[j] end
            end
            redis.call('ZREMRANGEBYSCORE', z, lease, lease)
            settled = settled - n
            done[#done + 1] = lease
        end
    elseif redis.call('ZCOUNT', z, lease, lease) <= 2 * n then
        check[#check + 1] = lease
        local held = {}
        local still = redis.call('ZRANGEBYSCORE', z, lease, lease)
        for j = 1, #still do held[still[j]] = true end
        local from, hits = #zrem, 0
        for k = i + 2, last do
            local id = ARGV[k]
            if held[id] then
                held[id] = nil -- (an ID twice in the group counts once)
                hits = hits + 1
                if has_r then
                    settle(id, lease)
                else -- the fast path, inline
                    zrem[#zrem + 1] = id
                    settled = settled + 1
                end
            end
        end
        if hits > 0 and hits == #still then
            -- all of the range settled: remove it at once, not ID by ID
            redis.call('ZREMRANGEBYSCORE', z, lease, lease)
            for j = #zrem, from + 1, -1 do
                if has_p then gone[#gone + 1] = zrem[j] end
                zrem[j] = nil
            end
        end
    else
        check[#check + 1] = lease
        local lease_n = tonumber(lease)
        local scores = chunks_read('ZMSCORE', z, ARGV, i + 2, last)
        for j = 1, last - i - 1 do
            local cur = scores[j]
            if cur == lease or (cur and tonumber(cur) == lease_n) then
                settle(ARGV[i + 1 + j], cur)
            end
        end
    end
    i = last + 1
end
chunks_write('ZREM', z, zrem)
if has_p then
    chunks_write('HDEL', p, zrem)
    chunks_write('HDEL', p, gone)
end
chunks_write('HDEL', f, done)
inflight_forget(z, f, check)
if #listed > 0 then
    table.insert(listed, 1, settled)
    return listed
end
return settled
