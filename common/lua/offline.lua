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

out[1] = watch_page(sh, ARGV[1], want, function(_, list)
    for i = 1, #list, 2 do
        local id = list[i]
        local d, f = watch_parse(list[i + 1])
        if d and string.sub(id, 1, #prefix) == prefix then
            out[#out + 1] = id
            out[#out + 1] = string.format('%d', d)
            out[#out + 1] = string.format('%d', f)
        end
    end
end)
return out
