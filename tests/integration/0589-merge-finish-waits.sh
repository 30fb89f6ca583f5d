#!/usr/bin/env bash
# 0589-merge-finish-waits: `finish` waits for the claims of running retiring
# scanners to settle (up to scanner.lease_ms) where it refused at once: run
# right after a drain, it met the last claims of the retiring shards still
# being sent, and failed.
#
# 4 shards, Kafka down; 12 IDs of shards 2 and 3 fall due: their scanners,
# alive, claim them and cannot deliver yet. `merge` (4 -> 2), then `finish
# --drain` while the claims are in flight; once it is seen asking about
# them (its HLEN calls, INFO commandstats: no script calls HLEN), Kafka comes
# back: the scanners deliver and settle, and that same finish succeeds. Every
# ID delivered, none early; the retiring scanners exit 0.
. "$(dirname "$0")/../lib.sh"

SCANNER_CFG="poll_ms = 10; lease_ms = 8000;"
sp_merge_start

seq -f 'w%02g' 0 79 >ids.txt
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
hlen_calls() { rcli INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_hlen:calls=\([0-9]*\),.*/\1/p'; }
h0=$(hlen_calls)
scale finish --drain >finish.out 2>finish.err &
fin=$!
# (two retiring shards a look: three looks is finish waiting, not refusing)
if ! wait_until 5000 '(($(hlen_calls) >= ${h0:-0} + 6))'; then
    wait "$fin" || true
    fail "finish did not wait for the claims in flight: $(cat finish.err)"
fi
kafka_ctl "up 1"
rc=0
wait "$fin" || rc=$?
assert_eq "$rc" 0 "finish while claims settle: exit status ($(cat finish.err))"
assert_eq "$(sp_status '[.state, .shards] | @tsv' | tr '\t' ' ')" "stable 2" "layout after finish"
sp_wait_retired 2 3
wait_until 10000 '[[ $(jq -r .id events.json | sort -u | grep -cxFf mine.txt) == 12 ]]' ||
    fail "delivered: $(jq -r .id events.json | sort -u | grep -cxFf mine.txt) of 12"
events_follow_stop
assert_never_early events.json
