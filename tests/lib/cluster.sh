# tests/lib/cluster.sh — part of tests/lib.sh (sourced by it, never alone):
# a Redis Cluster built for a test and lapse served on it.

# ---------------------------------------------------------------- Redis Cluster
# (tests/integration/09NN-cluster-*.sh). A cluster's nodes are redis_start'ed
# as c1, c2, ... with --cluster-enabled; the sp_* helpers then read every
# current primary (cluster_primaries), where a shard's keys are
# NS:K:{NS:I} (redis.cluster: one slot per shard).

CLUSTER_NODES=()             # names of the cluster's nodes, c1 first
CLUSTER_TIMEOUT_MS=${CLUSTER_TIMEOUT_MS:-2000} # cluster-node-timeout: how soon a failover starts

# cluster_node_start NAME [ARGS...]: one more cluster-enabled redis (not yet
# joined). With CLUSTER_TLS=1 it also serves mutual TLS on a port of its
# own (CLUSTER_TLS_PORT[NAME]; server.crt, server.key and ca.crt of the
# test dir, tls_mkcert), its cluster bus and replication run over TLS, and
# the cluster tells a TLS client TLS ports, a plain one (the test's
# redis-cli) plain ports.
declare -A CLUSTER_TLS_PORT=()
cluster_node_start() {
    local tls=()
    if [[ ${CLUSTER_TLS:-0} == 1 ]]; then
        # (the cluster bus listens on the TLS port + 10000 then: free too)
        local hex i
        for ((i = 0; i < 50; i++)); do
            free_port >/dev/null
            printf -v hex ':%04X ' $((FREE_PORT + 10000))
            grep -qF -- "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null || break
        done
        CLUSTER_TLS_PORT[$1]=$FREE_PORT
        tls=(--tls-port "$FREE_PORT" --tls-cluster yes --tls-replication yes --tls-auth-clients yes
            --tls-cert-file "$T/server.crt" --tls-key-file "$T/server.key" --tls-ca-cert-file "$T/ca.crt")
    fi
    redis_start "$1" --cluster-enabled yes --cluster-config-file nodes.conf \
        --cluster-node-timeout "$CLUSTER_TIMEOUT_MS" "${tls[@]}" "${@:2}"
    CLUSTER_NODES+=("$1")
}

# cluster_start PRIMARIES [REPLICAS]: a Redis Cluster of PRIMARIES primaries
# (c1..), each with REPLICAS replicas (the next nodes, dealt out in turn),
# the slots split evenly, every node agreeing (cluster_wait_ok). REDIS_PORT
# is c1's. Built by hand as redis-cli --cluster create would (slots, config
# epochs, MEET, REPLICATE), without its 1 s polls while the nodes meet.
cluster_start() {
    local np=$1 nr=${2:-0} i n ports=() out
    n=$((np * (1 + nr)))
    for ((i = 1; i <= n; i++)); do
        cluster_node_start "c$i"
        ports+=("$(redis_port "c$i")")
    done
    for ((i = 0; i < np; i++)); do
        out=$(redis-cli -p "${ports[i]}" CLUSTER ADDSLOTSRANGE $((16384 * i / np)) $((16384 * (i + 1) / np - 1)))
        out+=$(redis-cli -p "${ports[i]}" CLUSTER SET-CONFIG-EPOCH $((i + 1)))
        [[ $out == OKOK ]] || fail "cluster node c$((i + 1)): slots and epoch: $out"
    done
    local meet=${ports[0]} # (with TLS, the bus is at the TLS port + 10000)
    [[ ${CLUSTER_TLS:-0} != 1 ]] || meet=${CLUSTER_TLS_PORT[c1]}
    for ((i = 1; i < n; i++)); do
        out=$(redis-cli -p "${ports[i]}" CLUSTER MEET 127.0.0.1 "$meet")
        [[ $out == OK ]] || fail "cluster node c$((i + 1)): MEET: $out"
    done
    wait_until 20000 "_cluster_all_know $n" || fail "the cluster's $n nodes did not all meet within 20 s"
    for ((i = np; i < n; i++)); do
        out=$(redis-cli -p "${ports[i]}" CLUSTER REPLICATE "$(cluster_id "${ports[(i - np) % np]}")")
        [[ $out == OK ]] || fail "cluster node c$((i + 1)): REPLICATE: $out"
    done
    cluster_wait_ok 20000
}
_cluster_all_know() { # N: every node knows N nodes
    local c
    for c in "${CLUSTER_NODES[@]}"; do
        [[ $(redis-cli -p "$(redis_port "$c")" CLUSTER INFO | tr -d '\r') == *cluster_known_nodes:$1* ]] || return 1
    done
}

