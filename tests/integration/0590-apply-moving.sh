#!/usr/bin/env bash
# 0590-apply-moving: apply.lua's ops on IDs moving in a split (flag M), the
# step after take and seed (producer/send.c), in one call as a batch sends
# them: an op that changes a moving ID writes it and adds it to the new
# shard's moved set (its old twin is stale from then on); one that changes
# nothing adds nothing. An extend must beat the ID's pending deadline here
# (also when in flight here: the deadline in f) and a busy twin's deadline
# ("M D"); the same ID twice behaves as two calls; a payload goes with the
# op, or is inherited from the busy twin (I) when the op brings none.
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale init 2 >/dev/null
epoch=$(shard_epoch 1)
z=$NS:z:1 p=$NS:p:1 f=$NS:f:1 m=$NS:m:1
b=$(($(now_ms) + 3600000))
{
    echo "ZADD $z $((b + 100)) P $((b + 90000)).5 Q"
    echo "HSET $f Q $((b + 200))"
} | rcli >/dev/null

changed=$(lapse_lua apply 1 "$epoch" 0 \
    "eM@$((b + 10))" X '' \
    "eM@$((b + 5))" Y $((b + 20)) \
    "eM@$((b + 30))" W $((b + 20)) \
    "eM@$((b + 50))" P '' \
    "tM@$((b + 50))" P '' \
    "ePM@$((b + 300))" V pv '' \
    "tMI@$((b + 60))" U $((b + 20)) pu \
    "eM@$((b + 40))" Z '' \
    "eM@$((b + 35))" Z '' \
    "eM@$((b + 150))" Q '')
assert_eq "$changed" 6 "ops that changed something (X W P-touch V U Z)"
assert_eq "$(rcli ZMSCORE "$z" X Y W P V U Z Q | paste -sd' ')" \
    "$((b + 10))  $((b + 30)) $((b + 50)) $((b + 300)) $((b + 60)) $((b + 40)) $((b + 90000)).5" \
    "scores: Y lost to its busy twin, P's extend to its pending deadline, Z's second extend to its first, Q's to its deadline in flight"
assert_eq "$(rcli SMEMBERS "$m" | sort | paste -sd' ')" "P U V W X Z" "the moved set: the IDs changed here"
assert_eq "$(rcli HGET "$p" V) $(rcli HGET "$p" U) $(rcli HEXISTS "$p" X)" "pv pu 0" \
    "payloads: V's own, U's inherited from its busy twin, none for X"
assert_eq "$(rcli HGET "$f" Q)" $((b + 200)) "Q's dispatched deadline untouched"

# a stale producer is refused, nothing applied
got=$(lapse_lua apply 1 $((epoch - 1)) 0 "tM@$((b + 10))" S '' 2>&1 || true)
assert_match "$got" 'STALE' "apply with a stale epoch"
assert_eq "$(rcli ZSCORE "$z" S)$(rcli SISMEMBER "$m" S)" 0 "S after a refused apply"
