#!/usr/bin/env bash
# 0670-deploy-redis: the Redis layout deploy/ describes works as written:
# deploy/redis/redis-node.conf for a primary and its replicas (TLS only,
# mutual TLS, ACL users, default user off), deploy/redis/sentinel.conf for
# three sentinels over TLS with their own ACL users, quorum 2, reaching
# each other as sentinel-user, and deploy/lapse.conf.production's node entry
# (its three sentinels, Sentinel name, sentinel user, ACL user, TLS,
# wait_replicas = 1). Only what cannot be the same here is replaced: host
# names and ports by 127.0.0.1 and free ports, certificate paths by
# certificates made here, the second node and Kafka's and the scanners'
# settings by this test's, and the sentinels' down-after-milliseconds and
# failover-timeout by 1000 and 10000. The sentinels know each other and
# answer SENTINEL ckquorum with OK; lapse-scale init and status, a producer
# and the scanners work through them; after a kill -9 of the primary two
# sentinels see it down, one is voted to fail it over, and with the rights
# their ACL user has they promote a replica (the second one keeps
# wait_replicas = 1 possible) and answer ckquorum OK again; the scanners
# follow by themselves, confirming the primary as the lapse-sentinel user
# (who may ask for nothing else).
. "$(dirname "$0")/../lib.sh"
NS=devices # the namespace deploy/ grants the ACL user
D=$LAPSE_ROOT/deploy

tls_mkcert ca ca
tls_mkcert server ca "IP:127.0.0.1"
tls_mkcert client ca
certs() { # FILE: certificate paths -> this test's
    sed -i -e "s|/etc/redis/tls/server.pem|$T/server.crt|; s|/etc/redis/tls/server.key|$T/server.key|" \
        -e "s|/etc/redis/tls/ca.pem|$T/ca.crt|" "$1"
}
tcli() { # PORT ARGS...
    local port=$1
    shift
    redis-cli -h 127.0.0.1 -p "$port" --tls --cacert "$T/ca.crt" --cert "$T/client.crt" \
        --key "$T/client.key" --no-auth-warning "$@"
}

node_start() { # NAME [PRIMARY_PORT]: redis-node.conf as is, but ports and paths
    free_port >/dev/null
    local port=$FREE_PORT dir=$T/redis-$1
    mkdir -p "$dir"
    sed "s/^tls-port 6379/tls-port $port/" "$D/redis/redis-node.conf" >"$dir/redis.conf"
    certs "$dir/redis.conf"
    printf 'dir %s\nbind 127.0.0.1\nlogfile ""\n%s\n' "$dir" "${2:+replicaof 127.0.0.1 $2}" >>"$dir/redis.conf"
    spawn "redis-$1" redis-server "$dir/redis.conf"
    wait_until 10000 "[[ \$(tcli $port --user lapse --pass change-me PING 2>/dev/null) == PONG ]]" ||
        fail "redis $1 did not start from deploy/redis/redis-node.conf"
    NODE_PORT=$port
}
node_start a
pa=$NODE_PORT
node_start b "$pa"
pb=$NODE_PORT
node_start c "$pa"
pc=$NODE_PORT
# (as the ACL user: WAIT answers how many replicas have synced; the first
# sync waits repl-diskless-sync-delay, 5 s)
wait_until 20000 "[[ \$(tcli $pa --user lapse --pass change-me WAIT 2 1000) == 2 ]]" ||
    fail "the replicas did not sync with the primary as user replicator"