# cluster_wait_ok [TIMEOUT_MS]: every live node says cluster_state:ok with
# all 16384 slots served, and every live replica is in sync with its primary
cluster_wait_ok() {
    wait_until "${1:-20000}" _cluster_ok || {
        local c
        for c in "${CLUSTER_NODES[@]}"; do
            proc_alive "${_REDIS_PROC[$c]}" || continue
            echo "$c: $(redis-cli -p "$(redis_port "$c")" CLUSTER INFO | tr -d '\r' | grep -E 'state|slots_ok|known' | tr '\n' ' ')" >&2
        done
        fail "the cluster did not settle"
    }
}
_cluster_ok() {
    local c alive=0 info
    for c in "${CLUSTER_NODES[@]}"; do proc_alive "${_REDIS_PROC[$c]}" && alive=$((alive + 1)); done
    for c in "${CLUSTER_NODES[@]}"; do
        proc_alive "${_REDIS_PROC[$c]}" || continue
        info=$(redis-cli -p "$(redis_port "$c")" CLUSTER INFO 2>/dev/null | tr -d '\r')
        [[ $info == *cluster_state:ok* && $info == *cluster_slots_ok:16384* ]] || return 1
        # a replica has its primary's data, and its primary streams to it
        # (WAIT can count it: _primary_streams)
        info=$(redis-cli -p "$(redis_port "$c")" INFO replication 2>/dev/null | tr -d '\r')
        [[ $info == *role:master* || $info == *master_link_status:up* ]] || return 1
        [[ $info != *role:master* ]] || _primary_streams "$(redis_port "$c")" || return 1
    done
    return 0
}
# _primary_streams PORT: every replica of the primary on PORT acknowledges
# a write (on a cluster node: of a key of one of its slots, not MOVED)
_primary_streams() {
    local n i out
    n=$(redis-cli -p "$1" INFO replication | tr -d '\r' | sed -n 's/^connected_slaves://p')
    ((${n:-0} == 0)) && return 0
    for ((i = 0; i < 64; i++)); do # a key of a slot this primary serves (not MOVED)
        out=$(printf 'INCR lapse-test:sync:%d\nWAIT %d 500\n' "$i" "$n" | redis-cli -p "$1" 2>&1)
        [[ ${out%%$'\n'*} =~ ^[0-9]+$ ]] || continue
        (($(tail -n 1 <<<"$out") >= n))
        return
    done
    return 1
}

# cluster_primaries: the ports of the live nodes that are primaries now
# (a node that does not answer within 2 s is left out)
cluster_primaries() {
    local c p
    for c in "${CLUSTER_NODES[@]}"; do
        proc_alive "${_REDIS_PROC[$c]}" || continue
        p=$(redis_port "$c")
        # (a stopped node, SIGSTOP, does not answer: not a primary to use)
        [[ $(timeout 2 redis-cli -p "$p" ROLE 2>/dev/null | head -n 1) == master ]] && echo "$p"
    done
    return 0
}

# cluster_node_of PORT: the name (c1, ...) of the node on PORT
cluster_node_of() {
    local c
    for c in "${CLUSTER_NODES[@]}"; do [[ $(redis_port "$c") == "$1" ]] && echo "$c" && return 0; done
    fail "no cluster node on port $1"
}

# cluster_id PORT: the cluster node ID of the node on PORT
cluster_id() { redis-cli -p "$1" CLUSTER MYID; }

# cluster_config [EXTRA]: write_config with redis.cluster naming every node
# started so far as a seed (its TLS port with CLUSTER_TLS=1), and
# CLUSTER_REDIS_EXTRA inside the redis group
cluster_config() {
    local seeds="" c p
    for c in "${CLUSTER_NODES[@]}"; do
        p=$(redis_port "$c")
        [[ ${CLUSTER_TLS:-0} != 1 ]] || p=${CLUSTER_TLS_PORT[$c]}
        seeds+="${seeds:+, }\"127.0.0.1:$p\""
    done
    write_config "$CONF" "${1:-}"
    sed -i "s|^redis = .*|redis = { cluster = ( $seeds ); ${CLUSTER_REDIS_EXTRA:-} };|" "$CONF"
}

# cluster_serve SHARDS: lapse on the cluster: a one-broker Kafka, CONF
# (cluster_config, CLUSTER_REDIS_EXTRA as set), SHARDS shards with a
# scanner each, and their events followed into events.json
cluster_serve() {
    local s
    kafka_start --brokers 1
    cluster_config
    scale init "$1" ${SP_INIT_ARGS:-} >/dev/null || fail "init: exit status $?"
    for ((s = 0; s < $1; s++)); do scanner_start "$s"; done
    events_follow events.json
}

# cluster_busiest_primary N: the port of the primary serving the most of
# shards 0..N-1 (ties: any of them)
cluster_busiest_primary() {
    local s p
    declare -A count=()
    for ((s = 0; s < $1; s++)); do
        p=$(cluster_shard_port "$s")
        count[$p]=$((${count[$p]:-0} + 1))
    done
    for p in "${!count[@]}"; do echo "${count[$p]} $p"; done | sort -rn | head -n 1 | cut -d' ' -f2
}

