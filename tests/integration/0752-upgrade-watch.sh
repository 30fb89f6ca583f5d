#!/usr/bin/env bash
# 0752-upgrade-watch: a scanner of this release takes over a shard that a
# scanner of the release before the watch hashes (0ca6362, 2026-11-27) left
# mid-flight, with its watch records in the one hash NS:o:I.
#
# State as that release left it (one zset, one shard): watched A pending
# and due; watched B claimed by the old scanner (its claim.lua, kept in
# tests/lib/old/, run here) and in flight when it died holding the lock;
# C offline with that release's record "D F" (F the fire time itself, not
# the offset written since); the offline count 1. The new scanner takes
# the shard over when the old lock runs out. Then: A and B fire once each,
# never early, and go offline; C is listed offline since its F, not a
# doubled time; A, B and C signal and each gets one recovered event with
# its timeout's deadline (C's fired_ms = F); a new watched ID still goes to
# the one hash (the shard keeps it); nobody is offline at the end.
# Catches: an old record misread (C's fired_ms or since doubled), records
# of the one hash ignored or moved, an in-flight ID lost or fired twice.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
SCANNER_CFG="poll_ms = 10; lease_ms = 3000;"
write_config
scale init 1 --one-zset >/dev/null
events_follow events.json
z=$NS:z:0 p=$NS:p:0 f=$NS:f:0 r=$NS:r:0 o=$NS:o:0 n=$NS:n:0
epoch=$(shard_epoch 0)

t=$(now_ms)
rcli ZADD "$z" $((t - 200)) B >/dev/null
rcli SET "$NS:l:0" old PX 2500 >/dev/null # the old scanner's lock: it dies holding it
rcli EVAL "$(cat "$LAPSE_ROOT/tests/lib/old/claim-0ca6362.lua")" 8 "$z" "$p" "$f" "$r" \
    "$NS:m:0" "$NS:l:0" "$NS:e:0" "$NS:c:0" old 10 3000 1000 10 "$epoch" >/dev/null
assert_eq "$(rcli ZCARD "$z") $(rcli HLEN "$f")" "0 1" "B claimed by the old release: out of the zset, one record"
rcli ZADD "$z" $((t - 100)) A >/dev/null
cd_=$((t - 86400000)) cf=$((t - 86400000 + 7))
rcli HSET "$o" A "" B "" C "$cd_ $cf" >/dev/null
rcli SET "$n" 1 >/dev/null

scanner_start 0
events_wait_ids events.json 2 15000 || fail "A and B did not fire"
wait_until 10000 '[[ $(scale_offline | cut -f1 | sort | paste -sd,) == A,B,C ]]' ||
    fail "offline: '$(scale_offline | cut -f1 | sort | paste -sd,)', not A,B,C"
assert_eq "$(scale_offline --prefix C | cut -f3,4)" "$cd_	$cf" "C's deadline and since, from the old record"
echo "watch N +3600000" | produce
assert_eq "$(rcli HEXISTS "$o" N) $(rcli EXISTS "$NS:v:0")" "1 0" "a new watch record in the shard's one hash"

printf 'extend A +600000\nextend B +600000\nextend C +600000\n' | produce
recovered() { jq -R -r 'fromjson? | select(.type == "recovered") | .id' events.json | sort | paste -sd,; }
wait_until 10000 '[[ $(recovered) == A,B,C ]]' || fail "recovered events: '$(recovered)'"
sleep 0.3 # a wrong extra event shows
events_follow_stop
assert_eq "$(jq -r 'select(.type == "timeout") | .id' events.json | sort | paste -sd,)" A,B "timeouts, each once"
assert_eq "$(jq -r 'select(.id == "C") | "\(.deadline_ms) \(.fired_ms)"' events.json)" "$cd_ $cf" "C's recovered event: its old record's deadline and fire time"
for id in A B; do
    d=$(jq -r --arg id "$id" 'select(.id == $id and .type == "timeout") | .deadline_ms' events.json)
    assert_eq "$(jq -r --arg id "$id" 'select(.id == $id and .type == "recovered") | .deadline_ms' events.json)" "$d" "$id's recovered event names its timeout's deadline"
done
assert_never_early events.json
assert_eq "$(scale_offline)" "" "offline at the end"
