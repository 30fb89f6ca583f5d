#!/usr/bin/env bash
# 0591-merge-under-load: `lapse-scale merge` 4 -> 2 shards on one Redis while
# producers write and scanners fire; nothing is lost, early or doubled; the
# retired shards' scanners stop by themselves and their keys go.
#
# The split's workload (0500, sp_workload) run against a merge: 300 IDs with
# absolute deadlines ahead; producer A writes all of them on 4 shards and
# keeps that layout; after `merge` a new producer B and then A (stale: it
# learns of the merge from the STALE fence) write touches, extends later and
# earlier, cancels, payloads and repeats, a third of the IDs handed over from
# B to A. Every ID of shard 2 and 3 moves into 0 and 1. Checked (sp_check,
# old 4 new 2): every one-shot ID fires exactly once with its final
# deadline and payload, from its new shard if written after the merge, else
# from the shard it lived in; cancelled ones never; repeats on their grid
# with seq 1, 2, ...; nothing early. Also: merge's --stop-cmd ran once per
# retiring shard; status says merging with what is left to move; finish
# then retires shards 2 and 3: their scanners exit 0 by themselves, only
# their epoch fences are left, the layout records them as retired, and a
# scanner started for shard 2 now exits 0 at once; no data key is left.
. "$(dirname "$0")/../lib.sh"

sp_merge_start

{ seq -f 's%03g' 0 299; echo mk.A.2; } >ids.txt
sp_hashes ids.txt >hashes.txt

SP_LEAD_MS=12000 # (as 0500: the writes take 1.5-8 s on a loaded machine)
t0=$(now_ms)
sp_workload "$t0" 300 591
tA=$(local_ms)
sp_producer A
sp_feed A pre.txt
epoch0=$(sp_status .epoch)

scale merge --stop-cmd "echo %d-%d >>$T/retiring" >merge.out || fail "merge: exit status $?"
assert_eq "$(paste -sd' ' retiring)" "2-2 3-3" "shards --stop-cmd was run for"
sp_status '[.state, .shards, .prev_shards, .epoch, .to_move] | @tsv' >status1.tsv
read -r state shards prev epoch to_move <status1.tsv
assert_eq "$state $shards $prev" "merging 2 4" "state, shards, prev_shards after merge"
assert_eq "$epoch" $((epoch0 + 1)) "epoch after merge"
assert_ge "$to_move" 1 "status .to_move right after merge"
for s in 0 1 2 3; do assert_eq "$(sp_get "$NS:e:$s")" "$epoch" "fence epoch of shard $s"; done
# a merge while merging, a split while merging: refused, nothing changed
layout=$(rcli HGETALL "$NS:layout" | paste -sd' ')
rc=0
scale merge >merge2.out 2>merge2.err || rc=$?
((rc == 1)) || fail "merge while merging: exit status $rc"
assert_file_match merge2.err 'already merging \(4 -> 2 shards\): run finish first' "the second merge's refusal"
rc=0
scale split >split2.out 2>split2.err || rc=$?
((rc == 1)) || fail "split while merging: exit status $rc"
assert_file_match split2.err 'already merging' "a split's refusal while merging"
assert_eq "$(rcli HGETALL "$NS:layout" | paste -sd' ')" "$layout" "layout after refusals"
assert_eq "$(rcli EXISTS "$NS:layout:next")" 0 "layout:next after refusals"

sp_writes_after_split
sp_wait_delivered events.json expect.tsv
sp_end_repeats
tc=$(now_ms)
sp_finish_merge 2 $((epoch0 + 2))
assert_file_match finish.out "merge finished: 2 shards, stable, epoch $((epoch0 + 2)); the scanners of shards 2-3 stop by themselves" "finish's report"
assert_eq "$(rcli HGET "$NS:layout" retired)" 4 "the layout's retired count"
sp_wait_retired 2 3
for s in 2 3; do
    assert_eq "$(sp_retired_keys $s | paste -sd' ')" "$NS:e:$s" "keys of retired shard $s"
done
scanner_start 2
sp_wait_retired 2
assert_eq "$(sp_status '[.shard_info[].shard] | @tsv' | tr '\t' ' ')" "0 1" "status's shards after the merge"

sp_stop_producers A B
sp_final_check 4 2
bad=$(sp_events_tsv events.json | awk -F'\t' -v tc="$tc" '$3 > tc { n[$1]++ } END { for (i in n) if (n[i] > 1) print i, n[i] }')
[[ -z $bad ]] || fail "fired more than once after the cancel returned (id, fires): $bad"
