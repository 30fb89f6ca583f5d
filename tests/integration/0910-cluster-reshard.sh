#!/usr/bin/env bash
# 0910-cluster-reshard: every slot of one primary is moved to another
# (redis-cli --cluster reshard) while a producer streams resets and
# cancels and scanners fire: the programs follow the MOVED replies (and
# retry through the migration's TRYAGAIN/ASK) by themselves. Nothing is
# lost or early, resets and cancels hold (sp_workload, sp_check: each
# one-shot ID fires once with its final deadline and payload, cancelled
# IDs never, repeats on their grid), and lapse-scale status answers
# throughout, naming the new primary once the move is done.
. "$(dirname "$0")/../lib.sh"

cluster_start 3
cluster_serve 8

# the primary serving the most shards gives all its slots to another
from=$(cluster_busiest_primary 8)
to=$(cluster_primaries | grep -v -x "$from" | head -n 1)
moving=$(for s in 0 1 2 3 4 5 6 7; do [[ $(cluster_shard_port "$s") == "$from" ]] && echo "$s"; done | paste -sd' ')
note "moving shards $moving: every slot of $from to $to"

SP_LEAD_MS=25000 # the reshard takes 4-9 s; the writes stop before this (the first round took 16 s on a slow machine running the suite beside a CPU hog)
# the workload, and 200 IDs falling due every 25 ms while slots move
cluster_workload 910 1500

nslots=$(redis-cli -p "$from" --json CLUSTER SLOTS |
    jq --argjson p "$from" '[.[] | select(.[2][1] == $p) | .[1] - .[0] + 1] | add')
SPAWN_STDIN=/dev/null spawn reshard redis-cli --cluster reshard "127.0.0.1:$from" \
    --cluster-from "$(cluster_id "$from")" --cluster-to "$(cluster_id "$to")" \
    --cluster-slots "$nslots" --cluster-yes
# the workload's later writes (resets, extends, cancels, repeats), again
# and again while slots move: replaying them ends in the same state, and
# nothing falls due before t0 + SP_LEAD_MS
cluster_replay_while reshard

wait_until 60000 '! proc_alive reshard' || fail "the reshard did not end within 60 s"
proc_stop reshard 1
assert_eq "$PROC_RC" 0 "redis-cli --cluster reshard's exit status"
cluster_wait_ok 20000
for s in $moving; do
    assert_eq "$(sp_status ".shard_info[$s].primary")" "127.0.0.1:$to" "status: shard $s's primary after the move"
done

sp_wait_delivered events.json expect.tsv
sp_end_repeats
sp_stop_producers A
sp_final_check 8 8
