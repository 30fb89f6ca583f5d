#!/usr/bin/env bash
# 0900-cluster-basic: lapse on a Redis Cluster (redis.cluster): 3 primaries,
# 8 shards. Every key of a shard carries the hash tag {NS:I}, so it lives
# in the shard's one slot, on the primary the cluster gave that slot (no
# CROSSSLOT for the multi-key scripts); producer, scanners and lapse-scale
# route each shard to it. 200 IDs (payloads, resets, cancels) fire exactly
# once, never early; status names each shard's slot and primary. Bad input:
# seeds that are not a cluster, and a cluster with a slot no primary
# serves, each give one clear line and a non-zero exit.
. "$(dirname "$0")/../lib.sh"

cluster_start 3
kafka_start
cluster_config
scale init 8 >init.out || fail "init: exit status $?"

: >input
for ((i = 0; i < 200; i++)); do
    case $((i % 5)) in
    0) echo "touch c$i +$((800 + i * 5)) pay-$i" ;;
    1) printf 'touch c%d +60000\ntouch c%d +%d\n' "$i" "$i" $((800 + i * 5)) ;; # a reset
    2) printf 'touch c%d +%d\ncancel c%d\n' "$i" $((800 + i * 5)) "$i" ;;
    *) echo "touch c$i +$((800 + i * 5))" ;;
    esac
done >input
produce <input || fail "lapse-producer: exit status $?"

# every key is tagged and sits on the primary that serves its slot
for p in $(cluster_primaries); do
    redis-cli -p "$p" --scan --pattern "$NS:*" >"keys-$p.txt"
done
# (a shard in small keys: its buckets, index and state carry the tag too)
cat keys-*.txt | grep -v -E "^$NS:([zplkx]):\{$NS:[0-7]\}(:[0-9]+)?$|^$NS:layout:\{$NS\}$" >untagged.txt || true
[[ ! -s untagged.txt ]] || fail "keys without the shard's tag: $(head -3 untagged.txt | tr '\n' ' ')"
for s in 0 1 2 3 4 5 6 7; do
    want=$(cluster_shard_port "$s")
    # (its zset, or in small keys its state key)
    got=$(grep -l -x -F -e "$NS:z:{$NS:$s}" -e "$NS:k:{$NS:$s}" keys-*.txt | sed 's/keys-\(.*\)\.txt/\1/' || true)
    [[ -z $got || $got == "$want" ]] || fail "shard $s's keys on port $got, its slot is served by $want"
    assert_eq "$(sp_status ".shard_info[$s].primary")" "127.0.0.1:$want" "status: shard $s's primary"
    assert_eq "$(sp_status ".shard_info[$s].slot")" \
        "$(redis-cli -p "$want" CLUSTER KEYSLOT "$NS:z:{$NS:$s}")" "status: shard $s's slot"
done
assert_eq "$(sp_status '.nodes | length')" 3 "primaries in status"
scale status >status.txt || fail "status: exit status $?"
assert_file_match status.txt "^cluster +cluster 5461 slots" "status names the primaries and their slots"

scanners_start 8
want=$(awk '{ print $2 }' input | sort -u | awk -F'c' '$2 % 5 != 2' | wc -l)
events_read "$want" 20000 >events.json || fail "$(_lines events.json) of $want events within 20 s"
assert_never_early events.json
jq -r .id events.json | sort >got.ids
awk '{ print $2 }' input | sort -u | awk -F'c' '$2 % 5 != 2' | sort >want.ids
diff want.ids got.ids >ids.diff || fail "fired IDs differ: $(head -5 ids.diff | tr '\n' ' ')"
jq -r 'select(.id == "c0") | .payload' events.json | grep -qx pay-0 || fail "c0's payload"
sp_wait_no_data 5000
if events_read $((want + 1)) 1000 >all.json; then
    fail "an event more than the $want IDs: $(jq -r .id all.json | sort | uniq -d | head -3)"
fi

# seeds that are not a cluster: one line, non-zero, nothing retried for long
redis_start plain
sed "s|^redis = .*|redis = { cluster = ( \"127.0.0.1:$(redis_port plain)\" ); retry_timeout_ms = 500; };|" \
    "$CONF" >plain.conf
"$LAPSE_SCRIPTS/lapse-scale" -c plain.conf status >out.txt 2>err.txt && fail "status on a non-cluster: exit 0"
assert_eq "$(wc -l <err.txt)" 1 "lines of the error: $(cat err.txt)"
assert_file_match err.txt "cluster support disabled" "the error says the seed is not a cluster"
echo "touch x +1000" | "$LAPSE_BIN/lapse-producer" -c plain.conf 2>err2.txt && fail "producer on a non-cluster: exit 0"
assert_file_match err2.txt "cluster support disabled" "the producer's error"

# a slot nobody serves: shard 3's, taken from its primary. (Without
# cluster-require-full-coverage no, every node turns the whole cluster down
# a moment later, at its next cron: then each shard says so, a line each.)
p3=$(cluster_shard_port 3)
slot3=$(redis-cli -p "$p3" CLUSTER KEYSLOT "$NS:z:{$NS:3}")
for p in $(cluster_primaries); do redis-cli -p "$p" CONFIG SET cluster-require-full-coverage no >/dev/null; done
for p in $(cluster_primaries); do redis-cli -p "$p" CLUSTER DELSLOTS "$slot3" >/dev/null 2>&1; done
sed "s|^redis = { cluster = \(([^)]*)\);|redis = { cluster = \1; retry_timeout_ms = 500;|" "$CONF" >down.conf
grep -q "retry_timeout_ms = 500" down.conf || fail "could not set redis.retry_timeout_ms"
wait_until 10000 '! "$LAPSE_SCRIPTS/lapse-scale" -c down.conf status >/dev/null 2>&1' ||
    fail "status still succeeds with slot $slot3 unserved"
"$LAPSE_SCRIPTS/lapse-scale" -c down.conf status >/dev/null 2>err3.txt && fail "status: exit 0"
assert_eq "$(wc -l <err3.txt)" 1 "lines of the error: $(cat err3.txt)"
assert_file_match err3.txt "shard 3: .*slot" "the error names shard 3 and its unserved slot"
