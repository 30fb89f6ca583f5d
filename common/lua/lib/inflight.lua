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
-- #include chunks
-- #include bucket

-- A record that starts with a space is packed (cmsgpack, after the space).
local INFLIGHT_PACKED = string.byte(' ')

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
    if string.byte(rec, 1) == INFLIGHT_PACKED then return cmsgpack.unpack(string.sub(rec, 2)) end
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
    if not c.map and c.finds < 8 and not inflight_out(lease) and string.byte(c.rec, 1) ~= INFLIGHT_PACKED
            and string.find(id, '[^%d%-]') then
        c.finds = c.finds + 1
        local at = 1
        while true do
            local b, e = string.find(c.rec, id .. ' ', at, true)
            if not b then return nil end
            if b == 1 or string.sub(c.rec, b - 1, b - 1) == ' ' then -- the whole token: the ID
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
