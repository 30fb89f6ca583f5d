-- claim.lua of lapse at 0ca6362 (2026-11-27, before the watch hashes), expanded by
-- scripts/lua-source: what a scanner of that release runs (tests/integration/0752).
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
-- inflight: the deadlines of IDs in flight (lib: pasted into the scripts
-- that say `-- #include inflight`, by scripts/lua-source).
--
-- f (KEYS[3]) holds one record per lease, not one entry per ID: the field
-- is the lease (as a string, "1795322057804.25"), the value the IDs of
-- that claim and the deadlines being dispatched for them. Two kinds
-- (docs/design.md, "The claim"):
--
--   "<ms>.25", a scanner's claim (claim.lua): its one-shot IDs left the
--     zset when claimed, so the record is all that holds them until the
--     ack deletes it (ack.lua); a repeating ID stays in the zset with the
--     lease as its score. When the lease runs out unacknowledged, the
--     record's IDs come back (inflight_back): claim.lua claims them again,
--     acquire.lua (a new holder) puts them back in the zset.
--   "<ms>.75", a producer's take during a split (take.lua), and "<ms>.5", a
--     claim of lapse before 2026-11-26 (still found after an upgrade): the
--     IDs stay in the zset with the lease as their score, so an ID is in
--     flight while its score is the lease; the record goes when no ID holds
--     it any more (inflight_forget).
--
-- A claim's record (".25") is cmsgpack of its groups { deadline, { id, ...
-- }, ... } (IDs that share a deadline), then cmsgpack of its pairs { id,
-- deadline, ... }, then, when the claim carried payloads, cmsgpack of
-- { id, payload, ... } (the
-- payloads of its one-shot IDs: ack.lua deletes an ID's stored payload, and
-- an ID claimed again meanwhile must still find its own when its record
-- comes back). The first part is also claim.lua's reply: one string, built
-- by one C call, binary-safe (no ID needs checking for separators). The
-- other kinds are "id deadline id deadline ...", or, when an ID is empty or
-- holds a space (never written by lapse), a space and then cmsgpack of
-- { id, deadline, ... }.
-- bucket: where an ID's score, payload and repeat record live inside its
-- shard (layout.h; docs/design.md, "Small keys").
--
-- A shard comes in one of two forms. "One key": the zset z, the hashes p,
-- r and o (lapse before 2026-11-27, kept as it is). "Buckets": 2^b + s small
-- zsets z:J, with their payloads, repeat records and watch records
-- (lib/watch.lua) beside them in p:J, r:J and o:J, where every key stays
-- small enough for Redis's compact listpack encoding; the index x (two
-- levels, bk_lower: J -> a lower bound of bucket J's lowest score) says
-- which buckets can hold due IDs; the state k ("b s" and flag letters: "p"
-- some bucket may hold payloads, "r" repeat records, "o" watch records)
-- says which form and where an ID lives. Its bucket follows linear hashing on h, the
-- ID's bucket hash (bk_hash; lapse_bucket_hash in common/bucket.c): J = h mod
-- 2^b, or h mod 2^(b+1) when that is below s (bucket J was split already).
-- grow.lua splits bucket s, one at a time, as the shard fills; the hash is
-- independent of the shard hash, so a shard split moves no more than it
-- did. Every key is named after z, p or r ("z:J" appends ":J"; x and k swap
-- the kind letter), so on a Cluster it keeps the shard's hash tag.
--
-- The index is a lower bound, never more: every write of a score into a
-- bucket lowers its entry to that score if it was higher (ZADD LT, one call
-- per script); a removal or a later score leaves it low, and a claim that
-- finds a bucket's entry due puts it right (bk_settle). So a due ID is
-- always behind a due entry, and an entry costs at most one look too many.
--
-- The scripts call bk_read and bk_write where a one-key shard took one
-- variadic command: the same commands, sent to each bucket's key with the
-- IDs that live there (one call per bucket touched).

local BK_PRIME = 4294967291 -- the largest prime below 2^32
local BK_LOAD = 64 -- IDs a bucket not split at its level holds at most on average (bk_full)

