-- forget: the active scanner's slow walk over its shard's watch records
-- (lib/watch.lua), forgetting offline IDs that did not come back within the
-- retention: a slice a call, so a pass over millions of records costs Redis
-- nothing it would notice (the scanner calls this about once a second).
--
-- KEYS: [1] z, [2] the lock
-- ARGV[1] token, ARGV[2] retention ms, ARGV[3] cursor ("0": from the
-- start), ARGV[4] records to look at, about, ARGV[5] how old a busy record
-- must be to be forgotten, ms (longer than a timeout can stay in flight)
-- Returns { next cursor ("0": the pass ended), forgotten, offline IDs now },
-- or the error "FENCED lock not held" when the lock is not ours.
-- #include watch
local z, lock = KEYS[1], KEYS[2]
local sh = bk_open(z, lock)
if redis.call('GET', lock) ~= ARGV[1] then return redis.error_reply('FENCED lock not held') end
local count = tonumber(redis.call('GET', bk_key(sh, 'n')) or 0)
if not bk_has(sh, 'o') then return { '0', 0, count } end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local before = now_ms - tonumber(ARGV[2])
local busy_before = now_ms - math.max(tonumber(ARGV[2]), tonumber(ARGV[5] or 0))
local want = tonumber(ARGV[4])

-- The offline records of list { id, record, ... } fired before `before`,
-- and the busy ones left over from before `busy_before` (lib/watch.lua: a
-- split's, whose timeout was settled without its ack seeing it).
local function old(list, out, busy)
    for i = 1, #list, 2 do
        local rec = list[i + 1]
        local _, f = watch_parse(rec)
        if f and f < before then
            out[#out + 1] = list[i]
        elseif watch_is_busy(rec) and tonumber(string.match(rec, '^B (%d+)$') or 0) < busy_before then
            busy[#busy + 1] = list[i]
        end
    end
end

local gone = {}
local next = watch_page(sh, ARGV[3], want, function(_, list)
    local here, busy = {}, {}
    old(list, here, busy)
    for i = 1, #busy do here[#here + 1] = busy[i] end
    bk_write(sh, 'HDEL', 'o', here) -- (key's records: each goes where it is)
    for i = 1, #here - #busy do gone[#gone + 1] = here[i] end
end)
watch_count(sh, -#gone)
return { next, #gone, count - #gone }
