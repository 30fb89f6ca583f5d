-- offline: a page of the IDs offline in one shard (lib/watch.lua), for
-- `lapse-scale offline`. Reads only.
--
-- KEYS: [1] z, [2] e (any other key of the shard, to name the rest)
-- ARGV[1] cursor ("0": from the start), ARGV[2] records to look at, about,
-- ARGV[3] an ID prefix ("" for all)
-- Returns { next cursor ("0": done), id, deadline ms, fired ms, ... }.
-- #include watch
local sh = bk_open(KEYS[1], KEYS[2])
sh.readonly = true
if not bk_has(sh, 'o') then return { '0' } end
local want, prefix = tonumber(ARGV[2]), ARGV[3]
local out = { '0' }

local function add(list)
    for i = 1, #list, 2 do
        local id = list[i]
        local d, f = watch_parse(list[i + 1])
        if d and string.sub(id, 1, #prefix) == prefix then
            out[#out + 1] = id
            out[#out + 1] = string.format('%d', d)
            out[#out + 1] = string.format('%d', f)
        end
    end
end

if sh.one then
    local r = redis.call('HSCAN', sh.o, ARGV[1], 'COUNT', want)
    out[1] = r[1]
    add(r[2])
else
    local j, last, seen = tonumber(ARGV[1]) or 0, sh.n + sh.s - 1, 0
    while j <= last and seen < want do
        local all = redis.call('HGETALL', sh.o .. ':' .. j)
        add(all)
        seen, j = seen + #all / 2 + 1, j + 1
    end
    if j <= last then out[1] = string.format('%d', j) end
end
return out
