-- moved: during a split, which claimed IDs of an old shard were written in
-- their new shard since the split began (scanner/twins.c: those twins in the
-- old shard are stale and never fire). Only reads.
--
-- KEYS: [1] the new shard's z, [2] its m (layout.h; the shard's other keys
--   are named from these, lib/bucket.lua)
-- ARGV: the IDs
-- Returns 1 or 0 per ID, in order: in the new shard's split markers (its
-- buckets' in small keys).
-- #include bucket
local sh = bk_open(KEYS[1], KEYS[2])
sh.readonly = true
local ids = {}
for i = 1, #ARGV do ids[i] = ARGV[i] end
local got = bk_moved(sh, ids)
for i = 1, #ids do got[i] = got[i] == 1 and 1 or 0 end
return got
