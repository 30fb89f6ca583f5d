-- claim: take up to ARGV[1] due IDs of one shard for dispatch.
--
-- KEYS: the shard's keys (see apply.lua); [6] is its lock (acquire.lua);
--   [8] its last lease (string, see below); during a layout change, on
--   the node of its pair, [9] and [10]: the pair's z and m (stale twins
--   are dropped here, see below)
-- ARGV[1] token, ARGV[2] batch size (0: only renew the lock), ARGV[3] lease
-- ms, ARGV[4] fresh ms, ARGV[5] most IDs overdue by more than fresh ms to
-- take, ARGV[6] the scanner's layout epoch
-- Returns { now_ms, lease, next_ms, due_left, extras, claimed, returned },
-- or the error "FENCED lock not held" when the lock is not ours (this
-- scanner is fenced off), or "STALE <epoch>" when the layout changed (a
-- split): reload it first. (Every script's fences: common/script.h.)
--   lease:     this claim's lease, "<ms>.25": the field of its record in f
--              (lib/inflight.lua) and the score of its repeating IDs
--   next_ms:   the lowest score left in the zset after the claim, or -1
--   due_left:  how many due IDs are left after the claim (the backlog)
--   extras:    { k, payload, seq, ... } for the claimed IDs that have a
--              payload or repeat, k the ID's place (1, 2, ...), ascending;
--              payload false when none; seq for a repeating ID the number
--              of this fire (1, 2, ...), else 0. Most IDs have neither, and
--              listing only those costs less on both ends.
--   claimed:   the claimed IDs, each with the deadline that fell due (a
--              decimal string), in one string (the first part of the
--              claim's record): cmsgpack of the groups { deadline,
--              { id, ... }, ... } (IDs that share a deadline, below) and
--              then cmsgpack of the pairs { id, deadline, ... }; or "" when
--              none
--   returned:  the places (1, 2, ...) of claimed IDs that came back from an
--              expired lease, ascending (most claims: none): their holder
--              never settled them (Kafka gave up, a lost ack), so they have
--              waited since their deadline, whatever the scanner saw since
--
-- Due means score <= now on this Redis server's clock: never early. A claim
-- takes its due one-shot IDs out of the zset (one range removal, O(log n +
-- k), where a score rewrite per ID cost a skiplist delete and insert, and
-- the ack another lookup and delete) and writes them, with their deadlines,
-- as one record under its lease in f: the record is what holds them until
-- ack.lua deletes it. A repeating ID (rare) stays in the zset with the
-- lease as its score, as before, so its ack can tell whether it was touched
-- since. If the record is not settled by the time the lease runs out (the
-- scanner died, Kafka gave up, an ack was lost), its IDs come back
-- (inflight_expire, once a second below; acquire.lua at a takeover): every
-- ID not reset or claimed since is claimed again with the same deadline
-- and seq (at-least-once). docs/design.md, "The claim", has the argument.
-- Every call renews the lock.
--
-- Catch-up: IDs due within the last fresh ms are taken first and without
-- limit; older ones (a backlog after an outage) at most ARGV[5] per call, so
-- the caller can rate-limit the backlog without delaying fresh deadlines.
-- #include chunks
-- #include inflight
-- #include watch
local z, p, f, r, lock, e = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[7]
local sh = bk_open(z, p, r)
if redis.call('GET', lock) ~= ARGV[1] then return redis.error_reply('FENCED lock not held') end
local epoch = tonumber(redis.call('GET', e) or 0)
if tonumber(ARGV[6]) < epoch then return redis.error_reply('STALE ' .. epoch) end
local lease_ms = tonumber(ARGV[3])
-- the lock lives 90 % of the lease: standbys poll every 10 %, so one takes
-- over within lease_ms of the holder's last renewal
redis.call('PEXPIRE', lock, math.floor(lease_ms * 0.9))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Every claim gets a lease of its own, later than the previous claim's even
-- within one millisecond: its record in f is filed under it, and ack.lua
-- settles by it (a whole claim by its lease alone); two claims under one
-- lease would share one record. The previous lease is the shard's own
-- record (KEYS[8], "<lease ms> <next expiry ms>"), not the scanner's
-- memory: a claim whose reply the scanner never read (a timeout, a dropped
-- connection) still ran, and its IDs must not share the next claim's
-- lease. The record lives until a lease_ms after its lease ran out; every
-- later lease is later anyway. Its second number is when the earliest
-- record in f runs out (below), none when f was empty.
local c = redis.call('GET', KEYS[8]) or ''
local prev, next_out = string.match(c, '^(%d+) ?(%d*)$')
prev, next_out = tonumber(prev) or 0, tonumber(next_out)
local lease_at = math.max(now + lease_ms, prev + 1)
local lease = string.format('%d.25', lease_at)
local batch, fresh, old_max = tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5])
local read_next_out = next_out