-- The ID's bucket hash: a polynomial of its bytes with base 1000003
-- modulo a prime, then multiplied by 2654435761 modulo 2^32 (Knuth's
-- multiplicative hash) and rotated by 16 bits, so that its low bits, which
-- pick the bucket, are the product's well-mixed high bits. Exact in Lua's
-- doubles (every product stays below 2^53); common/bucket.c has the same.
local function bk_hash(id)
    local h = 0
    for k = 1, #id do h = (h * 1000003 + string.byte(id, k)) % BK_PRIME end
    local hi, lo = math.floor(h / 65536), h % 65536
    local x = (lo * 2654435761 + (hi * 2654435761 % 65536) * 65536) % 4294967296
    return math.floor(x / 65536) + (x % 65536) * 65536
end

-- The shard of keys z, p, r: its form, read from k (st: k's value when the
-- caller read it already, false when absent). (A script that has only z
-- and another key of the shard passes that one as p and no r: p and r are
-- then named from z.)
local function bk_open(z, p, r, st)
    local i = 1
    while string.byte(z, i) == string.byte(p, i) do i = i + 1 end
    local head, tail = string.sub(z, 1, i - 1), string.sub(z, i + 1)
    if not r then p, r = head .. 'p' .. tail, head .. 'r' .. tail end
    local sh = { z = z, p = p, r = r, m = head .. 'm' .. tail, head = head, tail = tail, at = {},
                 x = head .. 'x' .. tail, k = head .. 'k' .. tail, o = head .. 'o' .. tail }
    -- On a Redis Cluster whose slot for this shard is migrating, a key the
    -- script did not declare that is not (or no longer) here is refused,
    -- and a script refused half-way would leave half its writes. So every
    -- script opens the shard before its first write, and here a refusal
    -- ends it whole, as TRYAGAIN (which the programs retry: the slot moves
    -- in milliseconds a key). k is not declared; a shard in buckets has k,
    -- so it also asks for a key that never exists (q), which only a
    -- migrating slot refuses. A slot stable now stays so for the script.
    if st == nil then
        st = redis.pcall('GET', sh.k)
        if type(st) == 'table' and st.err then
            error({ err = 'TRYAGAIN shard keys moving (' .. st.err .. ')' })
        end
    end
    if not st then
        sh.one = true
        return sh
    end
    -- (q: the probe; z, p, r: a shard converted from one zset, by init
    -- --small-keys on a namespace that had data, while its old keys still
    -- hold some: bk_promote)
    local q = redis.pcall('EXISTS', z, sh.p, sh.r, sh.o, head .. 'q' .. tail)
    if type(q) == 'table' and q.err then
        error({ err = 'TRYAGAIN shard keys moving (' .. q.err .. ')' })
    end
    local b, s, fl = string.match(st, '^(%d+) (%d+) ?(%a*)$')
    sh.b, sh.s, sh.flags = tonumber(b), tonumber(s), fl or ''
    sh.n = 2 ^ sh.b
    sh.old = q > 0
    sh.promoted = {}
    return sh
end

-- The shard's other keys by kind letter ('s', 'b', ...: layout.h).
local function bk_key(sh, letter)
    return sh.head .. letter .. sh.tail
end

-- The bucket of id (remembered for the rest of the call in sh.at).
local function bk_at(sh, id)
    local j = sh.at[id]
    if j then return j end
    local h = bk_hash(id)
    j = h % sh.n
    if j < sh.s then j = h % (2 * sh.n) end
    sh.at[id] = j
    return j
end

-- Whether the shard may hold anything of kind ('p' payloads, 'r' repeat
-- records): the hash exists (one key), the flag is set (buckets).
local function bk_has(sh, kind)
    if sh.one then return redis.call('EXISTS', sh[kind]) == 1 end
    return string.find(sh.flags, kind, 1, true) ~= nil
end

-- Writes the state key from sh (buckets).
local function bk_save(sh)
    redis.call('SET', sh.k, string.format('%d %d %s', sh.b, sh.s, sh.flags))
end

-- Sets kind's flag before its first write (buckets).
local function bk_flag(sh, kind)
    if sh.one or string.find(sh.flags, kind, 1, true) then return end
    sh.flags = sh.flags .. kind
    bk_save(sh)
