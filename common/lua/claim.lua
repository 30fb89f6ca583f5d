-- claim: take up to ARGV[1] due IDs of one shard for dispatch.
--
-- KEYS: the shard's keys (see apply.lua); [6] is its lock (acquire.lua)
-- ARGV[1] token, ARGV[2] batch size (0: only renew the lock), ARGV[3] lease
-- ms, ARGV[4] fresh ms, ARGV[5] most IDs overdue by more than fresh ms to
-- take, ARGV[6] the scanner's layout epoch
-- Returns { now_ms, lease, next_ms, due_left, extras, id1, deadline1, id2,
-- deadline2, ... },
-- or { -1 } when the lock is not ours: this scanner is fenced off, or
-- { -2, epoch } when the layout changed (a split): reload it first.
--   lease:     the score every claimed ID now carries (string, half-integer)
--   next_ms:   the lowest score left in the zset after the claim, or -1
--   due_left:  how many due IDs are left after the claim (the backlog)
--   extras:    { k, payload, seq, ... } for the claimed IDs that have a
--              payload or repeat, k the ID's place (1, 2, ...), ascending;
--              payload false when none; seq for a repeating ID the number
--              of this fire (1, 2, ...), else 0. Most IDs have neither, and
--              two reply elements per ID instead of four cost less on both
--              ends.
--   deadlineN: the deadline that fell due (a decimal string)
--
-- Due means score <= now on this Redis server's clock: never early. A claimed
-- ID stays in the zset with score now + lease + 0.5, so if its scanner dies
-- before acknowledging, the ID falls due again when the lease runs out and is
-- claimed anew with the same deadline and seq (at-least-once); its deadline
-- is kept in KEYS[3] meanwhile. Every call renews the lock.
--
-- Catch-up: IDs due within the last fresh ms are taken first and without
-- limit; older ones (a backlog after an outage) at most ARGV[5] per call, so
-- the caller can rate-limit the backlog without delaying fresh deadlines.
local z, p, f, r, lock, e = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[7]
if redis.call('GET', lock) ~= ARGV[1] then return { -1 } end
local epoch = tonumber(redis.call('GET', e) or 0)
if tonumber(ARGV[6]) < epoch then return { -2, epoch } end
local lease_ms = tonumber(ARGV[3])
-- the lock lives 90 % of the lease: standbys poll every 10 %, so one takes
-- over within lease_ms of the holder's last renewal
redis.call('PEXPIRE', lock, math.floor(lease_ms * 0.9))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = string.format('%d.5', now + lease_ms)
local batch, fresh, old_max = tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5])
local due = {}
if batch > 0 then
    if old_max >= batch then -- no cap on the backlog: oldest first
        due = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'WITHSCORES', 'LIMIT', 0, batch)
    else
        local edge = now - fresh
        due = redis.call('ZRANGEBYSCORE', z, '(' .. edge, now, 'WITHSCORES', 'LIMIT', 0, batch)
        local room = math.min(batch - #due / 2, old_max)
        if room > 0 then
            local old = redis.call('ZRANGEBYSCORE', z, '-inf', edge, 'WITHSCORES', 'LIMIT', 0, room)
            for i = 1, #old do due[#due + 1] = old[i] end
        end
    end
end
local out = { now, lease, -1, 0, {} }

-- Variadic calls in chunks (Lua's unpack has a limit): one redis.call per
-- command and chunk instead of one per ID.
local function each(cmd, key, args)
    for k = 1, #args, 1000 do
        redis.call(cmd, key, unpack(args, k, math.min(k + 999, #args)))
    end
end

-- Per ID as little Lua as possible (this loop is most of a claim's cost):
-- a score is a lease when it ends in ".5" (checked on the string, not with
-- tonumber + % 1); a due deadline's string, as Redis formatted it (an
-- integer: producers write nothing else), goes to f and to the reply as it
-- is. Everything ZRANGEBYSCORE returned that is not a lease is <= now.
local ids, deadlines, zargs, fargs = {}, {}, {}, {}
for i = 1, #due, 2 do
    local id, score = due[i], due[i + 1]
    local back = false
    if string.byte(score, -2) == 46 then -- "...5": an expired lease
        -- its holder never settled it; fire again with the deadline that
        -- fell due. A producer's take (split) leases IDs that are not due
        -- yet: those get their deadline back instead.
        local deadline = tonumber(redis.call('HGET', f, id)) or math.floor(tonumber(score))
        score = string.format('%d', deadline)
        if deadline > now then
            redis.call('ZADD', z, score, id)
            redis.call('HDEL', f, id)
            back = true
        end
    end
    if not back then
        local n = #ids + 1
        ids[n] = id
        deadlines[n] = score
        zargs[2 * n - 1] = lease
        zargs[2 * n] = id
        fargs[2 * n - 1] = id
        fargs[2 * n] = score
    end
end

if #ids > 0 then
    each('ZADD', z, zargs)
    each('HSET', f, fargs)
    -- payloads and repeat records: read only when the hash exists at all
    local payloads, repeats = {}, {}
    if redis.call('EXISTS', p) == 1 then
        for k = 1, #ids, 1000 do
            local part = redis.call('HMGET', p, unpack(ids, k, math.min(k + 999, #ids)))
            for j = 1, #part do payloads[k + j - 1] = part[j] end
        end
    end
    if redis.call('EXISTS', r) == 1 then
        for k = 1, #ids, 1000 do
            local part = redis.call('HMGET', r, unpack(ids, k, math.min(k + 999, #ids)))
            for j = 1, #part do repeats[k + j - 1] = part[j] end
        end
    end
    local o, extras = #out, out[5]
    for k = 1, #ids do
        out[o + 1] = ids[k]
        out[o + 2] = deadlines[k]
        o = o + 2
        local payload, rep = payloads[k], repeats[k]
        if payload or rep then
            local x = #extras
            extras[x + 1] = k
            extras[x + 2] = payload or false
            extras[x + 3] = rep and tonumber(string.match(rep, ':(%d+)$')) + 1 or 0
        end
    end
end

local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
if first[2] then
    out[3] = math.floor(tonumber(first[2]))
    if out[3] <= now then out[4] = redis.call('ZCOUNT', z, '-inf', now) end
end
return out
