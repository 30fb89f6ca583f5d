#!/usr/bin/env bash
# 0749-recovered-split-records: what drop.lua, watchmove.lua and forget.lua
# do with watch records (lib/watch.lua) during a split, script by script,
# on every state a record can be in when the step runs:
#   drop (a producer carried the record take answered to the new shard):
#     X offline now but online ("") when taken (its timeout's ack came
#       between take and drop) -> deleted, the offline count down, and its
#       recovered event queued here (the new shard holds it online);
#     Y offline when taken too -> deleted, no event (the new shard has it);
#     W online, not pending (its timeout in flight) -> a busy record;
#     V online, the op a cancel ("f") -> deleted, no busy record;
#     U busy -> left as it is;
#   watchmove put (finish): an offline record for an ID online in the new
#     shard queues its recovered event there; none is written for an ID
#     written in the new shard during the split (in m: its first write
#     carried its record, and a cancel since forgot it, after finish listed
#     the old one); del deletes a record only if it is still the one listed;
#   forget: a busy record goes only once older than the busy age given,
#     whatever the retention.
# Catches: a recovered event lost when an ack lands between take and drop,
# one sent for a cancelled ID (also when finish moved its stale record), a busy record deleted by finish, the offline
# count going wrong.
# One-zset form (scale_init_one_zset, also under LAPSE_TEST_SMALL_KEYS=1):
# it crafts the records in NS:o:I.
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale_init_one_zset 1 >/dev/null
z=$NS:z:0 p=$NS:p:0 o=$NS:o:0 n=$NS:n:0
rcli HSET "$o" X "1000 5" Y "2000 7" W "" V "" U "B 123" >/dev/null
rcli SET "$n" 2 >/dev/null

# drop: X taken online, Y taken offline, W and V online, U busy
assert_eq "$(lapse_lua drop 0 X o Y "o2000 7" W o V f U o)" 0 "drop's twins removed (none: records only)"
assert_eq "$(rcli HEXISTS "$o" X) $(rcli HEXISTS "$o" Y) $(rcli HEXISTS "$o" V)" "0 0 0" "X, Y and V's records gone"
assert_match "$(rcli HGET "$o" W)" '^B [0-9]+$' "W's busy record"
assert_eq "$(rcli HGET "$o" U)" "B 123" "U's busy record, untouched"
assert_eq "$(rcli GET "$n")" 0 "offline count after drop"
assert_eq "$(rcli ZCARD "$z")" 1 "recovered events queued by drop (X only)"
assert_match "$(rcli HGET "$p" $'\001X')" '^1000 1005 [0-9]+$' "X's recovered event: deadline, fired, back"
assert_eq "$(rcli HEXISTS "$p" $'\001Y')" 0 "no recovered event for Y"

# watchmove put: P online here, offline in its old shard; Q new here; S
# and T written here during the split, their records forgotten since
rcli HSET "$o" P "" >/dev/null
rcli SADD "$NS:m:0" S T >/dev/null
assert_eq "$(lapse_lua watchmove 0 put P "3000 4" Q "4000 2" S "" T "5000 1")" 1 "records written by put (Q)"
assert_eq "$(rcli HGET "$o" P)|$(rcli HGET "$o" Q)" "|4000 2" "P stays online, Q offline here"
assert_eq "$(rcli HEXISTS "$o" S) $(rcli HEXISTS "$o" T)" "0 0" "no record for S and T (in m)"
assert_match "$(rcli HGET "$p" $'\001P')" '^3000 3004 [0-9]+$' "P's recovered event, queued by put"
assert_eq "$(rcli GET "$n")" 1 "offline count after put (Q)"
# watchmove del: Q listed as offline, still so -> goes; W listed online,
# busy since -> stays
assert_eq "$(lapse_lua watchmove 0 del Q "4000 2" W "")" 1 "records deleted by del (Q)"
assert_match "$(rcli HGET "$o" W)" '^B [0-9]+$' "W's busy record after del"
assert_eq "$(rcli GET "$n")" 0 "offline count after del"

# forget: U's busy record (at 123 ms) goes only past the busy age
rcli SET "$NS:l:0" tok >/dev/null
forget() { rcli EVAL "$(lua_source forget)" 2 "$z" "$NS:l:0" tok "$1" 0 1000 "$2" | head -1 >/dev/null; }
forget 1000 999999999999999
assert_eq "$(rcli HGET "$o" U)" "B 123" "U's busy record, younger than the busy age"
forget 1000 60000
assert_eq "$(rcli HEXISTS "$o" U)" 0 "U's busy record, past the busy age"
assert_match "$(rcli HGET "$o" W)" '^B [0-9]+$' "W's busy record (made just now) stays"
