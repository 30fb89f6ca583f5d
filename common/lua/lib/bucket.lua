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
-- IDs that live there (one call per bucket touched). A shard converted
-- from one key moves its IDs into buckets as they are met, and the rest a
-- chunk at a time: lib/bucket_promote.lua (bk_promote, bk_drain), which
-- this file pastes in among its functions.
-- #include chunks

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
                 x = head .. 'x' .. tail, k = head .. 'k' .. tail, o = head .. 'o' .. tail,
                 v = head .. 'v' .. tail }
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
    local q = redis.pcall('EXISTS', z, sh.p, sh.r, sh.o, sh.v, head .. 'q' .. tail)
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

-- A shard in one key keeps its watch records (kind 'o', lib/watch.lua) in
-- small hashes all the same, o:wJ, J by linear hashing on bk_hash as a
-- bucket is chosen, with a state of their own in v, "b s c" (2^b + s
-- hashes, c records): an offline ID then costs its ID and ~20 bytes in a
-- listpack instead of a hashtable entry. One whose records are in the one
-- hash o (lapse of 2026-11-27 before these) keeps that hash. When such a
-- shard is converted to buckets, its watch hashes are old keys like z, p,
-- r and o, moved ID by ID (bk_promote, bk_drain).
local BK_WLOAD = 48 -- records a watch hash holds on average at most

-- The watch hashes' layout in v's value st: { b, s, c, n, at } (n, s and
-- at as a shard's, for bk_at and bk_group), or nil.
local function bk_wparse(st)
    local b, s, c = string.match(st or '', '^(%d+) (%d+) (%d+)$')
    if not b then return nil end
    return { b = tonumber(b), s = tonumber(s), c = tonumber(c), n = 2 ^ tonumber(b), at = {} }
end

-- A shard in one key's watch layout (read once a call): v's, a fresh one
-- (no record yet), or false when the records are in the one hash o.
local function bk_wopen(sh)
    if sh.w ~= nil then return sh.w end
    if redis.call('EXISTS', sh.v, sh.o) == 0 then -- (a shard nobody watches: one call, as before)
        sh.w = { b = 0, s = 0, c = 0, n = 1, at = {} }
    else
        sh.w = bk_wparse(redis.call('GET', sh.v)) or false
    end
    return sh.w
end

local function bk_wkey(sh, j)
    return sh.o .. ':w' .. j
end

-- Splits watch hashes while they hold more than BK_WLOAD records on
-- average, up to max a call (each a few dozen records), as grow.lua does
-- buckets; then writes v.
local function bk_wgrow(sh, w, max)
    local k = 0
    while k < max and w.c > BK_WLOAD * (w.n + w.s) do
        bk_split_hash(bk_wkey(sh, w.s), bk_wkey(sh, w.s + w.n), w.s + w.n, 2 * w.n)
        w.s = w.s + 1
        if w.s == w.n then w.b, w.n, w.s = w.b + 1, 2 * w.n, 0 end
        w.at = {}
        k = k + 1
    end
    redis.call('SET', sh.v, string.format('%d %d %d', w.b, w.s, w.c))
end

-- cmd (HMGET, HSET, HDEL) on the watch hashes of a shard in one key, laid
-- out by w: HMGET's replies in list's order; else the sum of the replies.
local function bk_wcall(sh, w, cmd, list, from, to)
    local stride = cmd == 'HSET' and 2 or 1
    local g, order, pos = bk_group(w, list, from, to, stride, cmd == 'HMGET') -- (w: n, s, at as a shard's)
    if cmd == 'HMGET' then
        local got = {}
        for _, j in ipairs(order) do
            local part = chunks_read(cmd, bk_wkey(sh, j), g[j])
            for q = 1, #pos[j] do got[pos[j][q]] = part[q] end
        end
        return got
    end
    local sum = 0
    for _, j in ipairs(order) do sum = sum + bk_call(cmd, bk_wkey(sh, j), nil, nil, g[j], 1, #g[j]) end
    if sum ~= 0 or cmd == 'HSET' then
        w.c = w.c + (cmd == 'HSET' and sum or -sum)
        bk_wgrow(sh, w, cmd == 'HSET' and 4 or 0)
    end
    return sum
end

-- Whether the shard may hold anything of kind ('p' payloads, 'r' repeat
-- records, 'o' watch records): the hash exists (one key; for 'o', the watch
-- hashes hold a record), the flag is set (buckets).
local function bk_has(sh, kind)
    if sh.one then
        if kind == 'o' then
            local w = bk_wopen(sh)
            return w == false or w.c > 0
        end
        return redis.call('EXISTS', sh[kind]) == 1
    end
    return string.find(sh.flags, kind, 1, true) ~= nil
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

-- A converting shard's IDs move from its old keys into buckets before
-- bk_read, bk_write and bk_one touch them (bk_promote), the rest by claims
-- and naps (bk_drain): lib/bucket_promote.lua, pasted here, below what it
-- uses and above what calls it.
-- #include bucket_promote

-- A read per ID (ZMSCORE, HMGET, SMISMEMBER) of kind's key(s): the
-- replies in list's order (false for none), as chunks_read.
local function bk_read(sh, cmd, kind, list, from, to)
    from, to = from or 1, to or #list
    if sh.one then
        local w = kind == 'o' and bk_wopen(sh)
        if w then return bk_wcall(sh, w, cmd, list, from, to) end
        return chunks_read(cmd, sh[kind], list, from, to)
    end
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
    if sh.one then
        local w = kind == 'o' and bk_wopen(sh)
        if w then return bk_wcall(sh, w, cmd, list, from, to) end
        return bk_call(cmd, sh[kind], o1, o2, list, from, to)
    end
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
    if sh.one then
        -- (watch records go through bk_read and bk_write, which keep v's count)
        if kind == 'o' then error('bk_one: watch records take bk_read and bk_write') end
        return redis.call(cmd, sh[kind], id, ...)
    end
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