# cluster_workload SEED FIRST_FIRE_MS: the workload of the tests that move
# slots under load: sp_workload over 300 IDs from t0 (set here: now) with
# SP_LEAD_MS as the caller set it, and 200 more IDs (f000..) falling due
# every 25 ms from t0 + FIRST_FIRE_MS, to fire while slots move; ids.txt,
# hashes.txt, expect.tsv; producer A started and fed pre.txt.
cluster_workload() {
    local i
    # with CLUSTER_BULK=N first N IDs an hour away (bulk-0 ..), so that
    # shards hold many keys while slots move (loaded before t0: the
    # workload's lead time is for its own writes)
    if [[ -n ${CLUSTER_BULK:-} ]]; then
        awk -v n="$CLUSTER_BULK" 'BEGIN { for (i = 0; i < n; i++) printf "touch bulk-%d +3600000\n", i }' |
            produce || fail "the bulk IDs: lapse-producer exited with $?"
    fi
    { seq -f 's%03g' 0 299; seq -f 'f%03g' 0 199; echo mk.A.2; } >ids.txt
    sp_hashes ids.txt >hashes.txt
    t0=$(now_ms)
    sp_workload "$t0" 300 "$1"
    for ((i = 0; i < 200; i++)); do
        printf 'f%03d\tonce\t%d\t-\t0\t0\n' "$i" $((t0 + $2 + i * 25)) >>expect.tsv
        printf 'touch f%03d @%d\n' "$i" $((t0 + $2 + i * 25)) >>pre.txt
    done
    sp_producer A
    sp_feed A pre.txt
}

# cluster_bulk_end: with CLUSTER_BULK=N, checks that every one of the N
# bulk IDs is still pending (in any shard's zset or buckets, on any
# primary), then cancels them, so that the namespace can empty
cluster_bulk_end() {
    [[ -n ${CLUSTER_BULK:-} ]] || return 0
    local p c n=0
    for p in $(cluster_primaries); do
        c=$(redis-cli -p "$p" EVAL "local n = 0
            for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
                for _, id in ipairs(redis.call('ZRANGE', k, 0, -1)) do
                    if string.sub(id, 1, 5) == 'bulk-' then n = n + 1 end
                end
            end
            return n" 0 "$NS")
        n=$((n + c))
    done
    assert_eq "$n" "$CLUSTER_BULK" "bulk IDs pending after the slots moved"
    note "scripts ended whole as TRYAGAIN while slots moved: $(for p in $(cluster_primaries); do
        redis-cli -p "$p" INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_TRYAGAIN:count=//p'
    done | awk "{ n += \$1 } END { print n + 0 }")"
    awk -v n="$CLUSTER_BULK" 'BEGIN { for (i = 0; i < n; i++) printf "cancel bulk-%d\n", i }' |
        produce || fail "cancelling the bulk IDs: lapse-producer exited with $?"
}

# cluster_replay_while PROC: feeds producer A the workload's later writes
# (b1.txt, a1.txt, b2.txt of sp_workload) again and again while process
# PROC (a reshard, a rebalance) runs, each round followed by a status that
# must answer. Replaying them ends in the same state, as long as nothing
# has fallen due: a round begins only while one as long as the last (and
# 1 s more) still ends before t0 + SP_LEAD_MS (t0: the caller's), so a slow
# machine runs fewer rounds rather than writing past the first deadline.
# The rounds are left in CLUSTER_ROUNDS.
cluster_replay_while() {
    local r0 took
    CLUSTER_ROUNDS=0
    while :; do
        r0=$(now_ms)
        sp_feed A b1.txt
        sp_feed A a1.txt
        sp_feed A b2.txt
        scale status --json >st.json || fail "status failed while slots moved: exit status $?"
        CLUSTER_ROUNDS=$((CLUSTER_ROUNDS + 1))
        took=$(($(now_ms) - r0))
        proc_alive "$1" && (($(now_ms) + took + 1000 < t0 + SP_LEAD_MS)) && ((CLUSTER_ROUNDS < 100)) || break
    done
    local t1
    t1=$(now_ms)
    note "$CLUSTER_ROUNDS rounds of writes, done $((t1 - t0)) ms after t0; $1 $(proc_alive "$1" && echo still runs || echo is over)"
    ((t1 < t0 + SP_LEAD_MS - 100)) || fail "the writes took until t0 + $((t1 - t0)) ms: deadlines may have passed meanwhile (machine too slow)"
}

# cluster_shard_port SHARD: the port of the primary serving SHARD's slot,
# as the cluster says (CLUSTER KEYSLOT of its zset, then CLUSTER SLOTS)
cluster_shard_port() {
    local slot
    slot=$(redis-cli -p "$(cluster_primaries | head -n 1)" CLUSTER KEYSLOT "$NS:z:{$NS:$1}")
    redis-cli -p "$(cluster_primaries | head -n 1)" --json CLUSTER SLOTS 2>/dev/null |
        jq -r --argjson s "$slot" '.[] | select(.[0] <= $s and $s <= .[1]) | .[2][1]'
}
