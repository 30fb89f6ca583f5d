-- bucket_promote: a shard being converted from one key to buckets (init
-- --small-keys on a namespace that had data: lib/bucket.lua, bk_open's
-- sh.old), its IDs moved from the old keys into their buckets: each ID
-- before anything reads or writes it (bk_promote), the rest a chunk at a
-- time (bk_drain, from claims and naps).
--
-- Apart from lib/bucket.lua, which is the shard's layout and its reads and
-- writes, because converting is a job of its own that ends once the old
-- keys are gone. Not for a script to include: bucket.lua pastes it where
-- it stands among its own functions, after the ones this uses (bk_at,
-- bk_flag, bk_call, bk_lower, the watch hashes') and before the ones that
-- call bk_promote (bk_read, bk_write, bk_one): Lua's local functions see
-- only what is defined above them.

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
    local wold = bk_wparse(redis.call('GET', sh.v)) -- (the one key's watch hashes)
    if wold then
        local wb = bk_wcall(sh, wold, 'HMGET', ids, 1, #ids)
        for k = 1, #ids do ob[k] = ob[k] or wb[k] end
    end
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
    if wold then
        bk_wcall(sh, wold, 'HDEL', gone, 1, #gone)
        if wold.c <= 0 then redis.call('DEL', sh.v) end
    end
    sh.old = redis.call('EXISTS', sh.z, sh.p, sh.r, sh.o, sh.v) > 0
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
    local wold = #ids == 0 and bk_wparse(redis.call('GET', sh.v))
    if wold then -- the first watch hash that holds a record
        for j = 0, wold.n + wold.s - 1 do
            ids = redis.call('HRANDFIELD', bk_wkey(sh, j), max)
            if #ids > 0 then break end
        end
        if #ids == 0 then redis.call('DEL', sh.v) end -- (none left: a count gone wrong)
    end
    bk_promote(sh, ids, 1, #ids, 1, 0)
    return #ids
end
