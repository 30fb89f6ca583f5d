#!/usr/bin/env bash
# 0925-cluster-wait: on a Redis Cluster, redis.wait_replicas = 1 keeps every
# write a producer reported applied through the loss of its primary, and
# without it the same loss takes acknowledged writes away.
#
# 3 primaries with a replica each, 8 shards. The replica of one primary (the
# victim) is stopped (SIGSTOP), so what the victim takes from now on lives
# on the victim alone (its link is cut as well). Producer B (wait_replicas = 0, namespace B) writes
# 2000 IDs and exits 0 at once; producer A (wait_replicas = 1, namespace A)
# writes 2000 more and must not finish: its writes to the victim's shards
# are not confirmed. The victim is killed (kill -9), its replica resumed;
# the cluster promotes it; the old primary comes back as its replica (so
# WAIT can count one again). A then exits 0, and the primaries hold all of
# A's IDs, while B's written to the victim's shards are gone.
. "$(dirname "$0")/../lib.sh"

cluster_start 3 1
kafka_start --brokers 1
CLUSTER_REDIS_EXTRA="wait_replicas = 1; wait_timeout_ms = 200;"
cluster_config
sed -e 's/^namespace = .*/namespace = "B";/' -e 's/wait_replicas = 1;/wait_replicas = 0;/' "$CONF" >b.conf
sed -i 's/^namespace = .*/namespace = "A";/' "$CONF"
grep -q 'wait_replicas = 0;' b.conf || fail "could not write B's config"
scale init 8 >/dev/null || fail "init A: exit status $?"
lapse_scale b.conf init 8 >/dev/null || fail "init B: exit status $?"

# count NS: the IDs of namespace NS the primaries hold
count() {
    local p n sum=0
    for p in $(cluster_primaries); do
        n=$(redis-cli -p "$p" EVAL "local c = 0
            for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
                c = c + redis.call('ZCARD', k) end return c" 0 "$1")
        [[ $n =~ ^[0-9]+$ ]] && sum=$((sum + n))
    done
    echo "$sum"
}

# the victim: a primary serving shards of both namespaces (the most of the
# one it serves fewer of)
declare -A nA=() nB=()
for s in 0 1 2 3 4 5 6 7; do
    NS=A p=$(cluster_shard_port "$s") && nA[$p]=$((${nA[$p]:-0} + 1))
    NS=B p=$(cluster_shard_port "$s") && nB[$p]=$((${nB[$p]:-0} + 1))
done
NS=A
victim=$(for p in $(cluster_primaries); do
    a=${nA[$p]:-0} b=${nB[$p]:-0}
    echo "$((a < b ? a : b)) $p"
done | sort -rn | head -n 1 | cut -d' ' -f2)
((${nA[$victim]:-0} > 0 && ${nB[$victim]:-0} > 0)) || fail "no primary serves shards of both namespaces"
vid=$(cluster_id "$victim")
replica=
for c in "${CLUSTER_NODES[@]}"; do
    p=$(redis_port "$c")
    redis-cli -p "$p" CLUSTER NODES | grep -q "^$(cluster_id "$p") .*slave $vid " && replica=$c
done
[[ -n $replica ]] || fail "no replica of the victim on $victim"
kill -STOP "$(proc_pid "${_REDIS_PROC[$replica]}")"
# the link is cut too: what the victim takes now cannot reach the replica's
# socket and wait there for its return
redis-cli -p "$victim" CLIENT KILL TYPE replica >/dev/null

seq -f 'touch b%04g +3600000' 0 1999 >b.txt
"$LAPSE_BIN/lapse-producer" -c b.conf <b.txt 2>b.log || fail "producer B: exit status $?"
assert_eq "$(count B)" 2000 "B's IDs before the failover"
seq -f 'touch a%04g +3600000' 0 1999 >a.txt
SPAWN_STDIN=$T/a.txt spawn A "$LAPSE_BIN/lapse-producer" -c "$CONF"
wait_until 20000 '(($(count A) == 2000)) || ! proc_alive A' || fail "A's writes did not reach the primaries within 20 s"
proc_alive A || fail "producer A finished while the victim's replica had none of its writes"

proc_kill9 "${_REDIS_PROC[$(cluster_node_of "$victim")]}"
kill -CONT "$(proc_pid "${_REDIS_PROC[$replica]}")"
cluster_wait_ok 30000
redis_restart "$(cluster_node_of "$victim")"
cluster_wait_ok 30000
wait_until 60000 '! proc_alive A' || fail "producer A did not finish within 60 s of the failover"
proc_stop A 1
assert_eq "$PROC_RC" 0 "producer A's exit status"
assert_eq "$(count A)" 2000 "A's IDs (wait_replicas = 1) after the failover"
lost=$((2000 - $(count B)))
note "wait_replicas = 0 lost $lost of 2000 acknowledged IDs with the victim"
assert_ge "$lost" 1 "B's IDs (wait_replicas = 0) lost with the victim (the scenario must lose them)"
