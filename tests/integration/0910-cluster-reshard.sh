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
kafka_start --brokers 1
cluster_config
scale init 8 >/dev/null || fail "init: exit status $?"
for s in 0 1 2 3 4 5 6 7; do scanner_start "$s"; done
events_follow events.json

# the primary serving the most shards gives all its slots to another
declare -A count=()
for s in 0 1 2 3 4 5 6 7; do
    p=$(cluster_shard_port "$s")
    count[$p]=$((${count[$p]:-0} + 1))
done
from=$(for p in "${!count[@]}"; do echo "${count[$p]} $p"; done | sort -rn | head -n 1 | cut -d' ' -f2)
to=$(cluster_primaries | grep -v -x "$from" | head -n 1)
moving=$(for s in 0 1 2 3 4 5 6 7; do [[ $(cluster_shard_port "$s") == "$from" ]] && echo "$s"; done | paste -sd' ')
note "moving shards $moving: every slot of $from to $to"

{ seq -f 's%03g' 0 299; seq -f 'f%03g' 0 199; echo mk.A.2; } >ids.txt
sp_hashes ids.txt >hashes.txt
SP_LEAD_MS=12000
t0=$(now_ms)
sp_workload "$t0" 300 910
# and 200 IDs falling due every 25 ms while the slots move, to fire then
for ((i = 0; i < 200; i++)); do
    printf 'f%03d\tonce\t%d\t-\t0\t0\n' "$i" $((t0 + 1500 + i * 25)) >>expect.tsv
    printf 'touch f%03d @%d\n' "$i" $((t0 + 1500 + i * 25)) >>pre.txt
done
sp_producer A
sp_feed A pre.txt

nslots=$(redis-cli -p "$from" --json CLUSTER SLOTS |
    jq --argjson p "$from" '[.[] | select(.[2][1] == $p) | .[1] - .[0] + 1] | add')
SPAWN_STDIN=/dev/null spawn reshard redis-cli --cluster reshard "127.0.0.1:$from" \
    --cluster-from "$(cluster_id "$from")" --cluster-to "$(cluster_id "$to")" \
    --cluster-slots "$nslots" --cluster-yes
# the workload's later writes (resets, extends, cancels, repeats), again
# and again while slots move: replaying them ends in the same state, and
# nothing falls due before t0 + SP_LEAD_MS
rounds=0
while :; do
    sp_feed A b1.txt
    sp_feed A a1.txt
    sp_feed A b2.txt
    scale status --json >st.json || fail "status failed while slots moved: exit status $?"
    rounds=$((rounds + 1))
    proc_alive reshard && (($(now_ms) < t0 + SP_LEAD_MS - 3000)) && ((rounds < 100)) || break
done
t1=$(now_ms)
note "$rounds rounds of writes, done $((t1 - t0)) ms after t0; the reshard $(proc_alive reshard && echo still runs || echo is over)"
((t1 < t0 + SP_LEAD_MS - 100)) || fail "the writes took until t0 + $((t1 - t0)) ms: deadlines may have passed meanwhile (machine too slow)"

wait_until 60000 '! proc_alive reshard' || fail "the reshard did not end within 60 s"
proc_stop reshard 1
assert_eq "$PROC_RC" 0 "redis-cli --cluster reshard's exit status"
cluster_wait_ok 20000
for s in $moving; do
    assert_eq "$(sp_status ".shard_info[$s].primary")" "127.0.0.1:$to" "status: shard $s's primary after the move"
done

sp_wait_delivered events.json expect.tsv
{
    awk -F'\t' '$2 == "repeat" { print "cancel " $1 }' expect.tsv
    sp_marker_cancels
} | produce || fail "cancelling the repeats: exit status $?"
proc_stop A 10
assert_eq "$PROC_RC" 0 "producer A's exit status"
sp_wait_no_data 5000
sleep 0.5 # let a wrong extra fire show
events_follow_stop

sp_check events.json expect.tsv hashes.txt 8 8
assert_never_early events.json
