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
--   none (a write since brought it); returns how many were written
-- ARGV[1] "del": then ids: each deleted; returns how many were there
-- #include watch
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
local ids = {}
for i = 2, #ARGV, mode == 'put' and 2 or 1 do ids[#ids + 1] = ARGV[i] end
if #ids == 0 then return 0 end
local cur = bk_has(sh, 'o') and bk_read(sh, 'HMGET', 'o', ids) or {}
local list, off = {}, 0
for k = 1, #ids do
    if mode == 'put' and not cur[k] then
        local rec = ARGV[2 * k + 1]
        list[#list + 1] = ids[k]
        list[#list + 1] = rec
        if rec ~= '' then off = off + 1 end
    elseif mode == 'del' and cur[k] then
        list[#list + 1] = ids[k]
        if cur[k] ~= '' then off = off - 1 end
    end
end
bk_write(sh, mode == 'put' and 'HSET' or 'HDEL', 'o', list)
watch_count(sh, off)
return mode == 'put' and #list / 2 or #list
