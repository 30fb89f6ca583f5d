-- wake: rings the shard's bell when a write lands earlier than its sleeping
-- scanner will look (sleep.lua, scanner/wake.c).
--
-- The mark s holds the lowest score the scanner saw when it went to sleep
-- (or "inf"): it sleeps until then at most. A score below the mark, after a
-- write, was written since (or the mark is stale: then ringing costs one
-- needless look); the script deletes the mark and pushes one token onto
-- the bell b, on which the scanner blocks. Deleting it keeps the bell at
-- one token and every later write of the nap down to the GET below. The
-- scanner sets the mark again, reading the zset in the same call.
-- The keys are named like z, the kind letter replaced (layout.h); the
-- letter's place is where KEYS[1] and KEYS[2] (z and p) differ, so the
-- callers' keys stay as they are. On a Cluster they share z's hash tag.
local function wake_ring(z, p)
    local i = 1
    while string.byte(z, i) == string.byte(p, i) do i = i + 1 end
    local head, tail = string.sub(z, 1, i - 1), string.sub(z, i + 1)
    local s = head .. 's' .. tail
    local mark = redis.call('GET', s)
    if not mark then return end
    local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')[2]
    if first and tonumber(first) < (tonumber(mark) or math.huge) then
        redis.call('DEL', s)
        redis.call('RPUSH', head .. 'b' .. tail, '1')
    end
end
