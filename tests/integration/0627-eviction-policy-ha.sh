#!/usr/bin/env bash
# 0627-eviction-policy-ha: the maxmemory-policy check of 0625 on every
# primary a program uses, Sentinel and Cluster.
#  - Sentinel: the primary is noeviction, its replica allkeys-lru. After a
#    failover to the replica, a running scanner follows it and logs an error
#    naming the node and its new primary, and fires on; a program started
#    then refuses with one line naming both.
#  - Cluster: one of two primaries is volatile-lru: the producer, the
#    scanner and lapse-scale init refuse at start naming that primary (all
#    primaries are checked at start, not only the one a command goes to);
#    with accept_eviction, status shows each primary's policy and check
#    fails naming the evicting one.
. "$(dirname "$0")/../lib.sh"

redis_start a
redis_replica_start a b
redis-cli -p "$(redis_port b)" CONFIG SET maxmemory-policy allkeys-lru >/dev/null
sentinels_start 1 lapse-a a 1000
kafka_start --brokers 1
write_config
sed -i "s|^redis = .*|redis = { nodes = ( { sentinels = ( $SENTINELS ); master = \"lapse-a\"; } ); };|" "$CONF"
scale init 1 >/dev/null || fail "init through Sentinel: exit status $?"
scanner_start 0
events_follow events.json
wait_until 10000 "[[ -n \$(shard_holder 0) ]]" || fail "the scanner is not active"
redis-cli -p "${SENTINEL_PORTS[0]}" SENTINEL FAILOVER lapse-a >/dev/null
pb=$(redis_port b)
wait_until 20000 "[[ \$(sentinel_primary lapse-a) == $pb ]]" || fail "no failover to b"
want="redis lapse-a \\(primary at 127\\.0\\.0\\.1:$pb\\): maxmemory-policy is"
wait_until 20000 "grep -Eq '^error lapse-scanner: shard 0: $want now allkeys-lru.*serving on' '$T/$SCANNER.log'" ||
    fail "the scanner said nothing of the new primary's policy"
t0=$(now_ms)
sed "s|^redis = { nodes = \(.*\); };|redis = { nodes = \1; accept_eviction = true; };|" "$CONF" >accept.conf
grep -q accept_eviction accept.conf || fail "could not write accept.conf"
for i in $(seq 0 4); do echo "touch after-$i @$((t0 + 200))"; done |
    "$LAPSE_BIN/lapse-producer" -c accept.conf 2>/dev/null || fail "producer with accept_eviction: exit status $?"
events_wait_ids events.json 5 10000
proc_alive "$SCANNER" || fail "the scanner stopped"
expect_refused "Sentinel, allkeys-lru after the failover" \
    "nodes = ( { sentinels = ( $SENTINELS ); master = \"lapse-a\"; } );" "^error lapse-(producer|scanner): $want allkeys-lru, which evicts keys" \
    "producer scanner"
scanner_stop
events_follow_stop

# Cluster: two primaries, the second volatile-lru
cluster_start 2
p2=$(redis_port c2)
redis-cli -p "$p2" CONFIG SET maxmemory-policy volatile-lru >/dev/null
seeds="\"127.0.0.1:$(redis_port c1)\""
want="redis cluster: primary 127\\.0\\.0\\.1:$p2: maxmemory-policy is volatile-lru, which evicts keys"
expect_refused "Cluster, one primary volatile-lru" "cluster = ( $seeds );" "$want" "producer scanner"
sed -i "s|^redis = .*|redis = { cluster = ( $seeds ); };|" "$CONF"
rc=0
scale init 4 >init.out 2>init.err || rc=$?
assert_ne "$rc" 0 "init on the cluster: exit status"
assert_file_match init.err "$want" "init's error on the cluster"
sed -i "s|^redis = .*|redis = { cluster = ( $seeds ); accept_eviction = true; };|" "$CONF"
scale init 4 >/dev/null 2>init.err || fail "init with accept_eviction: exit status $? ($(cat init.err))"
scale status --json >status.json || fail "status on the cluster: exit status $?"
assert_eq "$(jq -c '[.memory[] | [.primary, .maxmemory_policy]] | sort' status.json)" \
    "$(jq -cn --arg a "127.0.0.1:$(redis_port c1)" --arg b "127.0.0.1:$p2" '[[$a, "noeviction"], [$b, "volatile-lru"]] | sort')" \
    "status --json .memory on the cluster"
rc=0
scale check >check.out 2>&1 || rc=$?
assert_eq "$rc" 1 "check on the cluster ($(cat check.out))"
assert_file_match check.out "^redis cluster \\(primary 127\\.0\\.0\\.1:$p2\\): maxmemory-policy is volatile-lru" "check's problem"
assert_eq "$(grep -c 'maxmemory-policy' check.out)" 1 "check's policy problems (one primary)"
