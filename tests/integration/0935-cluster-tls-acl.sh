#!/usr/bin/env bash
# 0935-cluster-tls-acl: lapse on a Redis Cluster over mutual TLS, as an ACL
# user limited to its namespace (redis.cluster_tls, redis.tls,
# cluster_username, cluster_password; docs/operating.md's `~NS:* &* +@all
# -@dangerous`). 3 primaries with a replica each; every node serves TLS on
# a port of its own beside the plain one the test's redis-cli uses, and its
# cluster bus and replication run over TLS (tls-cluster: the cluster tells
# a TLS client TLS ports, in CLUSTER SLOTS and MOVED). Checked:
#  - init, producer, 4 scanners: 100 IDs fire once each, never early;
#  - every connection of lapse's (user lapse) arrived on a TLS port, and
#    on every primary that serves a shard;
#  - status says how the cluster is reached (tls);
#  - a primary dies (kill -9), its replica takes over: the scanners follow
#    over TLS as the ACL user, and IDs written after it fire;
#  - the password shows in no log and no status.
. "$(dirname "$0")/../lib.sh"

tls_mkcert ca ca
tls_mkcert server ca "IP:127.0.0.1"
tls_mkcert client ca
CLUSTER_TLS=1
cluster_start 3 1
for c in "${CLUSTER_NODES[@]}"; do # (ACL users are each node's own)
    out=$(redis-cli -p "$(redis_port "$c")" ACL SETUSER lapse on '>pw-cluster-s3cret' "~$NS:*" '&*' +@all -@dangerous)
    [[ $out == OK ]] || fail "ACL SETUSER on $c: $out"
done
CLUSTER_REDIS_EXTRA="cluster_username = \"lapse\"; cluster_password = \"pw-cluster-s3cret\"; cluster_tls = true;"
CLUSTER_REDIS_EXTRA+=" tls = { ca_file = \"$T/ca.crt\"; cert_file = \"$T/client.crt\"; key_file = \"$T/client.key\"; };"
cluster_serve 4

seq -f 't%03g' 0 99 | awk '{ print "touch " $1 " +" (500 + NR * 5) }' | produce ||
    fail "producer over TLS: exit status $?"
events_wait_ids events.json 100 15000

# lapse's connections: all on TLS ports, on every primary serving a shard
for s in 0 1 2 3; do
    p=$(cluster_shard_port "$s")
    c=$(cluster_node_of "$p")
    clients=$(redis-cli -p "$p" CLIENT LIST | tr -d '\r' | grep ' user=lapse ')
    [[ -n $clients ]] || fail "no connection of user lapse on $c, the primary of shard $s"
    plain=$(grep -v " laddr=127.0.0.1:${CLUSTER_TLS_PORT[$c]} " <<<"$clients" || true)
    [[ -z $plain ]] || fail "connections of lapse's on $c's plain port: $plain"
done
scale status >status.txt || fail "status: exit status $?"
assert_file_match status.txt "^cluster +cluster [0-9]+ slots, tls " "status: how the cluster is reached"

# a primary dies: its replica takes over, the scanners follow
victim=$(cluster_busiest_primary 4)
vc=$(cluster_node_of "$victim")
redis_kill9 "$vc"
cluster_wait_ok 30000
note "killed $vc (port $victim, TLS ${CLUSTER_TLS_PORT[$vc]}); primaries now: $(cluster_primaries | tr '\n' ' ')"
seq -f 'u%03g' 0 99 | awk '{ print "touch " $1 " +" (300 + NR * 5) }' | produce ||
    fail "producer after the failover: exit status $?"
events_wait_ids events.json 200 20000
scale status >>status.txt || fail "status after the failover: exit status $?"
scanner_stop
events_follow_stop
assert_once events.json
assert_never_early events.json
assert_eq "$(cat "$T"/*.log status.txt | grep -c 'pw-cluster-s3cret')" 0 "lines showing the password"