# three sentinels from sentinel.conf as shipped (quorum 2 of 3, the ACL
# users, sentinel-user for each other); only lapse-b goes (no such node here)
SP=()
for i in 1 2 3; do
    free_port >/dev/null
    SP+=("$FREE_PORT")
    mkdir -p "$T/sentinel-$i"
    sed -e "s/^tls-port 26379/tls-port $FREE_PORT/" -e '/lapse-b/d' \
        -e "s/^sentinel monitor lapse-a lapse-a-1.internal 6379 2\$/sentinel monitor lapse-a 127.0.0.1 $pa 2/" \
        -e "s/^sentinel down-after-milliseconds lapse-a 5000/sentinel down-after-milliseconds lapse-a 1000/" \
        -e "s/^sentinel failover-timeout lapse-a 60000/sentinel failover-timeout lapse-a 10000/" \
        "$D/redis/sentinel.conf" >"$T/sentinel-$i/sentinel.conf"
    certs "$T/sentinel-$i/sentinel.conf"
    grep -q "^sentinel monitor lapse-a 127.0.0.1 $pa 2\$" "$T/sentinel-$i/sentinel.conf" ||
        fail "sentinel.conf does not monitor lapse-a with quorum 2 as this test expects"
    printf 'dir %s\nbind 127.0.0.1\nlogfile ""\n' "$T/sentinel-$i" >>"$T/sentinel-$i/sentinel.conf"
    spawn "sentinel-$i" redis-server "$T/sentinel-$i/sentinel.conf" --sentinel
done
ps=${SP[0]}
sadmin() { # PORT ARGS...: as the sentinels' admin user
    local port=$1
    shift
    tcli "$port" --user admin --pass change-me-5 "$@"
}
for sp in "${SP[@]}"; do
    wait_until 15000 "[[ \$(tcli $sp --user lapse-sentinel --pass change-me-too SENTINEL get-master-addr-by-name lapse-a 2>/dev/null | tail -n 1) == $pa ]]" ||
        fail "the sentinel from deploy/redis/sentinel.conf does not name lapse-a's primary: $(tcli "$sp" --user lapse-sentinel --pass change-me-too SENTINEL get-master-addr-by-name lapse-a 2>&1)"
done
# each knows the other two (hello messages through the primary) and has had
# an answer to a PING from each: a sentinel that cannot log in to its peers
# gets none and counts them down, so neither the quorum nor a majority for
# the failover's vote is there
peers_up() { # PORT: the peers whose PING was answered (no ping pending, not down)
    sadmin "$1" SENTINEL sentinels lapse-a 2>/dev/null |
        awk 'NR % 2 { k = $0; next } k == "flags" { f = $0 } k == "last-ping-sent" && f == "sentinel" && $0 == 0 { n++ }
            END { print n + 0 }'
}
all_peers_up() {
    local sp
    for sp in "${SP[@]}"; do (($(peers_up "$sp") == 2)) || return 1; done
}
wait_until 20000 all_peers_up ||
    fail "the sentinels from deploy/redis/sentinel.conf do not reach each other: $(for sp in "${SP[@]}"; do sadmin "$sp" SENTINEL ckquorum lapse-a 2>&1; done)"
ckquorum_all() { # WHEN: every sentinel finds the quorum and a majority
    local sp
    for sp in "${SP[@]}"; do
        assert_match "$(sadmin "$sp" SENTINEL ckquorum lapse-a 2>&1)" '^OK 3 usable Sentinels' "SENTINEL ckquorum lapse-a on port $sp $1"
    done
}
ckquorum_all "before the failover"

# lapse.conf.production: its first node and its redis keys; this test's Kafka
# and scanner settings (no ingress, no metrics ports)
kafka_start --brokers 1
awk '/^(kafka|scanner|ingress) = \{/ { skip = 1 } !skip { print } skip && /\};$/ { skip = 0 }' "$D/lapse.conf.production" |
    sed -e "s/sentinel-1.internal:26379/127.0.0.1:${SP[0]}/; s/sentinel-2.internal:26379/127.0.0.1:${SP[1]}/" \
        -e "s/sentinel-3.internal:26379/127.0.0.1:${SP[2]}/" \
        -e "s|/etc/lapse/redis-ca.pem|$T/ca.crt|; s|/etc/lapse/redis-client.pem|$T/client.crt|" \
        -e "s|/etc/lapse/redis-client.key|$T/client.key|" >prod.conf
# drop the second node (its entry: from the second "{ sentinels" line to the "}" that ends it)
awk '/^    \{ sentinels/ { n++ } n == 2 && !done { if (/\}$/) { done = 1 } ; next } { print }' prod.conf |
    sed 's/; },$/; }/' >conf.tmp # (the last node left: no comma after it)
