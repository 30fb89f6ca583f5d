#!/usr/bin/env bash
# 0816-small-keys-cluster: the read-only tools on shards in small keys on a
# Redis Cluster of 3 primaries, where every key of a shard carries its hash
# tag (NS:z:{NS:I}:J, NS:x:{NS:I}, NS:k:{NS:I}). 4 shards, each state key
# "2 1" (5 buckets) set before anything is written; 6 x 20 IDs (0815's
# kinds, a payload on every third): status --json pending, status --due
# --json's total, get ID --json's deadline_ms and payload are what was
# written, and the buckets hold every ID.
. "$(dirname "$0")/../lib.sh"

cluster_start 3
cluster_config
scale init 4 >/dev/null || fail "init: exit status $?"
for s in 0 1 2 3; do
    redis-cli -p "$(cluster_shard_port $s)" SET "$NS:k:{$NS:$s}" "2 1" >/dev/null
done

names=(overdue next_1m next_10m next_1h next_1d later)
offsets=(-5000 30000 300000 1800000 18000000 259200000)
now=$(now_ms)
for b in 0 1 2 3 4 5; do
    for ((i = 0; i < 20; i++)); do
        pay=""
        ((i % 3 == 0)) && pay=" pay-${names[b]}-$i"
        echo "touch ${names[b]}-$i @$((now + offsets[b]))$pay"
    done
done | produce 2>/dev/null || fail "producer: exit status $?"

n=0
for s in 0 1 2 3; do
    port=$(cluster_shard_port $s)
    assert_eq "$(redis-cli -p "$port" EXISTS "$NS:z:{$NS:$s}")" 0 "shard $s: no one-key zset"
    for j in 0 1 2 3 4; do n=$((n + $(redis-cli -p "$port" ZCARD "$NS:z:{$NS:$s}:$j"))); done
done
assert_eq "$n" 120 "the buckets hold every ID"

scale status --json >st.json || fail "status --json: exit status $?"
assert_eq "$(jq -c '[([.shard_info[].pending] | add), ([.shard_info[].due] | add)]' st.json)" "[120,20]" \
    "status --json: pending, due"
scale status --due --json >due.json || fail "status --due --json: exit status $?"
assert_eq "$(jq -c '[.total | .overdue, .next_1m, .next_10m, .next_1h, .next_1d, .later, .inflight, .pending]' due.json)" \
    "[20,20,20,20,20,20,0,120]" "status --due --json: the total"
for b in 0 3 5; do
    for i in 0 1 2 3 19; do
        id=${names[b]}-$i
        scale get "$id" --json >g.json || fail "get $id: exit status $?"
        pay=null
        ((i % 3 == 0)) && pay="\"pay-$id\""
        assert_eq "$(jq -c '[.deadline_ms, .payload]' g.json)" "[$((now + offsets[b])),$pay]" "get $id --json"
    done
done
