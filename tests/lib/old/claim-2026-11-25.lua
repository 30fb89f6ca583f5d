-- claim.lua of lapse at 2fa9afa (2026-11-25), expanded by scripts/lua-source:
-- what a scanner of before 2026-11-26 runs (tests/integration/0396).
-- claim: take up to ARGV[1] due IDs of one shard for dispatch.
--
-- KEYS: the shard's keys (see apply.lua); [6] is its lock (acquire.lua);
--   [8] its last lease (string, see below)
-- ARGV[1] token, ARGV[2] batch size (0: only renew the lock), ARGV[3] lease
-- ms, ARGV[4] fresh ms, ARGV[5] most IDs overdue by more than fresh ms to
-- take, ARGV[6] the scanner's layout epoch
-- Returns { now_ms, lease, next_ms, due_left, extras, claimed, returned },
-- or { -1 } when the lock is not ours: this scanner is fenced off, or
-- { -2, epoch } when the layout changed (a split): reload it first.
--   lease:     the score every claimed ID now carries (string, ".5"; a
--              producer's take during a split leases with ".75")
--   next_ms:   the lowest score left in the zset after the claim, or -1
--   due_left:  how many due IDs are left after the claim (the backlog)
--   extras:    { k, payload, seq, ... } for the claimed IDs that have a
--              payload or repeat, k the ID's place (1, 2, ...), ascending;
--              payload false when none; seq for a repeating ID the number
--              of this fire (1, 2, ...), else 0. Most IDs have neither, and
--              listing only those costs less on both ends.
--   claimed:   the claimed IDs, each with the deadline that fell due (a
--              decimal string): "id1 deadline1 id2 deadline2 ..." in one
--              string (IDs never hold spaces: the producers refuse them), or
--              "" when none; or { id1, deadline1, ... } when an ID does hold
--              one (not written by lapse) or an expired lease was among them
--   returned:  the places (1, 2, ...) of claimed IDs that came back from an
--              expired lease, ascending (most claims: none): their holder
--              never settled them (Kafka gave up, a lost ack), so they have
--              waited since their deadline, whatever the scanner saw since
--
-- Due means score <= now on this Redis server's clock: never early. A claimed
-- ID stays in the zset with score now + lease + 0.5 (a producer's take during
-- a split: + 0.75, take.lua), so if its scanner dies
-- before acknowledging, the ID falls due again when the lease runs out and is
-- claimed anew with the same deadline and seq (at-least-once); the claim's
-- deadlines are kept meanwhile as one record in KEYS[3] (lib/inflight.lua).
-- Every call renews the lock.
--
-- Catch-up: IDs due within the last fresh ms are taken first and without
-- limit; older ones (a backlog after an outage) at most ARGV[5] per call, so
-- the caller can rate-limit the backlog without delaying fresh deadlines.
-- chunks: commands over long lists of arguments (lib: pasted in by
-- scripts/lua-source). One redis.call per command and chunk of 1000, not
-- one per ID: Lua's unpack has a limit, and a call per ID costs far more.

-- cmd key list[from..to] (all of list by default), in chunks.
local function chunks_write(cmd, key, list, from, to)
    from, to = from or 1, to or #list
    for k = from, to, 1000 do
        redis.call(cmd, key, unpack(list, k, math.min(k + 999, to)))
    end
end

-- The replies of cmd key list[from..to] (all of list by default), in
-- chunks, as one list.
local function chunks_read(cmd, key, list, from, to)
    from, to = from or 1, to or #list
    local got = {}
    for k = from, to, 1000 do
        local part = redis.call(cmd, key, unpack(list, k, math.min(k + 999, to)))
        for j = 1, #part do got[k - from + j] = part[j] end
    end
    return got
end
-- inflight: the deadlines of leased IDs (lib: pasted into the scripts that
-- say `-- #include inflight`, by scripts/lua-source).
--
-- f (KEYS[3]) holds one record per lease, not one entry per ID: the field
-- is the lease score (as a string, "1795322057804.5"), the value the IDs
-- leased with it and the deadlines being dispatched for them. A claim
-- (claim.lua) or a producer's take (take.lua) writes one record; whoever
-- removes a lease's last holder deletes it (ack.lua, drop.lua), and
-- claim.lua deletes the records of expired leases nobody holds any more (a
-- reset or cancel took the last one). One write per claim instead of an
-- HSET and an HDEL per ID: those were a fifth of Redis's time per fired ID.
-- Which IDs are in flight is what their scores say (a fraction: a lease).
--
-- A record is "id deadline id deadline ..." (the form claim.lua already
-- builds for its reply), or, when an ID is empty or holds a space (never
-- written by lapse), a space and then cmsgpack of { id, deadline, ... }.

-- The pairs { id, deadline, ... } of a record.
local function inflight_pairs(rec)
    if string.byte(rec, 1) == 32 then return cmsgpack.unpack(string.sub(rec, 2)) end
    local list = {}
    for id, d in string.gmatch(rec, '([^ ]+) ([^ ]+)') do -- (spaces only: an ID may hold a tab)
        list[#list + 1] = id
        list[#list + 1] = d
    end
    return list
end

-- Stores pairs { id, deadline, ... } under lease in f; `packed`, if given,
-- is them joined by spaces (every ID non-empty and free of spaces). A record
-- already there (two producers' takes in one millisecond) is added to.
local function inflight_add(f, lease, pairs, packed)
    local old = redis.call('HGET', f, lease)
    if old then
        local all = inflight_pairs(old)
        for i = 1, #pairs do all[#all + 1] = pairs[i] end
        pairs, packed = all, nil
    end
    if not packed then
        packed = table.concat(pairs, ' ')
        for i = 1, #pairs, 2 do
            if pairs[i] == '' or string.find(pairs[i], ' ', 1, true) then
                packed = ' ' .. cmsgpack.pack(pairs)
                break
            end
        end
    end
    redis.call('HSET', f, lease, packed)
end

-- The deadline being dispatched for id, which holds `lease` (its score as
-- Redis formats it) in the shard whose record hash is f, or nil when its
-- record has none. A record is read once per call. An ID that is not all
-- digits (or "-") cannot be taken for a deadline, so it is found by a plain search
-- of the record, the first few times; after that (or for an ID of digits,
-- or a cmsgpack record) the record is decoded once into a table: a claim's
-- record holds hundreds of IDs, and decoding it cost ~0.2 ms.
local inflight_recs = {}
local function inflight_deadline(f, lease, id)
    local key = f .. ' ' .. lease
    local c = inflight_recs[key]
    if not c then
        c = { rec = redis.call('HGET', f, lease), finds = 0 }
        inflight_recs[key] = c
    end
    if not c.rec then return nil end
    if not c.map and c.finds < 8 and string.byte(c.rec, 1) ~= 32 and string.find(id, '[^%d%-]') then
        c.finds = c.finds + 1
        local at = 1
        while true do
            local b, e = string.find(c.rec, id .. ' ', at, true)
            if not b then return nil end
            if b == 1 or string.byte(c.rec, b - 1) == 32 then -- the whole token: the ID
                return tonumber(string.match(c.rec, '^[^ ]+', e + 1))
            end
            at = b + 1
        end
    end
    if not c.map then
        c.map = {}
        local list = inflight_pairs(c.rec)
        for i = 1, #list, 2 do c.map[list[i]] = list[i + 1] end
    end
    return tonumber(c.map[id])
end

-- The deadline an in-flight ID's event carries: its record's, else (no
-- record: lost, or written by hand) the lease's own millisecond, which only
-- a later deadline beats.
local function inflight_dispatched(f, lease, id)
    return inflight_deadline(f, lease, id) or math.floor(tonumber(lease))
end

-- Deletes the records of those leases (a lease may be listed more than
-- once) that no ID of zset z holds any more.
local function inflight_forget(z, f, leases)
    local gone, seen = {}, {}
    for i = 1, #leases do
        local l = leases[i]
        if not seen[l] then
            seen[l] = true
            if redis.call('ZCOUNT', z, l, l) == 0 then gone[#gone + 1] = l end
        end
    end
    chunks_write('HDEL', f, gone)
end
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
-- Every claim gets a lease of its own, later than the previous claim's even
-- within one millisecond: ack.lua settles by lease (a whole claim by its
-- lease's range alone), and an ID reset to a due time and claimed again
-- under the same lease would be settled by the first claim's ack before the
-- second event was acknowledged. The previous lease is the shard's own
-- record (KEYS[8]), not the scanner's memory: a claim whose reply the
-- scanner never read (a timeout, a dropped connection) still ran, and its
-- IDs must not share the next claim's lease. The record lives until a
-- lease_ms after its lease ran out; every later lease is later anyway.
local prev = tonumber(redis.call('GET', KEYS[8])) or 0
local lease_at = math.max(now + lease_ms, prev + 1)
redis.call('SET', KEYS[8], string.format('%d', lease_at), 'PX', lease_at - now + lease_ms)
local lease = string.format('%d.5', lease_at)
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

-- The usual claim: every score a due deadline, every ID free of spaces (as
-- every ID lapse writes is). Then no Lua runs per ID but building the lease
-- arguments: ZRANGEBYSCORE's own reply (id, deadline pairs, the scores as
-- Redis formatted them: integers), joined by spaces in one string, is both
-- the claim's record in f and the reply's IDs: one bulk string instead of
-- two per ID, cheaper for Redis to send and for the scanner to read.
local n = #due / 2
local ids, list = nil, due
local expired = {} -- the expired leases met: their records may be done with
local returned = {} -- the places of IDs claimed again from an expired lease
local packed = n > 0 and table.concat(due, ' ') or ''
local _, spaces = string.gsub(packed, ' ', ' ')
if n > 0 and (spaces ~= 2 * n - 1 or string.find(packed, '%.7?5 ') or string.find(packed, '%.7?5$')
               or string.byte(packed, 1) == 32 or string.find(packed, '  ', 1, true)) then
    -- Expired leases (a score ending in ".5" or ".75"), an ID with a space or an
    -- empty one (neither written by lapse; they would blur the string's
    -- fields): one by one. An expired lease's holder never settled it; fire again with the
    -- deadline that fell due. A producer's take (split) leases IDs that are
    -- not due yet: those get their deadline back instead.
    ids, list, packed = {}, {}, nil
    for i = 1, #due, 2 do
        local id, score = due[i], due[i + 1]
        local back = false
        if string.find(score, '.', 1, true) then -- (deadlines are integers)
            local deadline = inflight_dispatched(f, score, id)
            expired[#expired + 1] = score
            score = string.format('%d', deadline)
            if deadline > now then
                redis.call('ZADD', z, score, id)
                back = true
            end
        end
        if not back then
            ids[#ids + 1] = id
            if score ~= due[i + 1] then returned[#returned + 1] = #ids end
            list[#list + 1] = id
            list[#list + 1] = score
        end
    end
    n = #ids
end

if n > 0 then
    local zargs = {}
    for i = 1, 2 * n, 2 do
        zargs[i] = lease
        zargs[i + 1] = list[i]
    end
    chunks_write('ZADD', z, zargs)
    inflight_add(f, lease, list, packed)
    -- payloads and repeat records: read only when the hash exists at all
    local has_p, has_r = redis.call('EXISTS', p) == 1, redis.call('EXISTS', r) == 1
    if (has_p or has_r) and not ids then
        ids = {}
        for i = 1, n do ids[i] = list[2 * i - 1] end
    end
    local payloads = has_p and chunks_read('HMGET', p, ids, 1, n) or {}
    local repeats = has_r and chunks_read('HMGET', r, ids, 1, n) or {}
    if has_p or has_r then
        local extras = out[5]
        for k = 1, n do
            local payload, rep = payloads[k], repeats[k]
            if payload or rep then
                local x = #extras
                extras[x + 1] = k
                extras[x + 2] = payload or false
                extras[x + 3] = rep and tonumber(string.match(rep, ':(%d+)$')) + 1 or 0
            end
        end
    end
end
out[6] = packed or list
out[7] = returned

-- Records of expired leases that no ID holds any more: those this claim
-- took IDs back from; and, at the first claim of each second (the previous
-- one's lease, less lease_ms, fell in an earlier second), every expired
-- one: a record whose IDs were all reset or cancelled while in flight and
-- whose ack never came (Kafka gave up) has nobody else to delete it. Not on
-- every call: a claim's cost would then grow with the records in flight.
-- A record's lease is its field.
if math.floor((prev - lease_ms) / 1000) ~= math.floor(now / 1000) and redis.call('EXISTS', f) == 1 then
    for _, l in ipairs(redis.call('HKEYS', f)) do
        local at = string.find(l, '.', 1, true) and tonumber(l) -- (else not a lease: acquire.lua's)
        if at and at <= now then expired[#expired + 1] = l end
    end
end
inflight_forget(z, f, expired)

local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
if first[2] then
    out[3] = math.floor(tonumber(first[2]))
    if out[3] <= now then out[4] = redis.call('ZCOUNT', z, '-inf', now) end
end
return out
