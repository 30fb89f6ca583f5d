#!/usr/bin/env bash
# 0580-take-drop: take.lua, seed.lua and drop.lua, the steps of a moving ID's
# first write during a split (producer/lib/send.c), on every state a twin can be
# in, an ID given twice in one call included (a batch with two ops of one
# moving ID):
#   take: pending A -> "t" (leased to us, its deadline kept in the take's
#         record in f), payload and repeat record returned; in flight B ->
#         "b" with the deadline being dispatched (its lease's record) and its
#         payload; absent C -> "a"; A again ->
#         "b" with the deadline it was just taken with; a stale epoch ->
#         STALE and nothing changed;
#   drop: removes the twins still holding our lease with payload and
#         repeat record (and the lease's record with its last holder); one
#         given twice is removed once; one whose score is no longer our
#         lease (reset meanwhile, or another lease) stays.
#   Two takes in one millisecond share a lease: one record holds both.
# One-zset form (scale_init_one_zset, also under LAPSE_TEST_SMALL_KEYS=1):
# it tests that form's internals (scores and records it crafts and reads
# in NS:z:I and its hashes).
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale_init_one_zset 1 >/dev/null
epoch=$(shard_epoch 0)
z=$NS:z:0 p=$NS:p:0 f=$NS:f:0 r=$NS:r:0
b=$(($(now_ms) + 3600000))
{
    echo "ZADD $z $((b + 1)) A $((b + 2)) D $((b + 3)) E"
    echo "HSET $p A pa B pb D pd"
    echo "HSET $r D 1000:3"
} | rcli >/dev/null
inflight_set 0 "$((b + 90000)).5" B $((b + 7))

got=$(lapse_lua take 0 $((epoch - 1)) 5000 A 2>&1 || true)
assert_match "$got" 'STALE' "take with a stale epoch"
assert_eq "$(rcli ZSCORE "$z" A)" $((b + 1)) "A after a refused take"

mapfile -t out < <(lapse_lua take 0 "$epoch" 5000 A B C A D E)
lease=${out[0]}
[[ $lease == *.75 ]] || fail "take's lease (ending in .75, not a claim's .5): '$lease'"
# (five answers an ID: state, deadline, payload, repeat, watch record)
assert_eq "${out[*]:1:5}" "t $((b + 1)) pa  " "A: state, deadline, payload, repeat, watch"
assert_eq "${out[*]:6:5}" "b $((b + 7)) pb  " "B (in flight): state, dispatched deadline, payload, repeat, watch"
assert_eq "${out[*]:11:5}" "a 0   " "C (absent)"
assert_eq "${out[*]:16:5}" "b $((b + 1)) pa  " "A again: busy with the deadline it was taken with"
assert_eq "${out[*]:21:5}" "t $((b + 2)) pd 1000:3 " "D: payload and repeat record"
assert_eq "${out[*]:26:5}" "t $((b + 3))   " "E"
assert_eq "$(rcli ZSCORE "$z" A) $(rcli ZSCORE "$z" D) $(rcli ZSCORE "$z" B)" "$lease $lease $((b + 90000)).5" "scores after take"
assert_eq "$(inflight_of A 0) $(inflight_of D 0) $(inflight_of E 0) $(inflight_of B 0)" "$((b + 1)) $((b + 2)) $((b + 3)) $((b + 7))" \
    "deadlines in the records after take"

rcli ZADD "$z" $((b + 50)) E >/dev/null # reset after the take: not ours to drop any more
assert_eq "$(lapse_lua drop 0 A "$lease" D "$lease" A "$lease" B "$lease" E "$lease")" 2 "dropped (A once, D)"
assert_eq "$(rcli ZSCORE "$z" A)$(rcli ZSCORE "$z" D)" "" "A and D gone"
assert_eq "$(rcli HEXISTS "$p" A)$(rcli HEXISTS "$p" D)$(rcli HEXISTS "$r" D)$(rcli HEXISTS "$f" "$lease")" 0000 \
    "A's and D's payloads, D's repeat record, the take's record (E, its other holder, was reset)"
assert_eq "$(rcli ZSCORE "$z" B) $(rcli HGET "$p" B) $(inflight_of B 0)" "$((b + 90000)).5 pb $((b + 7))" "B (another lease) untouched"
assert_eq "$(rcli ZSCORE "$z" E)" $((b + 50)) "E (reset after the take) kept"

# seed (the new shard's step between take and drop): copies a taken twin
# unless the ID already lives in the new shard (pending there, or in its
# moved set); the same ID twice is seeded once, with the first one's data;
# every seeded ID joins the moved set
rcli SET "$NS:e:1" "$epoch" >/dev/null # (shard 1 of a layout of two, as in a split)
rcli SADD "$NS:m:1" M >/dev/null
rcli ZADD "$NS:z:1" $((b + 60)) H >/dev/null
assert_eq "$(lapse_lua seed 1 "$epoch" S $((b + 1)) 1 ps 1000:2 M $((b + 2)) 0 '' '' \
    H $((b + 3)) 1 ph '' S $((b + 9)) 0 '' '' T $((b + 4)) 0 '' '')" 2 "seeded (S once, T)"
z1=$NS:z:1
assert_eq "$(rcli ZSCORE "$z1" S) $(rcli HGET "$NS:p:1" S) $(rcli HGET "$NS:r:1" S)" "$((b + 1)) ps 1000:2" "S seeded with the first one's data"
assert_eq "$(rcli ZSCORE "$z1" T) $(rcli HEXISTS "$NS:p:1" T) $(rcli HEXISTS "$NS:r:1" T)" "$((b + 4)) 0 0" "T seeded without payload or repeat"
assert_eq "$(rcli ZSCORE "$z1" M)$(rcli ZSCORE "$z1" H) $(rcli HEXISTS "$NS:p:1" H)" "$((b + 60)) 0" "M (moved) and H (pending) not seeded over"
assert_eq "$(rcli SMEMBERS "$NS:m:1" | sort | paste -sd' ')" "M S T" "the moved set"
got=$(lapse_lua seed 1 $((epoch - 1)) U $((b + 1)) 0 '' '' 2>&1 || true)
assert_match "$got" 'STALE' "seed with a stale epoch"
assert_eq "$(rcli ZSCORE "$z1" U)" "" "U after a refused seed"

# Two takes in one millisecond share a lease: one record holds both (the
# second adds to the first's). Two takes in one MULTI usually run within one
# millisecond (Redis 7.0 does not freeze the clock across a MULTI): tried
# until they do, at most 20 times.
take_sha=$(rcli SCRIPT LOAD "$(lua_source take)")
for ((try = 0; try < 20; try++)); do
    rcli DEL "$z" "$f" "$p" "$r" >/dev/null
    rcli ZADD "$z" $((b + 11)) F $((b + 12)) G >/dev/null
    out=$({
        echo MULTI
        for id in F G; do echo "EVALSHA $take_sha 7 $z $p $f $r $NS:m:0 $NS:l:0 $NS:e:0 $epoch 5000 $id"; done
        echo EXEC
    } | rcli)
    mapfile -t leases < <(grep -E '\.75$' <<<"$out")
    ((${#leases[@]} == 2)) || fail "two takes in one MULTI: leases '${leases[*]}' from: $out"
    [[ ${leases[0]} != "${leases[1]}" ]] || break
done
((try < 20)) || fail "two takes in one MULTI never ran within one millisecond in 20 tries"
assert_eq "$(rcli HLEN "$f") $(inflight_of F 0) $(inflight_of G 0)" "1 $((b + 11)) $((b + 12))" \
    "two takes with one lease: one record holding both deadlines"
