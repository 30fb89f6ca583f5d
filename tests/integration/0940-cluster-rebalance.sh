#!/usr/bin/env bash
# 0940-cluster-rebalance: a fourth primary joins the cluster (redis-cli
# --cluster add-node) and `rebalance --cluster-use-empty-masters` moves a
# share of every primary's slots to it, while a producer replays resets,
# extends and cancels and 200 IDs fall due: the programs follow the moved
# slots by themselves. Nothing is lost or early, resets and cancels hold
# (sp_check), status answers throughout and names the new primary for the
# shards whose slots it took.
# (writes for 40 s, then the rebalance and every deadline: 80-100 s on a loaded machine)
# timeout: 240 s
. "$(dirname "$0")/../lib.sh"

cluster_start 3
cluster_serve 8

SP_LEAD_MS=${REBALANCE_LEAD_MS:-40000} # the rebalance takes 5-11 s; the writes stop before this (a first round took 27 s on a machine running the suite beside a nemesis run)
# the workload, and 200 IDs falling due every 25 ms while slots move
cluster_workload 940 4000

cluster_node_start c4
p4=$(redis_port c4)
redis-cli --cluster add-node "127.0.0.1:$p4" "127.0.0.1:$(redis_port c1)" >add-node.log 2>&1 ||
    fail "add-node: $(tail -n 3 add-node.log)"
id4=$(cluster_id "$p4")
# every node knows the newcomer (gossip) before slots move to it
knows_c4() {
    local c
    for c in c1 c2 c3; do
        redis-cli -p "$(redis_port "$c")" CLUSTER NODES | grep "^$id4 " | grep -q connected || return 1
    done
}
# ... and every node, the newcomer too, sees the cluster ok and agrees on it
wait_until 20000 'knows_c4 && _cluster_ok &&
    redis-cli --cluster check "127.0.0.1:$(redis_port c1)" >/dev/null 2>&1' ||
    fail "the fourth primary did not join within 20 s"
SPAWN_STDIN=/dev/null spawn reshard redis-cli --cluster rebalance "127.0.0.1:$(redis_port c1)" \
    --cluster-use-empty-masters --cluster-yes
# the workload's later writes (resets, extends, cancels, repeats), again
# and again while slots move: replaying them ends in the same state, and
# nothing falls due before t0 + SP_LEAD_MS
cluster_replay_while reshard

wait_until 60000 '! proc_alive reshard' || fail "the rebalance did not end within 60 s"
proc_stop reshard 1
assert_eq "$PROC_RC" 0 "redis-cli --cluster rebalance's exit status"
cluster_wait_ok 20000
took=$(redis-cli -p "$p4" --json CLUSTER SLOTS | jq --argjson p "$p4" '[.[] | select(.[2][1] == $p) | .[1] - .[0] + 1] | add // 0')
note "the fourth primary serves $took slots"
assert_ge "$took" 3000 "slots on the fourth primary after rebalance"
for s in 0 1 2 3 4 5 6 7; do
    assert_eq "$(sp_status ".shard_info[$s].primary")" "127.0.0.1:$(cluster_shard_port "$s")" "status: shard $s's primary"
done

sp_wait_delivered events.json expect.tsv
sp_end_repeats
sp_stop_producers A
cluster_bulk_end # (0941)
sp_final_check 8 8
