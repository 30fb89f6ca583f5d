-- apply: a producer's batch of operations on one shard, in one call.
--
-- KEYS: the shard's keys (layout.h): [1] z zset ID -> deadline ms (integer)
--   or lease (in flight), [2] p payloads, [3] f deadlines of in-flight IDs
--   (one record per lease, lib/inflight.lua),
--   [4] r "period_ms:fired" of repeating IDs, [5] m IDs written here during a
--   split, [6] lock, [7] e the shard's layout epoch; during a split whose old
--   shard is on this node, optionally [8..14] the old shard's keys (for "M ?")
-- ARGV[1] the producer's layout epoch, ARGV[2] a count K of plain pairs,
-- then K pairs "deadline ms", ID: extends to an absolute time, without
-- payload, of IDs no other operation of the call touches (passed straight
-- to ZADD GT when nothing here needs a closer look); then per other
-- operation: a head, the ID, and the extra arguments the head's flags
-- announce:
--   head:  the op ("t" touch, "e" extend, "r" repeat, "c" cancel), then flag
--          letters, then (not for cancel) the time: "+<ms>" relative to this
--          shard's Redis clock or "@<ms>" absolute. E.g. "e@1795322052804".
--   flags, each followed by one argument, in this order:
--     R  the repeat period in ms
--     P  the payload to store
--     M  the ID moves here in a split (its home is this new shard): "" or,
--        when its twin in the old shard is in flight with deadline D, "D"
--        (an extend must then beat D too), or "?" (with KEYS[8..14]): find
--        the twin here (see below)
--     I  with M "D": the busy twin's payload, kept by an op that brings none
--        (as it would be in one shard)
--     W  (no argument) recovery on: the ID gets a watch record (lib/watch.lua)
--     O  with M: the ID's watch record in the old shard (take.lua), kept
--        here unless this shard has one
--     G  (no argument; repeat only) sent again: a copy of it was sent
--        before and may have run (its answer lost, or its WAIT fell
--        short). If the ID holds this very repeat (repeats_on: period,
--        first point and fires, payload), it is left as it is: applied
--        again, the repeat would start its count over (seq 1 again) and
--        give a seq two deadlines.
-- Most operations are therefore two arguments: Redis turns every argument
-- into a Lua string, and that, not the writes, was most of the cost.
-- Returns the number of operations that changed something (with KEYS[8..14]:
-- { that number, a flag per "M ?" op, see the end }; when an op's time was
-- relative: { that number, those flags or "", this clock's ms }, by which
-- the producer fixes those ops' times once applied), or the error
-- "STALE <epoch>" (nothing applied) when the producer's layout is older than
-- the shard's: it must reload the layout and route again.
--
-- Invariants: producers only ever write integer deadlines, so a
-- fractional score (a lease: .25 a repeating ID claimed by a scanner, .75
-- taken by a producer in a split, .5 a claim of lapse before 2026-11-26 or
-- an expired one come back) means "in flight", and the lease's record in f
-- has the dispatched deadline (claim.lua, take.lua). A one-shot ID a
-- scanner claimed is out of the zset, in its claim's record, until the ack
-- deletes that: nothing is pending for it, so any op here simply writes
-- it, and the ack, which never touches an ID written since, leaves it (a
-- reset wins). The ack re-arms a repeating ID only if its score is still
-- that exact lease. A moving ID that changed here is added to m:
-- from then on its twin in the old shard is stale and is never fired (see
-- tools/scale/split.c). Scores are passed to Redis as exact decimal strings:
-- Lua's own number formatting keeps only 14 digits.
-- #include bucket
-- #include inflight
-- #include twins
-- #include wake
-- #include watch
local z, p, f, r, m, e = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[7]
local sh = bk_open(z, p, r)
local epoch = tonumber(redis.call('GET', e) or 0)
if tonumber(ARGV[1]) < epoch then return redis.error_reply('STALE ' .. epoch) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local changed = 0
local has_r = bk_has(sh, 'r')
local has_o = bk_has(sh, 'o')
local has_f = redis.call('EXISTS', f) == 1

-- Extends as ZADD GT of args[from..to] ("deadline", ID pairs); returns how
-- many changed something. ZADD GT is exact for an ID not in flight (added
-- when absent, raised when later, else left) and for one in flight whose
-- new deadline is past its lease (the lease is later than the deadline
-- being dispatched). It leaves an ID in flight whose new deadline falls
-- between the two (a device heard from just after its timeout fired), and
-- only then, when fewer changed than were given and something is in
-- flight, are scores read: such an ID still holds its lease (a fraction),
-- and gets the latest of its new deadlines later than the dispatched one.
-- Watchdog streams, whose extends all move deadlines on, need no read.
-- (A producer's take lease, .75, may come before its twin's deadline, but
-- takes lease moving IDs in their old shard only, where no extend lands:
-- every writer routes those to the new shard, or is refused as STALE.)
local function extend_gt(args, from, to)
    local ch = bk_write(sh, 'ZADD', 'z', args, from, to, 'GT', 'CH')
    if ch == (to - from + 1) / 2 or not has_f then return ch end
    local ids = {}
    for k = from + 1, to, 2 do ids[#ids + 1] = args[k] end
    local cur, best, raised = bk_read(sh, 'ZMSCORE', 'z', ids), {}, {}
    for k = 1, #ids do
        local id, c = ids[k], cur[k]
        if c and string.find(c, '.', 1, true) then -- in flight: left by ZADD GT
            local at = tonumber(args[from + 2 * k - 2])
            local d = best[id] or inflight_dispatched(f, c, id)
            if at > d then
                best[id], raised[id] = at, args[from + 2 * k - 2]
                ch = ch + 1
            else
                best[id] = d
            end
        end
    end
    local zargs = {}
    for id, at in pairs(raised) do
        zargs[#zargs + 1] = at
        zargs[#zargs + 1] = id
    end
    bk_write(sh, 'ZADD', 'z', zargs)
    return ch
end

-- Decode the operations into parallel arrays (nil where a flag is absent).
local OP, ID, AT, ATS, PER, PL, MV, INH, REC, WREC, AGAIN = {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}
local n, i = 0, 3 + 2 * tonumber(ARGV[2])

-- The plain pairs: ZADD GT as they are (extend_gt), unless the shard has
-- repeating IDs (an extend makes one one-shot again); then they join the
-- others. (Their watch records, if any, are settled below on their own.)
local plain_from, plain_to = 3, i - 1
if i > 3 then
    if not has_r then
        changed = extend_gt(ARGV, 3, i - 1)
    else
        for k = 3, i - 1, 2 do
            n = n + 1
            OP[n], ID[n], ATS[n] = 'e', ARGV[k + 1], ARGV[k]
        end
    end
end

-- The flag letters of a head (above), and the mark of an absolute time.
local F_REPEAT, F_PAYLOAD, F_MOVE, F_INHERIT, F_WATCH, F_WATCH_OLD, F_AGAIN = string.byte('RPMIWOG', 1, 7)
local F_FIRST, F_LAST, AT_MARK = string.byte('AZ@', 1, 3)

local relative = false -- an op's time is "+<ms>": the reply gives the clock
while i <= #ARGV do
    local h = ARGV[i]
    n = n + 1
    OP[n], ID[n] = string.sub(h, 1, 1), ARGV[i + 1]
    i = i + 2
    local j = 2
    local b = string.byte(h, j)
    while b and b >= F_FIRST and b <= F_LAST do
        if b == F_WATCH then REC[n] = true -- (no argument)
        elseif b == F_AGAIN then AGAIN[n] = true -- (no argument)
        else
            if b == F_REPEAT then PER[n] = ARGV[i]
            elseif b == F_PAYLOAD then PL[n] = ARGV[i]
            elseif b == F_MOVE then MV[n] = ARGV[i]
            elseif b == F_WATCH_OLD then WREC[n] = ARGV[i]
            elseif b == F_INHERIT then INH[n] = ARGV[i] end
            i = i + 1
        end
        j = j + 1
        b = string.byte(h, j)
    end
    if OP[n] ~= 'c' then
        local num = string.sub(h, j + 1)
        if b == AT_MARK then -- the exact digits are the score (AT: on demand)
            ATS[n] = num
        else
            AT[n] = now + tonumber(num)
            ATS[n] = string.format('%d', AT[n])
            relative = true
        end
    end
end

-- A split whose old and new shard share this node (KEYS[8..14]: the old
-- shard's keys): ops flagged "M ?" find their ID's twin in the old shard
-- here, in the same atomic call, instead of the take, seed and drop of a
-- split across nodes (three round trips, a lease and a record per take;
-- docs/design.md, "Splits: how they stay exact"). A pending
-- twin moves here with its payload and repeat record by lib/twins.lua's
-- rule (unless the ID lives here already: then it is stale) and leaves the
-- old shard; one in flight (claimed, or
-- taken by a producer of another node's split) stays, and the op must beat
-- the deadline being dispatched ("M D", payload inherited) as it would
-- after take; none: nothing to do. What each such op settled is answered
-- (see the end).
local settled = {}
local old_sh, mq, mtwin = nil, {}, {} -- (the old shard, the "M ?" IDs and their twins, for the watch records below)
if KEYS[8] then
    local zi, pi, fi, ri = KEYS[8], KEYS[9], KEYS[10], KEYS[11]
    local old = bk_open(zi, pi, ri)
    local q, twin, tpl = {}, {}, {}
    old_sh, mq, mtwin = old, q, twin
    for k = 1, n do
        if MV[k] == '?' and not twin[ID[k]] then q[#q + 1] = ID[k]; twin[ID[k]] = 'a' end
    end
    if #q > 0 then
        local si = bk_read(old, 'ZMSCORE', 'z', q)
        local mv, ms = {}, {}
        for x = 1, #q do
            local id, s = q[x], si[x]
            if s and tonumber(s) % 1 == 0 then
                mv[#mv + 1], ms[#ms + 1] = id, s
                twin[id] = 'm'
            elseif s then
                twin[id] = inflight_dispatched(fi, s, id)
                tpl[id] = bk_one(old, 'HGET', 'p', id)
            else -- a claim took it out of the zset: its payload, if any, is kept (take.lua)
                local pl = bk_one(old, 'HGET', 'p', id)
                if pl then twin[id], tpl[id] = 0, pl end
            end
        end
        if #mv > 0 then
            local pl = bk_has(old, 'p') and bk_read(old, 'HMGET', 'p', mv) or {}
            local rp = bk_has(old, 'r') and bk_read(old, 'HMGET', 'r', mv) or {}
            local _, rep = twins_copy(sh, mv, ms, pl, rp)
            if rep then has_r = true end
            bk_write(old, 'ZREM', 'z', mv)
            bk_write(old, 'HDEL', 'p', mv)
            bk_write(old, 'HDEL', 'r', mv)
        end
        for k = 1, n do
            if MV[k] == '?' then
                local tw = twin[ID[k]]
                if tw == 'a' or tw == 'm' then
                    MV[k] = ''
                    settled[#settled + 1] = '1'
                else -- busy: an extend may change nothing, and then the ID is not in m
                    MV[k] = string.format('%d', tw)
                    if not PL[k] and tpl[ID[k]] then INH[k] = tpl[ID[k]] end
                    settled[#settled + 1] = OP[k] == 'e' and '0' or '1'
                end
            end
        end
    end
end

-- Watch records (lib/watch.lua), read once for every ID of the call when
-- the shard has any, and settled op by op in order: a cancel or repeat
-- forgets the record; any other write of an offline ID brings it back (its
-- recovered event is queued); a write with recovery on (W) starts one.
local wst, wfinal, wback, wdelta = {}, {}, {}, 0
-- (a split whose old shard is on this node: the "M ?" IDs' records move
-- here from it, where this shard has none, so that an ID offline there
-- comes back here, in its new home)
local wmoved = {}
for k = 1, n do -- (a split across nodes: the producer brought them, drop.lua deletes them there)
    if WREC[k] and not wmoved[ID[k]] then
        wmoved[ID[k]] = WREC[k]
        has_o = true
    end
end
local wbusy = {} -- (online there, their timeouts in flight: busy records, unless forgotten)
local wbusy_old = {} -- (busy there already: gone if an op here forgets, else left to the ack)
if old_sh and #mq > 0 and bk_has(old_sh, 'o') then
    local recs, gone, off = bk_read(old_sh, 'HMGET', 'o', mq), {}, 0
    for x = 1, #mq do
        local rec, tw = recs[x], mtwin[mq[x]]
        if watch_is_busy(rec) then
            wbusy_old[#wbusy_old + 1] = mq[x]
        elseif rec then
            wmoved[mq[x]] = rec
            if rec == '' and (tw == 'a' or tw == 0) then
                wbusy[#wbusy + 1] = mq[x] -- claimed out of the zset: in flight (lib/watch.lua)
            else
                gone[#gone + 1] = mq[x]
                if rec ~= '' then off = off + 1 end
            end
        end
    end
    bk_write(old_sh, 'HDEL', 'o', gone)
    watch_count(old_sh, -off)
    if #gone > 0 then has_o = true end
end
-- (the plain pairs, when extend_gt took them: IDs no other op of the call
-- touches, extends without W)
local wplain = {}
if not has_r then
    for k = plain_from + 1, plain_to, 2 do wplain[#wplain + 1] = ARGV[k] end
end
if has_o then
    local ids = {}
    for k = 1, n do ids[k] = ID[k] end
    for k = 1, #wplain do ids[n + k] = wplain[k] end
    local cur = bk_has(sh, 'o') and bk_read(sh, 'HMGET', 'o', ids) or {}
    for k = 1, #ids do wst[ids[k]] = cur[k] or nil end
end
for id, rec in pairs(wmoved) do
    if wst[id] == nil then
        wst[id], wfinal[id] = rec, rec
        if rec ~= '' then wdelta = wdelta + 1 end
    end
end
local wforgot = {} -- (IDs a cancel or repeat of the call forgot: any such op wins)
for k = 1, n + #wplain do
    local op, id = OP[k] or 'e', ID[k] or wplain[k - n]
    local st = wst[id]
    if op == 'c' or op == 'r' then
        wforgot[id] = true
        if st then
            if st ~= '' then wdelta = wdelta - 1 end
            wst[id], wfinal[id] = nil, false
        end
    elseif st and st ~= '' then
        wback[#wback + 1] = id
        local d, fired = watch_parse(st)
        wback[#wback + 1] = string.format('%d %d %d', d or 0, fired or 0, now)
        wdelta = wdelta - 1
        wst[id], wfinal[id] = '', ''
    elseif REC[k] and not st then
        wst[id], wfinal[id] = '', ''
    end
end

-- The fastest path, for watchdog streams: an extend without payload in a
-- shard without repeating IDs is ZADD GT (extend_gt), so runs of them need
-- no score read and no comparison here: formatting and parsing the scores
-- of ZMSCORE replies cost Redis more than the writes.
local function plain_extend(k)
    return OP[k] == 'e' and not MV[k] and not PL[k]
end
local gargs = {}
local function flush_gt()
    if #gargs == 0 then return end
    changed = changed + extend_gt(gargs, 1, #gargs)
    gargs = {}
end

-- The fast path: runs of other touches and extends, moving IDs' included,
-- are staged and written with one variadic ZADD / HSET / HDEL / SADD each
-- (one redis.call per run instead of three or four per op: the first write
-- of each moving ID is what a split costs). Anything else (cancel, repeat,
-- an op inheriting a busy twin's payload) first writes what is staged, so
-- per-ID order is kept. The repeat hash is only touched when it exists.
local zargs, pargs, rdel, margs, staged = {}, {}, {}, {}, {}
local pre = {} -- (below)
local function flush()
    if #zargs == 0 then return end -- nothing staged (the others follow zargs)
    -- what is staged is written now: scores read before it are stale, so
    -- a later extend of one of these IDs reads it again (pending)
    for id in pairs(staged) do pre[id] = nil end
    bk_write(sh, 'ZADD', 'z', zargs)
    bk_write(sh, 'HSET', 'p', pargs)
    bk_write(sh, 'HDEL', 'r', rdel)
    bk_write(sh, 'SADD', 'm', margs)
    zargs, pargs, rdel, margs, staged = {}, {}, {}, {}, {}
end

-- The scores of the staged extends, read with one ZMSCORE; an ID written by
-- the slow path, ZADD GT or a flush of what was staged is dropped from it
-- (read again when needed).
local ids = {}
for k = 1, n do
    if OP[k] == 'e' and (has_r or PL[k] or MV[k]) then ids[#ids + 1] = ID[k] end
end
if #ids > 0 then
    local scores = bk_read(sh, 'ZMSCORE', 'z', ids)
    for k = 1, #ids do pre[ids[k]] = scores[k] end
end

-- The pending deadline of an ID (for extend): what is staged, else the
-- zset's; for an ID in flight the deadline being dispatched, not the lease.
local function pending(id)
    local cur = staged[id]
    if cur then return cur end
    cur = pre[id]
    if cur == nil then cur = bk_one(sh, 'ZSCORE', 'z', id) end
    if not cur then return nil end
    local d = tonumber(cur)
    if d % 1 ~= 0 then d = inflight_dispatched(f, cur, id) end
    return d
end

-- Whether an extend to `at` moves the ID: only to a later deadline than its
-- pending one, and, for a moving ID whose old twin is busy (MV: the deadline
-- being dispatched there), than that one too.
local function extends(id, at, moving)
    local cur = pending(id)
    if cur and at <= cur then return false end
    return not (moving and moving ~= '' and at <= tonumber(moving))
end

-- Whether this repeat (every `per` ms from `first`, payload `pl` or nil)
-- is the one the ID has, fired as often as its record says (a repeat sent
-- again, flag G): the record has that period; the pending deadline (or the
-- one in flight) is `first` itself if it never fired, else on the grid and
-- at least `fired` periods on (the scanner skips missed fires, never goes
-- back); and the payload, if it brings one, is the stored one. An earlier
-- repeat of the ID with the same period and a grid through `first` is not
-- taken for it: the copy sent first may never have run (held by a pause,
-- its client killed), and keeping the earlier one would lose this op.
local function repeats_on(id, first, per, pl)
    local rec = has_r and bk_one(sh, 'HGET', 'r', id)
    if not rec then return false end
    local rper, fired = string.match(rec, '^(%d+):(%d+)$')
    if tonumber(rper) ~= per then return false end
    fired = tonumber(fired)
    local d = pending(id)
    if d == nil or (d - first) % per ~= 0 then return false end
    if fired == 0 and d ~= first or d < first + fired * per then return false end
    return pl == nil or bk_one(sh, 'HGET', 'p', id) == pl
end

-- A moving ID's busy twin (M "D", I) counts until an op of the call
-- overrides it: after a touch, repeat or cancel of the ID, or an extend
-- that moved it, the twin's deadline and payload are behind it (as in one
-- shard), so later ops of the ID see only what this shard holds.
local over = {}
for k = 1, n do
    local op, id, moving, inh = OP[k], ID[k], MV[k], INH[k]
    if over[id] and moving then moving, inh = '', nil end
    local set = true
    if not has_r and plain_extend(k) then
        flush() -- what is staged goes first: per-ID order
        gargs[#gargs + 1] = ATS[k]
        gargs[#gargs + 1] = id
        pre[id] = nil
        set = false -- counted by ZADD CH
    elseif (op == 't' or op == 'e') and not inh then
        flush_gt()
        local at = AT[k] or tonumber(ATS[k])
        if op == 'e' then set = extends(id, at, moving) end
        if set then
            zargs[#zargs + 1] = ATS[k]
            zargs[#zargs + 1] = id
            staged[id] = at
            if PL[k] then
                pargs[#pargs + 1] = id
                pargs[#pargs + 1] = PL[k]
            end
            if has_r then rdel[#rdel + 1] = id end -- one-shot again
            if moving then margs[#margs + 1] = id end -- its old twin is stale
        end
    else
        flush_gt()
        flush()
        pre[id] = nil
        if op == 'c' then
            bk_one(sh, 'ZREM', 'z', id)
            bk_one(sh, 'HDEL', 'p', id)
            bk_one(sh, 'HDEL', 'r', id)
        else
            local at = AT[k] or tonumber(ATS[k])
            if op == 'e' then set = extends(id, at, moving) end
            if op == 'r' and AGAIN[k] then set = not repeats_on(id, at, tonumber(PER[k]), PL[k]) end
            if set then
                bk_write(sh, 'ZADD', 'z', { ATS[k], id })
                if PL[k] then
                    bk_one(sh, 'HSET', 'p', id, PL[k])
                elseif inh then
                    bk_one(sh, 'HSETNX', 'p', id, inh)
                end
                if op == 'r' then
                    bk_one(sh, 'HSET', 'r', id, PER[k] .. ':0')
                    has_r = true
                elseif has_r then
                    bk_one(sh, 'HDEL', 'r', id) -- touch/extend: one-shot again
                end
            end
        end
        if set and moving then bk_one(sh, 'SADD', 'm', id) end
    end
    if set then changed = changed + 1 end
    if set or op ~= 'e' then over[id] = true end
end
flush_gt()
flush()
if #wbusy > 0 then -- a cancel or repeat forgets the ID's timeout in flight there too
    local busy, gone = {}, {}
    for _, id in ipairs(wbusy) do
        if wfinal[id] == false then
            gone[#gone + 1] = id
        else
            busy[#busy + 1] = id
            busy[#busy + 1] = watch_busy(now)
        end
    end
    bk_write(old_sh, 'HDEL', 'o', gone)
    bk_write(old_sh, 'HSET', 'o', busy)
end
if #wbusy_old > 0 then
    -- a busy record there stands for a timeout in flight that a write here
    -- brought back: its ack queues the recovered event. A cancel or repeat
    -- here since forgets recovery, so the record goes (as in one shard,
    -- where the ack then finds none)
    local gone = {}
    for _, id in ipairs(wbusy_old) do
        if wforgot[id] then gone[#gone + 1] = id end
    end
    bk_write(old_sh, 'HDEL', 'o', gone)
end
watch_write(sh, wfinal)
watch_queue(sh, wback, string.format('%d', now))
watch_count(sh, wdelta)
-- a sleeping scanner is woken when a deadline landed before its next look
wake_ring(sh)
-- with the old shard's keys: also which "M ?" ops settled their ID here
-- ('1': no twin in the old shard can fire again; send.c's moved-ID cache)
-- with a relative time: also this clock, so the producer fixes those times
-- (a call sent again after a WAIT fell short sets the same deadlines)
local flags = KEYS[8] and table.concat(settled) or ''
if relative then return { changed, flags, string.format('%d', now) } end
if KEYS[8] then return { changed, flags } end
return changed
