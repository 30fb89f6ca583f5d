#!/usr/bin/env bash
# 0510-split-two-nodes: `lapse-scale split --to` puts the new shards on a
# second Redis node, online, under the same workload as 0500 (sp_workload):
# nothing is lost, early or doubled, every ID fires with its final deadline
# and payload.
#
# The namespace starts with both shards on node 1 (initialised while the
# config listed only node 1); then node 2 is added to the config, which
# every process started afterwards reads, producer A (long-running, layout
# in memory) included. `split --to` with a node the config does not list is
# refused and changes nothing. After the split, shards 2 and 3 live on node
# 2 (status .shard_info[].node, and their keys are there and only there);
# producers take twins on node 1 and write on node 2, the old shards'
# scanners look up node 2's moved sets. `finish` then succeeds and neither
# node keeps a data key.
. "$(dirname "$0")/../lib.sh"
# Its writes go to two nodes through more steps than 0500's: a longer lead
# (under ASan on a loaded machine they once took 8.5 s)
SP_LEAD_MS=12000 # (as 0500)

redis_start main
redis_start two
p1=$(redis_port main)
p2=$(redis_port two)
kafka_start --brokers 1

SP_PORTS=("$p1")
sp_write_config
scale init 2 >/dev/null
SP_PORTS=("$p1" "$p2")
sp_write_config
assert_eq "$(sp_status '[.shard_info[].node] | join(",")')" "127.0.0.1:$p1,127.0.0.1:$p1" "nodes of shards 0, 1"

scanner_start 0
scanner_start 1
events_follow events.json

{ seq -f 's%03g' 0 299; echo mk.A.2; } >ids.txt
sp_hashes ids.txt >hashes.txt
epoch0=$(sp_status .epoch)

# a node the config does not list: refused, nothing changes
layout=$(rcli HGETALL "$NS:layout" | paste -sd' ')
rc=0
scale split --to 127.0.0.1:1 >bad.out 2>bad.err || rc=$?
((rc != 0 && rc < 128)) || fail "split --to an unknown node: exit status $rc"
assert_file_match bad.err '127\.0\.0\.1:1' "split --to an unknown node: error"
assert_eq "$(rcli HGETALL "$NS:layout" | paste -sd' ')" "$layout" "layout after a refused split"
assert_eq "$(rcli EXISTS "$NS:layout:next")" 0 "layout:next after a refused split"

t0=$(now_ms)
sp_workload "$t0" 300 510
tA=$(local_ms)
sp_producer A
sp_feed A pre.txt
stale0=$(sp_cli "$p1" INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_STALE:count=//p')

scale split --to "127.0.0.1:$p2" >split.out || fail "split --to: exit status $?"
scanner_start 2
scanner_start 3
assert_eq "$(sp_status '[.state, .shards, .prev_shards, .epoch] | @tsv' | tr '\t' ' ')" \
    "splitting 4 2 $((epoch0 + 1))" "state, shards, prev_shards, epoch after split"
assert_eq "$(sp_status '[.shard_info[].node] | join(",")')" \
    "127.0.0.1:$p1,127.0.0.1:$p1,127.0.0.1:$p2,127.0.0.1:$p2" "nodes of shards 0-3"
assert_eq "$(sp_status .to_move)" "$(awk '$2 % 4 >= 2' hashes.txt | wc -l)" "status .to_move right after split"

sp_writes_after_split
stale1=$(sp_cli "$p1" INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_STALE:count=//p')

if ((tA1 - tA < 900)); then # A learned of the split from the fence on node 1
    assert_ge "${stale1:-0}" $((${stale0:-0} + 1)) "STALE replies to producer A after the split"
else
    note "A's first write came $((tA1 - tA)) ms after its start: it may have re-read the layout by itself"
fi

# the new shards' data is on node 2 only, the old shards' on node 1 only
# (a shard's keys NS:X:I, and its buckets NS:X:I:J in small keys)
keys_of() { # PORT SHARD: how many z/p/f/r/m keys of SHARD the node holds
    sp_cli "$1" EVAL "return #redis.call('KEYS', ARGV[1]) + #redis.call('KEYS', ARGV[1] .. ':*')" 0 "$NS:[zpfrm]:$2"
}
for s in 2 3; do
    assert_ge "$(shard_card "$s" "$p2")" 1 "IDs in $NS:z:$s (or its buckets) on node 2"
    assert_eq "$(keys_of "$p1" "$s")" 0 "shard $s keys on node 1"
done
for s in 0 1; do
    assert_eq "$(keys_of "$p2" "$s")" 0 "shard $s keys on node 2"
done

sp_wait_delivered events.json expect.tsv
sp_end_repeats
tc=$(now_ms)
sp_finish 4 $((epoch0 + 2))
assert_eq "$(sp_status '[.shard_info[].node] | join(",")')" \
    "127.0.0.1:$p1,127.0.0.1:$p1,127.0.0.1:$p2,127.0.0.1:$p2" "nodes of shards 0-3 after finish"

sp_stop_producers A B
sp_final_check 2 4
bad=$(sp_events_tsv events.json | awk -F'\t' -v tc="$tc" '$3 > tc { n[$1]++ } END { for (i in n) if (n[i] > 1) print i, n[i] }')
[[ -z $bad ]] || fail "fired more than once after the cancel returned (id, fires): $bad"
