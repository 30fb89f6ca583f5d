-- chunks: commands over long lists of arguments (lib: pasted in by
-- scripts/lua-source). One redis.call per command and chunk of 1000, not
-- one per ID: Lua's unpack has a limit, and a call per ID costs far more.

-- cmd key list[from..to] (all of list by default), in chunks.
local function chunks_write(cmd, key, list, from, to)
    from, to = from or 1, to or #list
    for k = from, to, 1000 do
        redis.call(cmd, key, unpack(list, k, math.min(k + 999, to)))
    end
end

-- The replies of cmd key list[from..to] (all of list by default), in
-- chunks, as one list.
local function chunks_read(cmd, key, list, from, to)
    from, to = from or 1, to or #list
    local got = {}
    for k = from, to, 1000 do
        local part = redis.call(cmd, key, unpack(list, k, math.min(k + 999, to)))
        for j = 1, #part do got[k - from + j] = part[j] end
    end
    return got
end