end

local BK_STRIDE = { ZADD = 2, HSET = 2 }

-- cmd on key with opts (up to two words) and list[from..to], in chunks;
-- the sum of the integer replies.
local function bk_call(cmd, key, o1, o2, list, from, to)
    local sum, step = 0, 1000
    for k = from, to, step do
        local last = math.min(k + step - 1, to)
        local n
        if o2 then n = redis.call(cmd, key, o1, o2, unpack(list, k, last))
        elseif o1 then n = redis.call(cmd, key, o1, unpack(list, k, last))
        else n = redis.call(cmd, key, unpack(list, k, last)) end
        if type(n) == 'number' then sum = sum + n end
    end
    return sum
end

-- list[from..to] by bucket: { [J] = the items }, the Js in first-seen
-- order, and (with places) { [J] = each item's place in list }.
local function bk_group(sh, list, from, to, stride, places)
    local g, order, pos = {}, {}, places and {} or nil
    for i = from, to, stride do
        local id = list[i] -- (HSET pairs: the ID first)
        local j = bk_at(sh, id)
        local t = g[j]
        if not t then
            t = {}
            g[j] = t
            order[#order + 1] = j
            if pos then pos[j] = {} end
        end
        for q = 0, stride - 1 do t[#t + 1] = list[i + q] end
        if pos then pos[j][#pos[j] + 1] = i - from + 1 end
    end
    return g, order, pos
end

-- The index has two levels, so that no key of it grows past ~200 KB (a
-- bucket's entry is ~90 B): group g's index x:g holds buckets g*BK_GROUP ..
-- (g+1)*BK_GROUP-1 (bucket J -> a lower bound of its lowest score), and
-- the top index x holds each group's lowest entry (g -> a lower bound).
local BK_GROUP = 2048

local function bk_group_of(j)
    return math.floor(j / BK_GROUP)
end

-- Lowers the index entries of buckets { [J] = score string } to those
-- scores where they are higher (ZADD LT), each group's and the top's: one
-- call per group touched and one for the top.
local function bk_lower(sh, low)
    local gx, gmin = {}, {}
    for j, sc in pairs(low) do
        local g = bk_group_of(j)
        local t = gx[g]
        if not t then t = {}; gx[g] = t end
        t[#t + 1] = sc
        t[#t + 1] = j
        if not gmin[g] or tonumber(sc) < tonumber(gmin[g]) then gmin[g] = sc end
    end
    local top = {}
    for g, t in pairs(gx) do
        bk_call('ZADD', sh.x .. ':' .. g, 'LT', nil, t, 1, #t)
        top[#top + 1] = gmin[g]
        top[#top + 1] = g
    end
    bk_call('ZADD', sh.x, 'LT', nil, top, 1, #top)
end

-- Puts group g's top entry right: its index's lowest entry, or none.
local function bk_settle_group(sh, g)
    local first = redis.call('ZRANGE', sh.x .. ':' .. g, 0, 0, 'WITHSCORES')[2]
    if first then
        redis.call('ZADD', sh.x, first, g)
    else
        redis.call('ZREM', sh.x, g)
    end
end

-- The buckets whose index entry is at most max, lowest top entry first,
-- up to limit of them. A group whose top entry is due but none of its
-- buckets' is gets its top entry put right (unless sh.readonly).
local function bk_due(sh, max, limit)
    local out = {}
    for _, g in ipairs(redis.call('ZRANGEBYSCORE', sh.x, '-inf', max)) do
        local js = limit == math.huge and redis.call('ZRANGEBYSCORE', sh.x .. ':' .. g, '-inf', max)
            or redis.call('ZRANGEBYSCORE', sh.x .. ':' .. g, '-inf', max, 'LIMIT', 0, limit - #out)
        if #js == 0 and not sh.readonly then bk_settle_group(sh, g) end
        for _, j in ipairs(js) do out[#out + 1] = tonumber(j) end
        if #out >= limit then break end
    end
    return out
end

-- A shard being converted (sh.old: its one zset, payload or repeat hash
-- still exists): before anything reads or writes an ID, the ID's score,
-- payload and repeat record move from the old keys into its bucket (list
-- [from..to], the IDs every stride-th from off). Programs of this version
-- write buckets only, so what a bucket holds already is newer and stays
-- (NX). Each ID moves once a call (sh.promoted). Claims also move the old
-- zset's due IDs first, and claims and naps the rest a chunk at a time
-- (bk_drain); once the old keys are gone the shard is buckets only.
local function bk_promote(sh, list, from, to, stride, off)
    if not sh.old or sh.readonly then return end
    local ids = {}
    for i = from + off, to, stride do
        local id = list[i]
        if not sh.promoted[id] then
            sh.promoted[id] = true
            ids[#ids + 1] = id
        end
    end
    if #ids == 0 then return end
    local sc = chunks_read('ZMSCORE', sh.z, ids)
    local pl = redis.call('EXISTS', sh.p) == 1 and chunks_read('HMGET', sh.p, ids) or {}
    local rp = redis.call('EXISTS', sh.r) == 1 and chunks_read('HMGET', sh.r, ids) or {}
    local ob = redis.call('EXISTS', sh.o) == 1 and chunks_read('HMGET', sh.o, ids) or {}
    local gone, zg, xl = {}, {}, {}
    for k = 1, #ids do
        local id = ids[k]
        if sc[k] or pl[k] or rp[k] or ob[k] then
            gone[#gone + 1] = id
            local j = bk_at(sh, id)
            if sc[k] then
                local t = zg[j]
                if not t then t = {}; zg[j] = t end
                t[#t + 1] = sc[k]
                t[#t + 1] = id
                if not xl[j] or tonumber(sc[k]) < tonumber(xl[j]) then xl[j] = sc[k] end
            end
            if pl[k] then
                bk_flag(sh, 'p')
                redis.call('HSETNX', sh.p .. ':' .. j, id, pl[k])
            end
            if rp[k] then
                bk_flag(sh, 'r')
                redis.call('HSETNX', sh.r .. ':' .. j, id, rp[k])
            end
            if ob[k] then
                bk_flag(sh, 'o')
                redis.call('HSETNX', sh.o .. ':' .. j, id, ob[k])
            end
        end
    end
    if #gone == 0 then return end
    for j, t in pairs(zg) do bk_call('ZADD', sh.z .. ':' .. j, 'NX', nil, t, 1, #t) end
    bk_lower(sh, xl)
    chunks_write('ZREM', sh.z, gone)
    chunks_write('HDEL', sh.p, gone)
    chunks_write('HDEL', sh.r, gone)
    chunks_write('HDEL', sh.o, gone)
    sh.old = redis.call('EXISTS', sh.z, sh.p, sh.r, sh.o) > 0
end

-- A converting shard: moves up to max IDs of its old keys into buckets,
-- the earliest deadlines first, then payloads and repeat records left of
-- IDs in flight. Returns how many it looked at (0: nothing left).
local function bk_drain(sh, max)
    if sh.one or not sh.old then return 0 end
    local ids = redis.call('ZRANGE', sh.z, 0, max - 1)
    for _, key in ipairs({ sh.p, sh.r, sh.o }) do
        if #ids == 0 and redis.call('EXISTS', key) == 1 then
            ids = redis.call('HRANDFIELD', key, max)
        end
    end
    bk_promote(sh, ids, 1, #ids, 1, 0)
    return #ids
end

-- A read per ID (ZMSCORE, HMGET, SMISMEMBER) of kind's key(s): the
-- replies in list's order (false for none), as chunks_read.
local function bk_read(sh, cmd, kind, list, from, to)
    from, to = from or 1, to or #list
    if sh.one then return chunks_read(cmd, sh[kind], list, from, to) end
    bk_promote(sh, list, from, to, 1, 0)
    local g, order, pos = bk_group(sh, list, from, to, 1, true)
    local got = {}
    for _, j in ipairs(order) do
        local part = chunks_read(cmd, sh[kind] .. ':' .. j, g[j])
        local ps = pos[j]
        for q = 1, #ps do got[ps[q]] = part[q] end
    end
    if sh.old and sh.readonly then -- (a reader that must not move them: the old keys too)
        local old = chunks_read(cmd, sh[kind], list, from, to)
        for q = 1, to - from + 1 do
            if not got[q] or got[q] == 0 then got[q] = old[q] end
        end
    end
    return got
end

-- A write (ZADD score/ID pairs, HSET ID/value pairs, HDEL, ZREM) of
-- list[from..to] with up to two option words (ZADD's "GT", "CH", "NX"):
-- the sum of the replies. A ZADD lowers the index entry of each bucket it
-- writes to its lowest score written (ZADD LT: the index stays a lower
-- bound whatever ZADD's options left unwritten).
local function bk_write(sh, cmd, kind, list, from, to, o1, o2)
    from, to = from or 1, to or #list
    if to < from then return 0 end
    if sh.one then return bk_call(cmd, sh[kind], o1, o2, list, from, to) end
    if cmd == 'HSET' and kind ~= 'z' then bk_flag(sh, kind) end
    local stride = BK_STRIDE[cmd] or 1
    bk_promote(sh, list, from, to, stride, cmd == 'ZADD' and 1 or 0)
    local sum = 0
    if stride == 2 and cmd == 'ZADD' then -- (score, ID): group by the ID
        local g, order = {}, {}
        for i = from, to, 2 do
            local j = bk_at(sh, list[i + 1])
            local t = g[j]
            if not t then t = {}; g[j] = t; order[#order + 1] = j end
            t[#t + 1] = list[i]
            t[#t + 1] = list[i + 1]
        end
        local low = {}
        for _, j in ipairs(order) do
            local t = g[j]
            sum = sum + bk_call(cmd, sh.z .. ':' .. j, o1, o2, t, 1, #t)
            -- bucket s, the next to split, filling up: the shard may need
            -- more buckets, and its sleeping scanner is woken to see
            -- (lib/wake.lua), as an idle one does not look by itself
            if j == sh.s and not sh.filling and redis.call('ZCARD', sh.z .. ':' .. j) > BK_LOAD * 0.75 then
                sh.filling = true
            end
            local lows = t[1]
            for q = 3, #t, 2 do
                if tonumber(t[q]) < tonumber(lows) then lows = t[q] end
            end
            low[j] = lows
        end
        bk_lower(sh, low)
        return sum
    end
    local g, order = bk_group(sh, list, from, to, stride)
    for _, j in ipairs(order) do
        local t = g[j]
        sum = sum + bk_call(cmd, sh[kind] .. ':' .. j, o1, o2, t, 1, #t)
    end
    return sum
end

-- One ID's command (ZSCORE, HGET, HSETNX, ZREM, ...; never ZADD: bk_write
-- keeps the index): args after the key.
local function bk_one(sh, cmd, kind, id, ...)
    if sh.one then return redis.call(cmd, sh[kind], id, ...) end
    if (cmd == 'HSETNX' or cmd == 'HSET') and kind ~= 'z' then bk_flag(sh, kind) end
    bk_promote(sh, { id }, 1, 1, 1, 0)
    local j = bk_at(sh, id)
    return redis.call(cmd, sh[kind] .. ':' .. j, id, ...)
end

-- During a split: which of ids were written in this new shard (its split
-- markers m, SMISMEMBER; 1 or 0 each), in their buckets, or in the one set
-- of a shard that was one zset when the split began.
local function bk_moved(sh, ids)
    if sh.one then return chunks_read('SMISMEMBER', sh.m, ids) end
    local got = bk_read(sh, 'SMISMEMBER', 'm', ids)
    if redis.call('EXISTS', sh.m) == 1 then
        local old = chunks_read('SMISMEMBER', sh.m, ids)
        for k = 1, #ids do
            if old[k] == 1 then got[k] = 1 end
        end
    end
    return got
end

-- The shard's lowest score (a lower bound of it with buckets), or nil.
local function bk_min(sh)
    local m = redis.call('ZRANGE', sh.one and sh.z or sh.x, 0, 0, 'WITHSCORES')[2]
    if sh.old then -- (a converting shard: its old zset too)
        local o = redis.call('ZRANGE', sh.z, 0, 0, 'WITHSCORES')[2]
        if o and (not m or tonumber(o) < tonumber(m)) then m = o end
    end
    return m
end

-- Buckets: puts bucket j's index entry right after a claim took from it.
local function bk_settle(sh, j)
    local first = redis.call('ZRANGE', sh.z .. ':' .. j, 0, 0, 'WITHSCORES')[2]
    local xg = sh.x .. ':' .. bk_group_of(j)
    if first then
        redis.call('ZADD', xg, first, j)
    else
        redis.call('ZREM', xg, j)
    end
    bk_settle_group(sh, bk_group_of(j))
end

-- Buckets, for a claim that visits many: notes bucket j's lowest score
-- now (first: the score, false when the bucket is empty, nil to read it
-- here) in notes, and bk_settle_all writes them: one ZADD and one ZREM per
-- group touched, a read of its lowest entry, and the top entries of all
-- in one ZADD, where bk_settle per bucket cost four calls. Nothing may write a bucket between the two (its ZADD LT
-- would be undone by the note).
local function bk_settle_note(sh, notes, j, first)
    if first == nil then first = redis.call('ZRANGE', sh.z .. ':' .. j, 0, 0, 'WITHSCORES')[2] or false end
    local g = bk_group_of(j)
    local t = notes[g]
    if not t then t = { add = {}, rem = {} }; notes[g] = t end
    if first then
        t.add[#t.add + 1] = first
        t.add[#t.add + 1] = j
    else
        t.rem[#t.rem + 1] = j
    end
end

local function bk_settle_all(sh, notes)
    local top, gone = {}, {}
    for g, t in pairs(notes) do
        local xg = sh.x .. ':' .. g
        bk_call('ZADD', xg, nil, nil, t.add, 1, #t.add)
        bk_call('ZREM', xg, nil, nil, t.rem, 1, #t.rem)
        local first = redis.call('ZRANGE', xg, 0, 0, 'WITHSCORES')[2]
        if first then
            top[#top + 1] = first
            top[#top + 1] = g
        else
            gone[#gone + 1] = g
        end
    end
    bk_call('ZADD', sh.x, nil, nil, top, 1, #top)
    bk_call('ZREM', sh.x, nil, nil, gone, 1, #gone)
end

-- How many IDs are due at now: exact with one key; with buckets, those of
-- the first 8 due buckets (a lower bound when more are due: the scanner
-- only needs to know that some are, and a claim that leaves some asks this
-- every time).
local function bk_due_count(sh, now)
    if sh.one then return redis.call('ZCOUNT', sh.z, '-inf', now) end
    local js = bk_due(sh, now, 8)
    local n = 0
    for _, j in ipairs(js) do n = n + redis.call('ZCOUNT', sh.z .. ':' .. j, '-inf', now) end
    if sh.old then n = n + redis.call('ZCOUNT', sh.z, '-inf', now) end
    return n
end

-- Buckets: whether the shard has outgrown them. The buckets not split at
-- this level (s .. 2^b - 1) each hold 1/2^b of the IDs: when up to four of
-- them hold more than BK_LOAD on average, bucket s is split (bk_grow).
-- BK_LOAD keeps buckets at 32..64 IDs, a Poisson tail well below Redis's
-- listpack limit (zset-max-listpack-entries, 128 by default).
local function bk_full(sh)
    if sh.one then return false end
    -- (bucket s alone first: an idle shard's scanner asks this every nap)
    local c, k = redis.call('ZCARD', sh.z .. ':' .. sh.s), 1
    if c <= BK_LOAD * 0.75 then return false end
    for j = sh.s + 1, math.min(sh.s + 3, sh.n - 1) do
        c, k = c + redis.call('ZCARD', sh.z .. ':' .. j), k + 1
    end
    return c > BK_LOAD * k
end

-- Moves the entries of hash key src whose ID lives in bucket dst now (of
-- n2 at the next level) to hash key to.
local function bk_split_hash(src, to, dst, n2)
    local all = redis.call('HGETALL', src)
    local keep, move = {}, {}
    for i = 1, #all, 2 do
        local t = bk_hash(all[i]) % n2 == dst and move or keep
        t[#t + 1] = all[i]
        t[#t + 1] = all[i + 1]
    end
    if #move == 0 then return end
    redis.call('DEL', src) -- rewritten whole: a smaller hash is compact again
    bk_call('HSET', src, nil, nil, keep, 1, #keep)
    bk_call('HSET', to, nil, nil, move, 1, #move)
end

-- Buckets: splits up to max buckets while the shard is full (linear
-- hashing: bucket s into s and s + 2^b by the hash's bit b, then s + 1;
-- after the last, b + 1 and s = 0). Each split moves one small bucket's
-- IDs, their payloads and repeat records (including those of IDs in
-- flight, which are out of the zset), rewrites the bucket (compact
-- again), and sets both index entries. Returns how many it split.
local function bk_grow(sh, max)
    local done = 0
    while done < max and bk_full(sh) do
        local n, src = sh.n, sh.s
        local dst, n2 = src + n, 2 * n
        local zs, zd = sh.z .. ':' .. src, sh.z .. ':' .. dst
        local all = redis.call('ZRANGE', zs, 0, -1, 'WITHSCORES')
        local keep, move = {}, {}
        for i = 1, #all, 2 do
            local t = bk_hash(all[i]) % n2 == dst and move or keep
            t[#t + 1] = all[i + 1]
            t[#t + 1] = all[i]
        end
        if #move > 0 then
            redis.call('DEL', zs)
            bk_call('ZADD', zs, nil, nil, keep, 1, #keep)
            bk_call('ZADD', zd, nil, nil, move, 1, #move)
        end
        for _, kind in ipairs({ 'p', 'r', 'o' }) do
            if bk_has(sh, kind) then
                bk_split_hash(sh[kind] .. ':' .. src, sh[kind] .. ':' .. dst, dst, n2)
            end
        end
        bk_settle(sh, src)
        bk_settle(sh, dst)
        sh.s = src + 1
        if sh.s == n then sh.b, sh.s, sh.n = sh.b + 1, 0, n2 end
        sh.at = {}
        bk_save(sh)
        done = done + 1
    end
    return done
end

-- Whether lease l is a claim's whose IDs left the zset (".25").
local function inflight_out(l)
    return string.sub(l, -3) == '.25'
end

-- The pairs { id, deadline, ... } of the record of lease l, and its
-- payloads { id = payload } (nil when none).
local function inflight_pairs(rec, l)
    if inflight_out(l) then
        local groups, flat, pl = cmsgpack.unpack(rec)
        local list = {}
        for g = 1, #groups, 2 do
            for _, id in ipairs(groups[g + 1]) do
                list[#list + 1] = id
                list[#list + 1] = groups[g]
            end
        end
        for i = 1, #flat do list[#list + 1] = flat[i] end
        if pl then
            local map = {}
            for i = 1, #pl, 2 do map[pl[i]] = pl[i + 1] end
            return list, map
        end
        return list
    end
    if string.byte(rec, 1) == 32 then return cmsgpack.unpack(string.sub(rec, 2)) end
    local list = {}
    for id, d in string.gmatch(rec, '([^ ]+) ([^ ]+)') do -- (spaces only: an ID may hold a tab)
        list[#list + 1] = id
        list[#list + 1] = d
    end
    return list
end

-- A claim's record (".25") of pairs { id, deadline, ... } and payloads
-- { id, payload, ... } (or nil).
local function inflight_encode_out(pairs, pl)
    local rec = cmsgpack.pack({}, pairs)
    if pl and #pl > 0 then rec = rec .. cmsgpack.pack(pl) end
    return rec
end

-- Any other record of pairs { id, deadline, ... }; `packed`, if given, is
-- them joined by spaces (every ID non-empty and free of spaces).
local function inflight_encode(pairs, packed)
    if packed then return packed end
    for i = 1, #pairs, 2 do
        if pairs[i] == '' or string.find(pairs[i], ' ', 1, true) then
            return ' ' .. cmsgpack.pack(pairs)
        end
    end
    return table.concat(pairs, ' ')
end

-- The IDs of claim record l (".25") that come back when it is not settled
-- (its lease ran out, or its holder lost the shard): each one neither reset
-- nor claimed since (absent from the zset z: a one-shot ID; or still
-- holding lease l: a repeating one). A reset that landed meanwhile wins.
-- Restores the stored payload of an absent one from the record unless one
-- is stored (a newer one wins), and deletes the record. Returns
-- { id, deadline, ... } of those.
local function inflight_back(sh, f, l, rec)
    local list, pl = inflight_pairs(rec, l)
    local ids = {}
    for i = 1, #list, 2 do ids[#ids + 1] = list[i] end
    local cur = bk_read(sh, 'ZMSCORE', 'z', ids)
    local back = {}
    for j = 1, #ids do
        local c = cur[j]
        if not c or c == l then
            back[#back + 1] = ids[j]
            back[#back + 1] = list[2 * j]
            if not c and pl and pl[ids[j]] then bk_one(sh, 'HSETNX', 'p', ids[j], pl[ids[j]]) end
        end
    end
    redis.call('HDEL', f, l)
    return back
end

-- An expired claim record l (".25", inflight_back's IDs) turned into what
-- an expired lease of lapse before 2026-11-26 was: its IDs back in the zset
-- with score "<ms>.5" (ms: l's), which is due, and their deadlines in a
-- record under that score. The next claims take them like any due ID (in
-- order, within the batch and the catch-up budget), see the fraction and
-- so know they came back (the deadline from the record, the place in
-- `returned`); a producer sees them in flight (apply.lua) until then.
-- Returns how many came back.
local function inflight_expire(sh, f, l, rec)
    local back = inflight_back(sh, f, l, rec)
    if #back == 0 then return 0 end
    local l5 = string.sub(l, 1, -4) .. '.5'
    local zargs = {}
    for i = 1, #back, 2 do
        zargs[#zargs + 1] = l5
        zargs[#zargs + 1] = back[i]
    end
    bk_write(sh, 'ZADD', 'z', zargs)
    redis.call('HSET', f, l5, inflight_encode(back))
    return #back / 2
end

-- Stores pairs { id, deadline, ... } under lease in f; `packed`, if given,
-- is them joined by spaces (every ID non-empty and free of spaces). A record
-- already there (two producers' takes in one millisecond) is added to.
local function inflight_add(f, lease, pairs, packed)
    local old = redis.call('HGET', f, lease)
    if old then
        local all = inflight_pairs(old, lease)
        for i = 1, #pairs do all[#all + 1] = pairs[i] end
        pairs, packed = all, nil
    end
    redis.call('HSET', f, lease, inflight_encode(pairs, packed))
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
    if not c.map and c.finds < 8 and not inflight_out(lease) and string.byte(c.rec, 1) ~= 32
            and string.find(id, '[^%d%-]') then
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
        local list = inflight_pairs(c.rec, lease)
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

-- Whether an ID of the shard still holds lease l as its score: one
-- ZCOUNT of the one key; with buckets, the scores of the IDs its record
-- lists (an ID holds a lease only while its record lists it).
local function inflight_held(sh, f, l)
    if sh.one then return redis.call('ZCOUNT', sh.z, l, l) > 0 end
    local rec = redis.call('HGET', f, l)
    if not rec then return false end
    local list = inflight_pairs(rec, l)
    local ids = {}
    for i = 1, #list, 2 do ids[#ids + 1] = list[i] end
    local cur = bk_read(sh, 'ZMSCORE', 'z', ids)
    for i = 1, #ids do
        if cur[i] and tonumber(cur[i]) == tonumber(l) then return true end
    end
    return false
end

-- Deletes the records of those leases (a lease may be listed more than
-- once) that no ID of the shard holds any more.
local function inflight_forget(sh, f, leases)
    local gone, seen = {}, {}
    for i = 1, #leases do
        local l = leases[i]
        if not seen[l] then
            seen[l] = true
            if not inflight_held(sh, f, l) then gone[#gone + 1] = l end
        end
    end
    chunks_write('HDEL', f, gone)
end
local z, p, f, r, lock, e = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[7]
local sh = bk_open(z, p, r)
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
