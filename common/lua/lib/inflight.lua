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
-- #include chunks

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