-- Expired leases, as soon as the earliest record in f runs out (KEYS[8]
-- keeps when: a claim checks one number, not every record, as long as none
-- is due). A claim's record (".25") that nobody settled: its IDs come back
-- into the zset, due at once, with an expired lease as their score
-- (inflight_expire), so the range below takes them in order and knows them
-- by the fraction. Any other (".5", ".75": IDs that hold their lease in the
-- zset) may be done with: forgotten below once no ID holds it (a record
-- whose IDs were all reset or cancelled while in flight, and whose ack
-- never came, has nobody else to delete it). The records acknowledged
-- meanwhile only make the check come early.
local expired = {}
if batch > 0 and (next_out and next_out <= now or not next_out and redis.call('EXISTS', f) == 1) then
    next_out = nil
    for _, l in ipairs(redis.call('HKEYS', f)) do
        local at = string.find(l, '.', 1, true) and tonumber(l) -- (else not a lease: acquire.lua's)
        if at and at <= now then
            if inflight_out(l) then
                inflight_expire(sh, f, l, redis.call('HGET', f, l))
            else
                expired[#expired + 1] = l
            end
        elseif at and (not next_out or at < next_out) then
            next_out = math.floor(at)
        end
    end
end

-- The due IDs, and their removal: the range by rank (or, for all of the
-- fresh ones, by score) that ZRANGEBYSCORE just read in this same script.
--
-- Dense runs first: when the lowest due deadline is shared by at least
-- DENSE IDs (a burst: thousands due in the same millisecond), its IDs are
-- read without their scores (ZCOUNT and a range of that one score): a
-- score costs Redis a printf("%.17g") per ID (Redis before 7.2), a fifth
-- of what the claim cost it per ID, where one per run is enough. They go
-- as groups { deadline, { id, ... }, ... }; the rest (sparse deadlines) as
-- ZRANGEBYSCORE WITHSCORES pairs { id, deadline, ... }.
local DENSE = 32
local groups, ngrouped, due = {}, 0, {}
-- One key's due IDs (z: the shard's one key, or a bucket), up to room of
-- them, oldest first: appended to groups and due. Returns how many.
local function take_all(zk, room)
    local took = 0
    while room > 0 do
        local first = redis.call('ZRANGEBYSCORE', zk, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
        if #first == 0 then break end
        local s = first[2]
        local c = string.find(s, '.', 1, true) and 0 or redis.call('ZCOUNT', zk, s, s)
        if c < DENSE then
            local part = redis.call('ZRANGEBYSCORE', zk, '-inf', now, 'WITHSCORES', 'LIMIT', 0, room)
            redis.call('ZREMRANGEBYRANK', zk, 0, #part / 2 - 1)
            for i = 1, #part do due[#due + 1] = part[i] end
            return took + #part / 2
        end
        local k = math.min(c, room) -- (s is the lowest score: ranks 0..c-1)
        groups[#groups + 1] = s
        groups[#groups + 1] = redis.call('ZRANGEBYSCORE', zk, s, s, 'LIMIT', 0, k)
        redis.call('ZREMRANGEBYRANK', zk, 0, k - 1)
        room, ngrouped, took = room - k, ngrouped + k, took + k
    end
    return took
end

-- The same with a cap on the backlog: the fresh ones (due within the last
-- fresh ms) first, up to room, then older ones up to old_room. Returns
-- how many of each.
local function take_fresh(zk, room, old_room)
    local edge = now - fresh
    local part = redis.call('ZRANGEBYSCORE', zk, '(' .. edge, now, 'WITHSCORES', 'LIMIT', 0, room)
    local k = #part / 2
    if k == room then -- (not all of them: the first k after the older ones)
        local at = redis.call('ZCOUNT', zk, '-inf', edge)
        redis.call('ZREMRANGEBYRANK', zk, at, at + k - 1)
    elseif k > 0 then
        redis.call('ZREMRANGEBYSCORE', zk, '(' .. edge, now)
    end
    for i = 1, #part do due[#due + 1] = part[i] end
    old_room = math.min(room - k, old_room)
    local o = 0
    if old_room > 0 then
        local old = redis.call('ZRANGEBYSCORE', zk, '-inf', edge, 'WITHSCORES', 'LIMIT', 0, old_room)
        if #old > 0 then redis.call('ZREMRANGEBYRANK', zk, 0, #old / 2 - 1) end
        for i = 1, #old do due[#due + 1] = old[i] end
        o = #old / 2
    end
    return k, o
end

-- A bucket's due IDs, up to room, oldest first, appended to due, and its
-- lowest score left (false: none; nil: not known). A bucket is small, so
-- it has no dense runs to group, and the usual visit (an ID or two due in
-- a bucket of dozens, the steady state of a large shard) is one read of
-- its lowest entries, which also gives the score left, and one removal.
local function take_bucket(zk, room)
    local w = math.min(room, 2)
    local part = redis.call('ZRANGE', zk, 0, w, 'WITHSCORES')
    local k = 0
    while k < w and part[2 * k + 2] and tonumber(part[2 * k + 2]) <= now do k = k + 1 end
    local first
    if k == w and w < room and part[2 * w + 2] and tonumber(part[2 * w + 2]) <= now then
        part = redis.call('ZRANGEBYSCORE', zk, '-inf', now, 'WITHSCORES', 'LIMIT', 0, room)
        k = #part / 2
    else
        first = part[2 * k + 2] or false
    end
    if k > 0 then redis.call('ZREMRANGEBYRANK', zk, 0, k - 1) end
    for i = 1, 2 * k do due[#due + 1] = part[i] end
    return k, first
end

-- The due IDs: of the one key; or of the due buckets by the index, lowest
-- entry first, until the batch is full. Each bucket visited gets its entry
-- put right (bk_settle_note, written by bk_settle_all before anything
-- else writes), and its IDs' bucket is noted (sh.at) so that nothing
-- below hashes them again.
if batch > 0 then
    if sh.one then
        if old_max >= batch then take_all(z, batch) else take_fresh(z, batch, old_max) end
    else
        if sh.old then -- a converting shard: its old zset's due IDs into their buckets first
            local due_old = redis.call('ZRANGEBYSCORE', z, '-inf', now, 'LIMIT', 0, batch)
            bk_promote(sh, due_old, 1, #due_old, 1, 0)
        end
        -- Rounds of up to 64 due buckets (asking the index for the whole
        -- batch's worth would read hundreds of entries a burst's claim
        -- never visits), each round's entries written before the next asks.
        -- (sh.at spares the payload and repeat reads below a hash per ID.)
        local room, old_room = batch, old_max
        local note_at = bk_has(sh, 'p') or bk_has(sh, 'r')
        local rounds = 0
        while room > 0 and rounds < 8 do
            local ask, took_round, notes = math.min(room, 64), 0, {}
            rounds = rounds + 1
            local js = bk_due(sh, now, ask)
            for _, j in ipairs(js) do
                local d0, took, old, first = #due, 0, 0, nil
                if old_max >= batch then
                    took, first = take_bucket(z .. ':' .. j, room)
                else
                    took, old = take_fresh(z .. ':' .. j, room, old_room)
                end
                if note_at then
                    for i = d0 + 1, #due, 2 do sh.at[due[i]] = j end
                end
                bk_settle_note(sh, notes, j, first)
                room, old_room, took_round = room - took, old_room - old, took_round + took
                if room <= 0 then break end
            end
            bk_settle_all(sh, notes)
            -- (all due buckets seen; or, with a catch-up budget, a round
            -- that took nothing: the budget is spent on buckets that hold
            -- only overdue IDs. At most 8 rounds: entries left low by
            -- resets cost a visit each, and the next claim goes on.)
            if #js < ask or (took_round == 0 and old_max < batch) then break end
        end
    end
end
local out = { now, lease, -1, 0, {} }

-- The usual claim: every score a due deadline. Then no Lua runs per ID:
-- the groups and ZRANGEBYSCORE's own reply (id, deadline pairs, the scores
-- as Redis formatted them: integers), packed by one cmsgpack call, are
-- both the claim's record in f and the reply's IDs: one bulk string
-- instead of two per ID, cheaper for Redis to send and for the scanner to
-- read, and length-prefixed, so no ID needs checking for a separator. A
-- lease's fraction (".25", ".5", ".75") is looked for with plain searches
-- of that string (an ID that happens to hold one costs a look at the
-- scores, nothing more; a group's deadline never has one).
local n = ngrouped + #due / 2
local ids, list = nil, due
local returned = {} -- the places of IDs claimed again from an expired lease
local packed = n > 0 and cmsgpack.pack(groups, due) or ''
local leased = false
if #due > 0 and (string.find(packed, '.25', 1, true) or string.find(packed, '.5', 1, true)
                 or string.find(packed, '.75', 1, true)) then
    for i = 2, #due, 2 do
        if string.find(due[i], '.', 1, true) then leased = true; break end
    end
end
if leased then
    -- Expired leases (a score with a fraction: an ID that held its lease
    -- in the zset, or came back from an expired record): one by one. An
    -- expired lease's holder never settled it; fire again with the deadline
    -- that fell due. A producer's take (split) leases IDs that are not due
    -- yet: those get their deadline back instead.
    list = {}
    for i = 1, #due, 2 do
        local id, score = due[i], due[i + 1]
        local again = false
        if string.find(score, '.', 1, true) then -- (deadlines are integers)
            local deadline = inflight_dispatched(f, score, id)
            if not inflight_out(score) then expired[#expired + 1] = score end
            score = string.format('%d', deadline)
            if deadline > now then
                bk_write(sh, 'ZADD', 'z', { score, id })
                again = true
            end
        end
        if not again then
            list[#list + 1] = id
            list[#list + 1] = score
            if score ~= due[i + 1] then returned[#returned + 1] = ngrouped + #list / 2 end
        end
    end
    n = ngrouped + #list / 2
    packed = n > 0 and cmsgpack.pack(groups, list) or ''
end

-- Stale twins, when the caller passes its pair (a layout change, the pair
-- on this same server: scanner/twins.c): a claimed ID written in the pair
-- since the change began lives there now, so its copy here is dropped as
-- drop.lua would drop it, in this same call: it never enters the record,
-- its payload, repeat and busy watch record go, and the reply leaves it
-- out. (Only an ID whose home is the pair can be in its markers.) One
-- round trip a claim where a check after it took two more.
if KEYS[9] and n > 0 then
    local pair = bk_open(KEYS[9], KEYS[10])
    pair.readonly = true
    local order = {}
    for g = 2, #groups, 2 do
        for _, id in ipairs(groups[g]) do order[#order + 1] = id end
    end
    for i = 1, #list, 2 do order[#order + 1] = list[i] end
    local got, gone = bk_moved(pair, order), {}
    for k = 1, n do
        if got[k] == 1 then gone[#gone + 1] = order[k] end
    end
    if #gone > 0 then
        local place, kept, g2, l2, back = 0, 0, {}, {}, {}
        local was_back = {}
        for _, k in ipairs(returned) do was_back[k] = true end
        for g = 1, #groups, 2 do
            local keep = {}
            for _, id in ipairs(groups[g + 1]) do
                place = place + 1
                if got[place] ~= 1 then kept = kept + 1; keep[#keep + 1] = id end
            end
            if #keep > 0 then g2[#g2 + 1] = groups[g]; g2[#g2 + 1] = keep end
        end
        for i = 1, #list, 2 do
            place = place + 1
            if got[place] ~= 1 then
                kept = kept + 1
                l2[#l2 + 1] = list[i]
                l2[#l2 + 1] = list[i + 1]
                if was_back[place] then back[#back + 1] = kept end
            end
        end
        groups, list, returned, n = g2, l2, back, kept
        ngrouped = 0
        for g = 2, #groups, 2 do ngrouped = ngrouped + #groups[g] end
        packed = n > 0 and cmsgpack.pack(groups, list) or ''
        watch_drop_twins(sh, gone)
    end
end

if n > 0 then
    -- payloads and repeat records: read only when the hash exists at all
    local has_p, has_r = bk_has(sh, 'p'), bk_has(sh, 'r')
    if has_p or has_r then -- the IDs in the reply's order
        ids = {}
        for g = 2, #groups, 2 do
            for _, id in ipairs(groups[g]) do ids[#ids + 1] = id end
        end
        for i = 1, #list, 2 do ids[#ids + 1] = list[i] end
    end
    local payloads = has_p and bk_read(sh, 'HMGET', 'p', ids, 1, n) or {}
    local repeats = has_r and bk_read(sh, 'HMGET', 'r', ids, 1, n) or {}
    local pl -- the one-shot IDs' payloads, kept in the record
    if has_p or has_r then
        local extras, zargs = out[5], {}
        for k = 1, n do
            local payload, rep = payloads[k], repeats[k]
            if payload or rep then
                local x = #extras
                extras[x + 1] = k
                extras[x + 2] = payload or false
                extras[x + 3] = rep and tonumber(string.match(rep, ':(%d+)$')) + 1 or 0
                if rep then -- stays in the zset, leased (see above)
                    zargs[#zargs + 1] = lease
                    zargs[#zargs + 1] = ids[k]
                elseif payload then
                    pl = pl or {}
                    pl[#pl + 1] = ids[k]
                    pl[#pl + 1] = payload
                end
            end
        end
        bk_write(sh, 'ZADD', 'z', zargs)
    end
    redis.call('HSET', f, lease, pl and packed .. cmsgpack.pack(pl) or packed)
    if not next_out then next_out = lease_at end
end
if n > 0 or next_out ~= read_next_out then -- (a lease no record holds need not be kept)
    redis.call('SET', KEYS[8], string.format('%d %s', lease_at, next_out and string.format('%d', next_out) or ''),
               'PX', lease_at - now + lease_ms)
end
out[6] = packed
out[7] = returned
inflight_forget(sh, f, expired)

-- A shard in small keys grows by a few bucket splits a claim while it is
-- full (lib/bucket.lua): each moves one small bucket, so a claim stays short.
-- A converting shard moves a chunk of its old keys into buckets.
if batch > 0 then
    bk_grow(sh, 16)
    bk_drain(sh, 256)
end
local first = bk_min(sh)
if first then
    out[3] = math.floor(tonumber(first))
    if out[3] <= now then out[4] = bk_due_count(sh, now) end
end
return out
