#!/usr/bin/env bash
# 0596-merge-inflight: a merge whose retiring shards still hold claims in
# flight, their scanners killed: nothing is lost, finish waits for them.
#
# 4 shards, Kafka down; 12 IDs of shards 2 and 3 fall due: their scanners
# claim them (records in NS:f:2/3) and cannot deliver. `merge` (4 -> 2), then
# kill -9 of shards 2's and 3's scanners: the claims stay in flight, held by
# dead scanners. `finish --drain` refuses, naming the claims (it would
# otherwise retire shards with events nobody sent); the layout stays
# merging. Kafka back, new scanners for shards 2 and 3 take the shards over
# once the dead ones' locks run out and send the claims again; finish then
# succeeds, the new scanners exit 0 by themselves, and every ID was
# delivered at least once, none early.
. "$(dirname "$0")/../lib.sh"

SCANNER_CFG="poll_ms = 10; lease_ms = 1500;"
sp_merge_start

seq -f 'f%02g' 0 79 >ids.txt
sp_hashes ids.txt >hashes.txt
awk '$2 % 4 >= 2 { print $1 }' hashes.txt | head -n 12 >mine.txt
assert_eq "$(wc -l <mine.txt)" 12 "IDs of retiring shards"

kafka_ctl "down 1"
t0=$(now_ms)
awk -v t=$((t0 + 300)) '{ printf "touch %s @%d p-%s\n", $1, t, $1 }' mine.txt | produce || fail "producer: exit status $?"
claims() { echo $(($(rcli HLEN "$NS:f:2") + $(rcli HLEN "$NS:f:3"))); }
wait_until 5000 '(($(claims) >= 1)) && [[ -z $(sp_where_all $(cat mine.txt)) ]]' ||
    fail "the retiring scanners did not claim the IDs: $(claims) records, left $(sp_where_all $(cat mine.txt) | wc -l)"

scale merge >merge.out || fail "merge: exit status $?"
scanner_kill9 2
scanner_kill9 3
rc=0
scale finish --drain >finish1.out 2>finish1.err || rc=$?
assert_eq "$rc" 1 "finish with claims in flight: exit status"
assert_file_match finish1.err 'claims of the retiring shards are still in flight' "finish's refusal"
assert_eq "$(sp_status .state)" merging "state after the refusal"

kafka_ctl "up 1"
scanner_start 2
scanner_start 3
wait_until 20000 'scale finish --drain >finish2.out 2>finish2.err' || fail "finish: $(cat finish2.err)"
assert_eq "$(sp_status '[.state, .shards] | @tsv' | tr '\t' ' ')" "stable 2" "layout after finish"
sp_wait_retired 2 3
wait_until 10000 '[[ $(jq -r .id events.json | sort -u | grep -cxFf mine.txt) == 12 ]]' ||
    fail "delivered: $(jq -r .id events.json | sort -u | grep -cxFf mine.txt) of 12"
events_follow_stop
assert_never_early events.json
for s in 2 3; do assert_eq "$(sp_retired_keys $s | paste -sd' ')" "$NS:e:$s" "keys of retired shard $s"; done
