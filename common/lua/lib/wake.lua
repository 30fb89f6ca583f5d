-- wake: rings the shard's bell when a write lands earlier than its sleeping
-- scanner will look (sleep.lua, scanner/wake.c).
--
-- The mark s holds the lowest score the scanner saw when it went to sleep
-- (or "inf"): it sleeps until then at most. A lowest score below the mark,
-- after a write, was written since (or the mark is stale: then ringing
-- costs one needless look); the script deletes the mark and pushes one
-- token onto the bell b, on which the scanner blocks. Deleting it keeps
-- the bell at one token and every later write of the nap down to the GET
-- below. The scanner sets the mark again, reading the shard in the same
-- call. The lowest score is bk_min's: with buckets the index's, a lower
-- bound, so a write never lands below it unseen. s and b are named like
-- the shard's other keys (lib/bucket.lua), with its hash tag on a Cluster.
-- #include bucket
local function wake_ring(sh)
    local s = bk_key(sh, 's')
    local mark = redis.call('GET', s)
    if not mark then return end
    local first = bk_min(sh)
    if sh.filling or first and tonumber(first) < (tonumber(mark) or math.huge) then
        redis.call('DEL', s)
        redis.call('RPUSH', bk_key(sh, 'b'), '1')
    end
end
