-- twins: a split's copy rule (lib: pasted in by scripts/lua-source), for
-- seed.lua (twins taken from a node of their own) and apply.lua ("M ?":
-- twins on this node). A moving ID's pending twin from its old shard is
-- copied into its new shard only if the ID has no life there yet (not
-- pending, not in m): otherwise what is there already accounts for it. A
-- copied ID joins m, which makes the old twin stale for good.
-- #include chunks
-- #include bucket

-- Copies into the new shard sh (lib/bucket.lua, its split markers too) the twins ids[j],
-- with deadlines[j] (strings), payloads[j] and repeats[j] (false or nil:
-- none); an ID given twice is copied once, with the first one's data.
-- Returns how many were copied, and whether one brought a repeat record.
local function twins_copy(sh, ids, deadlines, payloads, repeats)
    if #ids == 0 then return 0, false end
    local here, moved = bk_read(sh, 'ZMSCORE', 'z', ids), bk_moved(sh, ids)
    local zargs, pargs, rargs, margs, seen = {}, {}, {}, {}, {}
    for j = 1, #ids do
        local id = ids[j]
        if not here[j] and moved[j] == 0 and not seen[id] then
            seen[id] = true
            zargs[#zargs + 1] = deadlines[j]; zargs[#zargs + 1] = id
            if payloads[j] then pargs[#pargs + 1] = id; pargs[#pargs + 1] = payloads[j] end
            if repeats[j] then rargs[#rargs + 1] = id; rargs[#rargs + 1] = repeats[j] end
            margs[#margs + 1] = id
        end
    end
    bk_write(sh, 'ZADD', 'z', zargs)
    bk_write(sh, 'HSET', 'p', pargs)
    bk_write(sh, 'HSET', 'r', rargs)
    bk_write(sh, 'SADD', 'm', margs)
    return #margs, #rargs > 0
end
