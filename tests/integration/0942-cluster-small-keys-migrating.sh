#!/usr/bin/env bash
# 0942-cluster-small-keys-migrating: a shard in small keys whose slot is
# half migrated (SETSLOT MIGRATING/IMPORTING, half its keys MIGRATEd: what
# `redis-cli --cluster reshard` leaves between two batches) takes no write
# at all: a producer's batch that would reach a moved bucket ends whole as
# TRYAGAIN or ASK (by Redis, as the keys a script names are partly or all
# gone; or by the script itself, lib/bucket.lua) and is tried again, not
# applied in part; a scanner's calls likewise; once
# the slot has moved the batch lands on the new primary, and the shard
# holds every ID it held before plus the new ones.
. "$(dirname "$0")/../lib.sh"

cluster_start 3
kafka_start --brokers 1
cluster_config
scale init 1 --small-keys >/dev/null || fail "init: exit status $?"
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "touch old-%d +3600000\n", i }' | produce ||
    fail "loading: lapse-producer exited with $?"
# a scanner splits the buckets (3,000 IDs: b reaches 5), then stops
scanner_start 0
k=$NS:k:{$NS:0}
src=$(cluster_shard_port 0)
wait_until 20000 '(( $(redis-cli -p "$src" GET "$k" | cut -d" " -f1) >= 5 ))' ||
    fail "the buckets did not grow: state '$(redis-cli -p "$src" GET "$k")'"
scanner_stop 0

slot=$(redis-cli -p "$src" CLUSTER KEYSLOT "$k")
dst=$(cluster_primaries | grep -vx "$src" | head -n 1)
redis-cli -p "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$(cluster_id "$src")" >/dev/null
redis-cli -p "$src" CLUSTER SETSLOT "$slot" MIGRATING "$(cluster_id "$dst")" >/dev/null
# half the bucket zsets move; the state key, the index and the rest stay
redis-cli -p "$src" CLUSTER GETKEYSINSLOT "$slot" 10000 | grep ':z:' | awk 'NR % 2' >half.txt
assert_ge "$(_lines half.txt)" 16 "bucket keys to move first"
redis-cli -p "$src" MIGRATE 127.0.0.1 "$dst" "" 0 5000 KEYS $(cat half.txt) >migrate1.out
assert_eq "$(cat migrate1.out)" OK "MIGRATE of half the buckets"
# calls refused while the slot migrates: at the door (TRYAGAIN, ASK: the
# keys a script names are partly or all gone) or by the script itself
refused() {
    redis-cli -p "$src" INFO errorstats | tr -d '\r' |
        awk -F'[=:,]' '/^errorstat_(TRYAGAIN|ASK):/ { n += $3 } END { print n + 0 }'
}
r0=$(refused)

# a batch of 200 new IDs while the slot is half moved: refused whole
awk 'BEGIN { for (i = 0; i < 200; i++) printf "touch new-%d +3600000\n", i }' >new.txt
(produce <new.txt >new.out 2>&1; echo $? >new.rc) &
wait_until 10000 '(( $(refused) > r0 ))' || fail "no call refused within 10 s"
count_new() { # PORT: new IDs in any key of NS there (ASKING: the target
    # serves an importing slot's keys only to a client that asks so)
    printf '%s\n' ASKING "EVAL \"local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do for _, id in ipairs(redis.call('ZRANGE', k, 0, -1)) do if string.sub(id, 1, 4) == 'new-' then n = n + 1 end end end return n\" 0 $NS" |
        redis-cli -p "$1" | tail -n 1
}
assert_eq "$(count_new "$src")" 0 "new IDs written on the source while its slot migrates"
assert_eq "$(count_new "$dst")" 0 "new IDs written on the target while its slot migrates"
[[ ! -f new.rc ]] || fail "the producer ended while the slot was half moved: $(cat new.out)"

# an idle scanner's call, refused the same way
scanner_start 0
r1=$(refused)
wait_until 10000 '(( $(refused) > r1 ))' || fail "the scanner's calls were not refused within 10 s"

# the rest moves, the slot is the target's: the batch lands there
redis-cli -p "$src" CLUSTER GETKEYSINSLOT "$slot" 10000 >rest.txt
redis-cli -p "$src" MIGRATE 127.0.0.1 "$dst" "" 0 5000 KEYS $(cat rest.txt) >migrate2.out
assert_eq "$(cat migrate2.out)" OK "MIGRATE of the rest"
for p in $(cluster_primaries); do redis-cli -p "$p" CLUSTER SETSLOT "$slot" NODE "$(cluster_id "$dst")" >/dev/null; done
wait_until 20000 '[[ -f new.rc ]]' || fail "the producer did not finish within 20 s of the move"
assert_eq "$(cat new.rc)" 0 "the producer's exit status ($(tail -n 1 new.out))"
assert_eq "$(count_new "$dst")" 200 "new IDs on the target after the move"
total=$(redis-cli -p "$dst" EVAL "local n = 0
    for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do n = n + redis.call('ZCARD', k) end
    return n" 0 "$NS")
assert_eq "$total" 3200 "IDs of the shard after the move"
