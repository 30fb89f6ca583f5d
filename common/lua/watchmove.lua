-- watchmove: `lapse-scale finish` moves the watch records (lib/watch.lua) of
-- IDs whose home moved to a new shard, which no write brought over during
-- the split (tools/scale/split.c: split_watch_move): an ID offline in its old
-- shard then still comes back, in the new one.
--
-- KEYS: [1] z, [2] e (any other key of the shard, to name the rest)
-- ARGV[1] "list": ARGV[2] cursor ("0" to start), ARGV[3] records to look
--   at; returns { next cursor ("0": done), id, record, ... }, every record
--   ("" included) but busy ones (lib/watch.lua)
-- ARGV[1] "put": then id, record, ...: each written where the shard has
--   none (a write since brought it) and the ID was not written here during
--   the split (in m: its first write here carried the record, and a cancel
--   or repeat since forgot it, so the listed one is stale); an offline one
--   of an ID online here (written here since its timeout went out in the
--   old shard) queues its recovered event here; returns how many were
--   written
-- ARGV[1] "del": then id, record, ...: each deleted if its record is still
--   the one given (a busy record made since stays); returns how many went
-- #include watch
-- #include wake
local sh = bk_open(KEYS[1], KEYS[2])
local mode = ARGV[1]
if mode == 'list' then
    if not bk_has(sh, 'o') then return { '0' } end
    local out = { '0' }
    out[1] = watch_page(sh, ARGV[2], tonumber(ARGV[3]), function(_, list)
        for i = 1, #list, 2 do
            if not watch_is_busy(list[i + 1]) then -- (the old shard's ack settles those)
                out[#out + 1] = list[i]
                out[#out + 1] = list[i + 1]
            end
        end
    end)
    return out
end
local ids, recs = {}, {}
for i = 2, #ARGV, 2 do
    ids[#ids + 1] = ARGV[i]
    recs[#recs + 1] = ARGV[i + 1]
end
if #ids == 0 then return 0 end
local cur = bk_has(sh, 'o') and bk_read(sh, 'HMGET', 'o', ids) or {}
local written = mode == 'put' and bk_moved(sh, ids) or {}
local list, back, off = {}, {}, 0
local now
for k = 1, #ids do
    local id, rec, d, f = ids[k], recs[k], watch_parse(recs[k])
    if mode == 'put' and not cur[k] and written[k] ~= 1 then
        list[#list + 1] = id
        list[#list + 1] = rec
        if d then off = off + 1 end
    elseif mode == 'put' and cur[k] == '' and d then
        -- offline in its old shard, online here: written here since its
        -- timeout went out there, so it is back
        if not now then
            local t = redis.call('TIME')
            now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
        end
        back[#back + 1] = id
        back[#back + 1] = string.format('%d %d %s', d, f, now)
    elseif mode == 'del' and cur[k] == rec then -- (not changed since it was listed)
        list[#list + 1] = id
        if d then off = off - 1 end
    end
end
bk_write(sh, mode == 'put' and 'HSET' or 'HDEL', 'o', list)
watch_count(sh, off)
if #back > 0 then
    watch_queue(sh, back, now)
    wake_ring(sh)
end
return mode == 'put' and #list / 2 or #list
