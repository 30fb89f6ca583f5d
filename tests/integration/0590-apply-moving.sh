#!/usr/bin/env bash
# 0590-apply-moving: apply.lua's ops on IDs moving in a split (flag M), the
# step after take and seed (producer/lib/send.c), in one call as a batch sends
# them: an op that changes a moving ID writes it and adds it to the new
# shard's moved set (its old twin is stale from then on); one that changes
# nothing adds nothing. An extend must beat the ID's pending deadline here
# (also when in flight here: the deadline in its lease's record in f) and a busy twin's deadline
# ("M D"); the same ID twice behaves as two calls; a payload goes with the
# op, or is inherited from the busy twin (I) when the op brings none.
# Then "M ?" with the old shard's keys too (old and new shard on one node):
# apply.lua finds each twin itself, as take, seed and drop would have, and
# answers which ops settled their ID (producer/lib/send_split.c's moved-ID cache).
# One-zset form (scale_init_one_zset, also under LAPSE_TEST_SMALL_KEYS=1):
# it tests that form's internals (scores and records it crafts and reads
# in NS:z:I and its hashes).
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale_init_one_zset 2 >/dev/null
epoch=$(shard_epoch 1)
z=$NS:z:1 p=$NS:p:1 f=$NS:f:1 m=$NS:m:1
b=$(($(now_ms) + 3600000))
rcli ZADD "$z" $((b + 100)) P >/dev/null
inflight_set 1 "$((b + 90000)).5" Q $((b + 200))

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
assert_eq "$(inflight_of Q 1)" $((b + 200)) "Q's dispatched deadline untouched"

# a stale producer is refused, nothing applied
got=$(lapse_lua apply 1 $((epoch - 1)) 0 "tM@$((b + 10))" S '' 2>&1 || true)
assert_match "$got" 'STALE' "apply with a stale epoch"
assert_eq "$(rcli ZSCORE "$z" S)$(rcli SISMEMBER "$m" S)" 0 "S after a refused apply"

# "M ?": old shard 0, new shard 1 (keys 8..14), on this node
rcli DEL "$m" "$z" "$p" "$f" >/dev/null
z0=$NS:z:0 p0=$NS:p:0 f0=$NS:f:0 r0=$NS:r:0 r1=$NS:r:1
{
    echo "ZADD $z0 $((b + 1)) A $((b + 2)) H $((b + 3)) K $((b + 9)) S $((b + 30)) G"
    echo "HSET $p0 A pa B pb H ph E pe"
    echo "HSET $r0 A 1000:2 G 500:1"
    echo "ZADD $z $((b + 60)) H"
} | rcli >/dev/null
inflight_set 0 "$((b + 90000)).5" B $((b + 7))
inflight_set 0 "$((b + 90001)).5" C $((b + 8))
inflight_set 0 "$((b + 90002)).5" E $((b + 9))
keys=()
for s in 1 0; do keys+=("$NS:z:$s" "$NS:p:$s" "$NS:f:$s" "$NS:r:$s" "$NS:m:$s" "$NS:l:$s" "$NS:e:$s"); done
mapfile -t out < <(rcli EVAL "$(lua_source apply)" 14 "${keys[@]}" "$epoch" 0 \
    "eM@$((b + 5))" A '?' \
    "eM@$((b + 4))" A '?' \
    "eM@$((b + 50))" H '?' \
    "tM@$((b + 20))" K '?' \
    "eM@$((b + 6))" B '?' \
    "tM@$((b + 30))" C '?' \
    "tM@$((b + 35))" E '?' \
    "eM@$((b + 25))" G '?' \
    "eM@$((b + 40))" N '?' \
    "t@$((b + 45))" P \
    "cM" S '?')
assert_eq "${out[*]}" "7 1111011111" \
    "changed (A K C E N P S) and the settled flags (all but B's extend, which lost to its busy twin)"
assert_eq "$(rcli ZMSCORE "$z0" A H K S G B C E | paste -sd' ')" \
    "     $((b + 90000)).5 $((b + 90001)).5 $((b + 90002)).5" \
    "old shard: pending twins moved out (A K S G) or dropped as stale (H lives here); busy ones (B C E) stay"
assert_eq "$(rcli HEXISTS "$p0" A)$(rcli HEXISTS "$r0" A)$(rcli HEXISTS "$p0" H)$(rcli HEXISTS "$r0" G) $(rcli HGET "$p0" B)" \
    "0000 pb" "old shard: payloads and repeat records left with their twins; B's kept"
assert_eq "$(rcli ZMSCORE "$z" A H K B C E G N P S | paste -sd' ')" \
    "$((b + 5)) $((b + 60)) $((b + 20))  $((b + 30)) $((b + 35)) $((b + 30)) $((b + 40)) $((b + 45)) " \
    "new shard: A extended past its twin, H kept, K touched, B not written, C E written, G moved (its extend lost), N P written, S cancelled"
assert_eq "$(rcli HGET "$p" A) $(rcli HGET "$p" E) $(rcli HGET "$r1" G) $(rcli HEXISTS "$r1" A)$(rcli HEXISTS "$p" C)" \
    "pa pe 500:1 00" "new shard: A's payload moved, E's inherited from its busy twin, G's repeat record moved; A's extend made it one-shot"
assert_eq "$(rcli SMEMBERS "$m" | sort | paste -sd' ')" "A C E G K N S" "the moved set"
