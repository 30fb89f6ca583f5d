#!/usr/bin/env bash
# 0530-split-scanner-order: the order scanners come and go in does not
# matter to a split. The 0500 workload (sp_workload) on 2 -> 4 shards, but:
#  - no scanner runs before the split; the new shards' scanners (2, 3)
#    start first, and the old shards' (0, 1) only ~0.4 s after the first
#    deadlines passed (they start with the splitting layout and meet IDs
#    that are overdue already: late, never early);
#  - with Kafka acknowledging slowly (150 ms), old shard 0's scanner is
#    killed -9 while it has events in flight and restarted at once; the new
#    one takes over when the lease (4 s) runs out.
# Checked as in 0500 (sp_check): every one-shot ID fires with its final
# deadline and payload, cancelled ones never, repeats on their grid, nothing
# early, nothing lost; an ID may fire twice only if all its events came
# from shard 0 and the first one before the kill. `finish` then succeeds and
# no data key is left.
# How late: shard 0's IDs due before the kill wait for the lease after the
# kill, however long they had been due then (the old scanners start 0.4 s
# after the first deadlines, and on a loaded machine they claim and the kill
# comes a second or two later still): at most the kill's lateness + the
# lease + 1 s. Every other event: the lease + 1 s after its deadline.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
lease=4000
SCANNER_CFG="poll_ms = 10; lease_ms = $lease;" # Kafka gives up on an event after 3 s
SP_LATE_MS=$((lease + 1000)) # (lib.sh)
late_ms=$SP_LATE_MS
# the writes before the first deadline (sp_writes_after_split) take 2 s
# alone and up to 5 s on a loaded 2-core machine
SP_LEAD_MS=12000 # (as 0500)
write_config
scale init 2 >/dev/null
events_follow events.json

{ seq -f 's%03g' 0 299; echo mk.A.2; } >ids.txt
sp_hashes ids.txt >hashes.txt
sp_producer A # (before t0: the time after it is the writes')
t0=$(now_ms)
sp_workload "$t0" 300 530
sp_feed A pre.txt
scale split >split.out || fail "split: exit status $?"

# new shards' scanners first
scanner_start 2
scanner_start 3
sp_writes_after_split

# (the first deadlines fall due SP_LEAD_MS after t0: the window follows them)
wait_until $((t0 + SP_LEAD_MS + SP_LATE_MS - $(now_ms))) \
    '(($(jq -c "select(.shard >= 2)" events.json | wc -l) >= 5))' ||
    fail "the new shards' scanners fired nothing alone"
assert_eq "$(jq -c 'select(.shard < 2)' events.json | wc -l)" 0 "events from old shards before their scanners ran"
sleep_until_ms $((t0 + SP_LEAD_MS + 400))
kafka_ctl "rtt 1 150"
scanner_start 0
old0=$SCANNER
scanner_start 1

# kill -9 shard 0's scanner with events in flight, restart it at once
wait_until 4000 '(($(rcli HLEN "$NS:f:0") > 0))' || fail "shard 0's scanner had nothing in flight within 4 s"
inflight=$(inflight_ids 0 | wc -l)
proc_kill9 "$old0"
tkill=$(local_ms)
note "killed shard 0's scanner with $inflight IDs in flight, $((tkill - t0)) ms after t0"
kill_late=$((tkill - t0 - SP_LEAD_MS))
((SP_LATE_MS >= kill_late + late_ms)) || SP_LATE_MS=$((kill_late + late_ms))
scanner_start 0
holder() { sp_status '.shard_info[0].scanner // ""' | cut -d: -f2; } # token host:pid:random
wait_until 6000 '[[ $(holder) == $(proc_pid "$SCANNER") ]]' ||
    fail "the restarted scanner of shard 0 did not take over within 6 s"
kafka_ctl "rtt 1 0"

sp_wait_delivered events.json expect.tsv
{
    awk -F'\t' '$2 == "repeat" { print "cancel " $1 }' expect.tsv
    sp_marker_cancels
} | produce || fail "cancelling the repeats: exit status $?"
tc=$(now_ms)
wait_until 5000 '[[ $(sp_status .to_move) == 0 ]]' ||
    fail "moving IDs still in old shards: $(scale status)"
scale finish >finish.out 2>finish.err || fail "finish: exit status $?: $(cat finish.err)"
for p in A B; do
    proc_stop "$p" 10
    assert_eq "$PROC_RC" 0 "producer $p's exit status"
done
sp_wait_no_data 3000
sleep 0.5
events_follow_stop

sp_check events.json expect.tsv hashes.txt 2 4 0 "$tkill"
bad=$(sp_events_tsv events.json | awk -F'\t' -v late="$late_ms" -v tkill="$tkill" '
    $3 - $2 > late && ($4 != 0 || $2 > tkill) { print "late: fired " $3 - $2 " ms after its deadline: " $0 }')
[[ -z $bad ]] || fail "events later than $late_ms ms not owed to the kill of shard 0's scanner: $bad"
assert_never_early events.json
dups=$(sp_events_tsv events.json | awk -F'\t' '{ n[$1 " " $6]++ } END { for (k in n) if (n[k] > 1) c++; print c + 0 }')
note "$dups fires repeated after the kill"
bad=$(sp_events_tsv events.json | awk -F'\t' -v tc="$tc" '$3 > tc { n[$1]++ } END { for (i in n) if (n[i] > 1) print i, n[i] }')
[[ -z $bad ]] || fail "fired more than once after the cancel returned (id, fires): $bad"