printf 'kafka = { brokers = "%s"; topic = "%s"; };\nscanner = { %s };\n' "$KAFKA_BROKERS" "$TOPIC" "$SCANNER_CFG" >>conf.tmp
mv conf.tmp "$CONF"
grep -q 'master = "lapse-a"' "$CONF" && ! grep -v '^#' "$CONF" | grep -q 'lapse-b' || fail "could not derive the config: $(cat "$CONF")"
REDIS_PORT=$pa
rcli() { tcli "$REDIS_PORT" --user lapse --pass change-me "$@"; }

scale init 2 >/dev/null || fail "init: exit status $?"
st=$(scale status --json) || fail "status: exit status $?"
assert_eq "$(jq -c '.nodes[0] | [.name, .via, .tls, .primary, .replicas_online]' <<<"$st")" \
    "[\"lapse-a\",\"sentinel\",true,\"127.0.0.1:$pa\",2]" "status of the node"
scanners_start 2
events_follow events.json
t0=$(now_ms)
for i in $(seq 0 9); do echo "touch dev-$i @$((t0 + 300 + i * 10))"; done | produce ||
    fail "producer through the deploy layout: exit status $?"
events_wait_ids events.json 10 10000

# the failover: a kill -9 of the primary with the scanners running; two
# sentinels must see it down (quorum 2), and one gets the others' votes.
# They tell lapse as its own ACL user.
sentinel_names() { # [PORT]: the primary a sentinel (default: the first) names
    tcli "${1:-$ps}" --user lapse-sentinel --pass change-me-too SENTINEL get-master-addr-by-name lapse-a 2>/dev/null | tail -n 1
}
promoted() { # every sentinel names the same replica
    local sp n
    n=$(sentinel_names)
    [[ $n == "$pb" || $n == "$pc" ]] || return 1
    for sp in "${SP[@]}"; do [[ $(sentinel_names "$sp") == "$n" ]] || return 1; done
}
proc_kill9 redis-a
wait_until 30000 promoted ||
    fail "the sentinels did not promote a replica within 30 s of the kill: $(cat "$T"/sentinel-*.log | grep -E 'odown|vote|elected|failover|switch' | tail -n 8)"
grep -hE "\+odown master lapse-a 127\.0\.0\.1 $pa #quorum [23]/2" "$T"/sentinel-*.log >/dev/null ||
    fail "no sentinel saw lapse-a objectively down with a quorum of 2: $(grep -h 'odown' "$T"/sentinel-*.log)"
REDIS_PORT=$(sentinel_names)
wait_until 20000 '[[ $(tcli $REDIS_PORT --user lapse --pass change-me WAIT 1 200) == 1 ]]' ||
    fail "the new primary $REDIS_PORT has no replica after the failover (the sentinel did not reconfigure the other one)"
t0=$(now_ms)
for i in $(seq 0 9); do echo "touch after-$i @$((t0 + 300 + i * 10))"; done | produce ||
    fail "producer after the failover: exit status $?"
events_wait_ids events.json 20 15000
assert_eq "$(scale status --json | jq -r '.nodes[0].primary')" "127.0.0.1:$REDIS_PORT" "status: the primary after the failover"
ckquorum_all "after the failover"
# each scanner keeps a link to a sentinel to confirm the primary with, as
# lapse-sentinel (whose rights are enough: the link stays and is used)
confirm_links() {
    local sp
    for sp in "${SP[@]}"; do sadmin "$sp" CLIENT LIST; done |
        grep -c 'cmd=sentinel|get-master-addr-by-name user=lapse-sentinel '
}
wait_until 5000 '(($(confirm_links) >= 2))' ||
    fail "the scanners keep no link to a sentinel to confirm the primary: $(for sp in "${SP[@]}"; do sadmin "$sp" CLIENT LIST; done)"
scanner_stop
events_follow_stop
assert_never_early events.json
