#!/usr/bin/env bash
# 0931-cluster-merge: `lapse-scale merge` 8 -> 4 shards on a Redis Cluster
# (3 primaries) while producers write and scanners fire. A retiring shard's
# slot is wherever the cluster has it, apart from its pair's: producers move
# twins with take, seed and drop, the drain in batches of IDs (never a key
# whole), and finish removes the retiring shards' keys slot by slot.
# Producer A keeps the 8-shard layout in memory and learns of the merge only
# from the fence (STALE). As 0591: every one-shot ID fires once with its
# final deadline and payload, cancelled IDs never, repeats on their grid,
# nothing early; finish retires shards 4-7 (their scanners exit 0, only
# their epoch fences are left); no data key is left.
. "$(dirname "$0")/../lib.sh"

cluster_start 3
cluster_serve 8

stale_count() {
    local p n sum=0
    for p in $(cluster_primaries); do
        n=$(redis-cli -p "$p" INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_STALE:count=//p')
        sum=$((sum + ${n:-0}))
    done
    echo "$sum"
}

{ seq -f 's%03g' 0 299; echo mk.A.2; } >ids.txt
sp_hashes ids.txt >hashes.txt
SP_LEAD_MS=22000 # (as 0930)
t0=$(now_ms)
sp_workload "$t0" 300 931
tA=$(local_ms)
sp_producer A
sp_feed A pre.txt
stale0=$(stale_count)
epoch0=$(sp_status .epoch)

scale merge >merge.out || fail "merge: exit status $?"
assert_eq "$(sp_status '[.state, .shards, .prev_shards] | @tsv' | tr '\t' ' ')" "merging 4 8" \
    "state, shards, prev_shards after merge"
assert_ge "$(sp_status .to_move)" 1 "status .to_move right after merge"

sp_writes_after_split
if ((tA1 - tA < 900)); then
    assert_ge "$(stale_count)" $((stale0 + 1)) "STALE replies to producer A after the merge"
else
    note "A's first write came $((tA1 - tA)) ms after its start: it may have re-read the layout by itself"
fi

sp_wait_delivered events.json expect.tsv
sp_end_repeats
sp_finish_merge 4 $((epoch0 + 2))
sp_wait_retired 4 5 6 7
for s in 4 5 6 7; do
    assert_eq "$(sp_retired_keys $s | paste -sd' ')" "$NS:e:{$NS:$s}" "keys of retired shard $s"
done
sp_stop_producers A B
sp_final_check 8 4

# 4 -> 2 with IDs due in an hour: finish --drain moves them across slots
seq -f 'late-%g' 0 59 >late.txt
sp_hashes late.txt >late-hashes.txt
awk '{ print "touch " $1 " +3600000 pl-" $1 }' late.txt | produce || fail "producer: exit status $?"
scale merge >merge2.out || fail "merge 4 -> 2: exit status $?"
scale finish --drain >finish2.out 2>finish2.err || fail "finish --drain of 4 -> 2: exit status $?: $(cat finish2.err)"
assert_file_match finish2.out "merge finished: 2 shards, stable" "finish --drain of 4 -> 2"
sp_wait_retired 2 3
sp_where_all $(cat late.txt) >where.txt
bad=$(awk 'NR == FNR { n[$1]++; s[$1] = $2; next } (n[$1] != 1 || s[$1] != $2 % 2) { print $1 " in " s[$1] " (" n[$1] "x), want " $2 % 2 }' where.txt late-hashes.txt)
[[ -z $bad ]] || fail "after the drain: $bad"
