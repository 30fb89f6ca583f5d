#!/usr/bin/env bash
# 0930-cluster-split: `lapse-scale split` 4 -> 8 shards on a Redis Cluster
# (3 primaries) while producers write and scanners fire. The new shards'
# slots are wherever the cluster has them, so an ID's old and new shard are
# on different slots, often different primaries: producers always move
# twins with take, seed and drop (never one script over two shards), and the
# epoch fence is set shard by shard. Producer A keeps the 4-shard layout in
# memory and learns of the split only from the fence (STALE): its writes of
# moving IDs land in their new shards. As 0500: every one-shot ID fires
# once with its final deadline and payload, cancelled IDs never, repeats on
# their grid, nothing early; then finish. `split --to` is refused there.
. "$(dirname "$0")/../lib.sh"

cluster_start 3
cluster_serve 4

# stale_count: STALE replies over every primary
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
SP_LEAD_MS=22000 # its writes start 8 scanners: 1 s with a CPU hog beside, 4.4 s under ASan, 10-20 s on a slow machine running the suite beside one
t0=$(now_ms)
sp_workload "$t0" 300 930
tA=$(local_ms)
sp_producer A
sp_feed A pre.txt
stale0=$(stale_count)
epoch0=$(sp_status .epoch)

scale split --to "127.0.0.1:$(redis_port c1)" >/dev/null 2>to.err && fail "split --to on a cluster: exit 0"
assert_file_match to.err "the cluster places the new shards" "split --to refused"
scale split >split.out || fail "split: exit status $?"
for s in 4 5 6 7; do scanner_start "$s"; done
assert_eq "$(sp_status '[.state, .shards, .prev_shards] | @tsv' | tr '\t' ' ')" "splitting 8 4" \
    "state, shards, prev_shards after split"
assert_eq "$(sp_status .to_move)" "$(awk '$2 % 8 >= 4' hashes.txt | wc -l)" "status .to_move right after split"

sp_writes_after_split
if ((tA1 - tA < 900)); then
    assert_ge "$(stale_count)" $((stale0 + 1)) "STALE replies to producer A after the split"
else
    note "A's first write came $((tA1 - tA)) ms after its start: it may have re-read the layout by itself"
fi

sp_wait_delivered events.json expect.tsv
sp_end_repeats
sp_finish 8 $((epoch0 + 2))
sp_stop_producers A B
sp_final_check 4 8
