#!/usr/bin/env bash
# 0660-plain-to-sentinel: moving a plain node behind Sentinel, online, as
# docs/operating.md's Production section describes. A namespace initialised on
# plain node a (replica b) names it "127.0.0.1:PORT" in its layout. Then:
# sentinels start monitoring a as "lapse-a"; the config's node becomes
# { sentinels; master = "lapse-a"; was = "127.0.0.1:PORT"; }; scanners are
# restarted with it one by one (IDs due meanwhile fire), producers use it;
# the layout still names the old address and every program finds the node
# by `was`. a is killed -9: the programs follow the failover. A split then
# rewrites the layout with the node's name. Every ID fires, none early.
. "$(dirname "$0")/../lib.sh"
_sp_ports() { sentinel_primary lapse-a; }

redis_start a
redis_replica_start a b
pa=$(redis_port a)
kafka_start --brokers 1
write_config
scale init 2 >/dev/null
scanners_start 2
events_follow events.json
t0=$(now_ms)
for i in $(seq 0 49); do echo "touch p-$i @$((t0 + 1500 + i * 20))"; done | produce || fail "producer (plain): $?"
assert_eq "$(rcli HGET "$NS:layout" nodes)" "127.0.0.1:$pa,127.0.0.1:$pa" "layout nodes before the move"

sentinels_start 3 lapse-a a 1000
cp "$CONF" plain.conf
sed -i "s|^redis = .*|redis = { nodes = ( { sentinels = ( $SENTINELS ); master = \"lapse-a\"; was = \"127.0.0.1:$pa\"; } ); };|" "$CONF"
for s in 0 1; do # rolling restart onto the new config
    scanner_stop "$s"
    scanner_start "$s"
done
t1=$(now_ms)
for i in $(seq 0 49); do echo "touch q-$i @$((t1 + 500 + i * 20))"; done | produce || fail "producer (Sentinel, was): $?"
assert_eq "$(sp_status '[.shard_info[].node] | join(",")')" "lapse-a,lapse-a" "status: the shards' node"
events_wait_ids events.json 100 15000

redis_kill9 a
wait_until 20000 '[[ $(sentinel_primary lapse-a) != $pa ]]' || fail "no replica promoted within 20 s"
REDIS_PORT=$(sentinel_primary lapse-a)
t2=$(now_ms)
for i in $(seq 0 49); do echo "touch r-$i @$((t2 + 500 + i * 20))"; done | produce || fail "producer after the failover: $?"
events_wait_ids events.json 150 15000

scale split >/dev/null || fail "split: exit status $?"
assert_eq "$(rcli HGET "$NS:layout" nodes)" "lapse-a,lapse-a,lapse-a,lapse-a" "layout nodes after the split"
sleep 0.3 # a wrong extra fire shows
scanner_stop
events_follow_stop
assert_eq "$(events_ids events.json | sort -u | grep -c '^[pqr]-')" 150 "IDs delivered"
assert_never_early events.json
