-- watch: recovery (docs/protocol.md, "Recovered events"; docs/design.md). An ID written with recovery on
-- ("watch", an ingress rule's recover = true) has a watch record in o (kind
-- 'o' of lib/bucket.lua, beside its payload): "" while it is online, and
-- "D F" once its timeout for deadline D fired and Kafka took the event at F
-- (stored as D and F - D, watch_record)
-- (ack.lua): offline. The next touch, extend or watch of an offline ID
-- (apply.lua), or one that landed while its timeout was being dispatched
-- (ack.lua), queues its recovered event: the member WATCH_MARK .. ID in z,
-- due at once, with the payload "D F R" (R: when it came back). The scanner
-- sends that member's event as "recovered" (scanner/dispatch.c); claim,
-- lease and ack are those of any due ID, so it is at least once and, its
-- content fixed when queued, every copy is the same. It is queued only
-- after Kafka took the timeout, so it comes after it on the ID's partition.
-- No ID begins with byte 1 (the line protocol forbids control bytes), so
-- the member is no ID's own; common/hash.c places it where its ID lives.
-- n counts the shard's offline IDs. A cancel or repeat forgets the record.
--
-- A split moves an ID's record to its new shard with its first write there.
-- If its timeout was in flight in the old shard at that moment, the old
-- shard keeps a busy record "B <ms>" (watch_busy) instead: once Kafka took
-- that timeout, the old shard's ack queues the recovered event there (the
-- ID was written in its new shard while the timeout went out); a timeout
-- never delivered is claimed again, found stale (the ID lives in its new
-- shard) and dropped with its busy record (drop.lua); the retention
-- forgets one left over (forget.lua). Nothing else reads or moves it.
-- #include bucket
local WATCH_MARK = '\1'

local function watch_is_mark(id)
    return string.byte(id, 1) == 1
end

-- An offline record: "D F" written as D and F - D (a few digits, not
-- thirteen: in a bucket's listpack an offline ID costs its ID and ~20
-- bytes more), and back.
local function watch_record(d, f)
    return string.format('%d %d', d, f - d)
end

-- A busy record (above), made at now (ms), and whether rec is one.
local function watch_busy(now)
    return string.format('B %d', now)
end

local function watch_is_busy(rec)
    return rec ~= nil and rec ~= false and string.byte(rec, 1) == 66 -- 'B'
end

-- Stale twins ids (out of the zset already) leave the shard: their
-- payloads, repeat records and busy watch records (their timeouts are
-- never sent: drop.lua, and claim.lua when it drops them itself).
local function watch_drop_twins(sh, ids)
    bk_write(sh, 'HDEL', 'p', ids)
    bk_write(sh, 'HDEL', 'r', ids)
    if #ids > 0 and bk_has(sh, 'o') then
        local cur, busy = bk_read(sh, 'HMGET', 'o', ids), {}
        for k = 1, #ids do
            if watch_is_busy(cur[k]) then busy[#busy + 1] = ids[k] end
        end
        bk_write(sh, 'HDEL', 'o', busy)
    end
end

-- The deadline and fire time of an offline record, or nil ("": online).
-- (A second number of 10^12 or more is a fire time itself: lapse wrote
-- "D F" until the compact form; an offset that large would need a deadline
-- before 1996.)
local function watch_parse(rec)
    local d, off = string.match(rec, '^(%d+) (%-?%d+)$')
    if not d then return nil end
    d, off = tonumber(d), tonumber(off)
    if off >= 1e12 then return d, off end
    return d, d + off
end

-- Adds d to the shard's count of offline IDs.
local function watch_count(sh, d)
    if d ~= 0 then redis.call('INCRBY', bk_key(sh, 'n'), d) end
end

-- Walks a page of the shard's watch records, about want of them from cursor
-- (a string, "0": the start): calls visit(key, { id, record, ... }) for each
-- hash it reads, the one hash o or one bucket of it. Returns the next
-- cursor, "0" when the walk is over. With buckets, or a one-key shard's
-- watch hashes, the cursor is a hash's number: a few dozen records each,
-- read whole.
local function watch_page(sh, cursor, want, visit)
    local w = sh.one and bk_wopen(sh)
    if sh.one and not w then -- (the one hash of before: lib/bucket.lua)
        local r = redis.call('HSCAN', sh.o, cursor, 'COUNT', want)
        visit(sh.o, r[2])
        return r[1]
    end
    local j, last, seen = tonumber(cursor) or 0, w and w.n + w.s - 1 or sh.n + sh.s - 1, 0
    while j <= last and seen < want do
        local key = w and bk_wkey(sh, j) or sh.o .. ':' .. j
        local all = redis.call('HGETALL', key)
        visit(key, all)
        seen, j = seen + #all / 2 + 1, j + 1
    end
    if j <= last then return string.format('%d', j) end
    return '0'
end

-- Queues the recovered events of list { id, "D F R", ... } (strings), due
-- at now (a decimal string).
local function watch_queue(sh, list, now)
    if #list == 0 then return end
    local zargs, pargs = {}, {}
    for i = 1, #list, 2 do
        zargs[#zargs + 1] = now
        zargs[#zargs + 1] = WATCH_MARK .. list[i]
        pargs[#pargs + 1] = WATCH_MARK .. list[i]
        pargs[#pargs + 1] = list[i + 1]
    end
    bk_write(sh, 'HSET', 'p', pargs)
    bk_write(sh, 'ZADD', 'z', zargs)
end

-- Writes the watch records of final { [id] = "" or "D F", or false to
-- forget }.
local function watch_write(sh, final)
    local set, del = {}, {}
    for id, v in pairs(final) do
        if v then
            set[#set + 1] = id
            set[#set + 1] = v
        else
            del[#del + 1] = id
        end
    end
    bk_write(sh, 'HDEL', 'o', del)
    bk_write(sh, 'HSET', 'o', set)
end
