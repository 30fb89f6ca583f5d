#!/usr/bin/env bash
# 0594-merge-finish: ending a merge, and merging down to one shard.
#
# 4 shards; 40 one-shot IDs due 12-13 s ahead (half with a payload) and two
# repeating IDs (R in a retiring shard, S in one that stays) firing every
# 400 ms. After R fired twice from its shard, `merge` (4 -> 2):
#  - status --json: merging, .to_move = the IDs still in the retiring
#    shards (all of theirs: nothing was written since); status (text) says
#    how many and when the last falls due; get of a retiring ID names its
#    old and new shard;
#  - `finish` refuses (non-zero, the count in its message), `merge` again
#    and `split` refuse ("already merging"), the layout unchanged;
#  - `finish --drain` moves them ("drained N"), then finishes: stable 2 2,
#    epoch + 1, retired 4; the scanners of shards 2 and 3 exit 0 by
#    themselves, only their epoch fences are left; every pending ID is in
#    shard h % 2;
#  - the drained IDs fire from shards 0 and 1 at their deadlines with their
#    payloads, exactly once; R goes on repeating from its new shard with
#    seq going on (no gap, no repeat);
# then 2 -> 1 with IDs due in an hour: `finish --drain` ends it, shard 1
# retires, every ID is in shard 0; `merge` of one shard is refused
# ("nothing to merge"), `init 1` says nothing changes, `init 4` says to
# split twice.
. "$(dirname "$0")/../lib.sh"

sp_merge_start

{ seq -f 'o%02g' 0 39; seq -f 'rep-%g' 0 19; } >ids.txt
sp_hashes ids.txt >hashes.txt
R=$(awk '/^rep-/ && $2 % 4 >= 2 { print $1; exit }' hashes.txt)
S=$(awk '/^rep-/ && $2 % 4 < 2 { print $1; exit }' hashes.txt)
[[ -n $R && -n $S ]] || fail "no retiring and staying repeat ID among rep-0..19"
retiring=$(awk '/^o/ && $2 % 4 >= 2' hashes.txt | wc -l)
assert_ge "$retiring" 5 "one-shot IDs in retiring shards among 40"

t0=$(now_ms)
awk -v t0="$t0" -v R="$R" -v S="$S" 'BEGIN {
    srand(594)
    printf "repeat %s @%.0f 400 rp\nrepeat %s @%.0f 400 sp\n", R, t0 + 500, S, t0 + 500
    for (i = 0; i < 40; i++) {
        id = sprintf("o%02d", i); d = t0 + 12000 + int(rand() * 1000); pl = i % 2 ? "" : "po-" i
        printf "touch %s @%.0f%s\n", id, d, pl == "" ? "" : " " pl
        printf "%s\tonce\t%.0f\t%s\t0\t1\n", id, d, pl == "" ? "-" : pl >"expect.tsv"
    }
    printf "%s\trepeat\t%.0f\trp\t400\t1\n%s\trepeat\t%.0f\tsp\t400\t1\n", R, t0 + 500, S, t0 + 500 >"expect.tsv"
}' >ops.txt
produce <ops.txt || fail "producer: exit status $?"
nR() { jq -c --arg id "$R" 'select(.id == $id)' events.json | wc -l; }
wait_until 5000 '(($(nR) >= 2))' || fail "$R did not fire twice before the merge"

epoch0=$(sp_status .epoch)
scale merge >merge.out || fail "merge: exit status $?"
epoch1=$(sp_status .epoch)
assert_eq "$epoch1" $((epoch0 + 1)) "epoch after merge"
layout=$(rcli HGETALL "$NS:layout" | paste -sd' ')

scale status --json >status1.json
assert_eq "$(jq -r '[.state, .shards, .prev_shards] | @tsv' status1.json | tr '\t' ' ')" "merging 2 4" "state, shards, prev_shards"
want=$((retiring + 1)) # and R
assert_eq "$(jq .to_move status1.json)" "$want" "status .to_move"
assert_eq "$(jq '[.shard_info[] | select(.shard >= 2) | .to_move] | add' status1.json)" "$want" "sum of the retiring shards' .to_move"
assert_eq "$(jq '[.shard_info[] | select(.shard < 2) | .to_move // 0] | add' status1.json)" 0 "the remaining shards' .to_move"
scale status >status1.txt || fail "status: exit status $?"
iso='20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z'
assert_file_match status1.txt "^namespace $NS: 2 shards, state merging, epoch $epoch1 \\(merging 4 -> 2\\)\$" "status's first line"
assert_file_match status1.txt "^merge: $want IDs left to move out of retiring shards; at the latest when the last falls due, $iso \\(in [0-9]+\\.[0-9] s\\)\$" \
    "status: what is left and when the last falls due"
id=$(awk '/^o/ && $2 % 4 >= 2 { print $1; exit }' hashes.txt)
h=$(awk -v id="$id" '$1 == id { print $2 }' hashes.txt)
scale get "$id" >get.txt || fail "get: exit status $?"
assert_file_match get.txt "^merge +4 -> 2: the ID moves from old shard $((h % 4)); not written in its new shard yet" "get during the merge"
assert_eq "$(scale get "$id" --json | jq -r '[.state, .shard, .twin.shard] | @tsv' | tr '\t' ' ')" "merging $((h % 2)) $((h % 4))" "get --json during the merge"

rc=0
scale finish >finish1.out 2>finish1.err || rc=$?
assert_eq "$rc" 1 "finish with $want IDs in retiring shards: exit status"
assert_file_match finish1.err "(^|[^0-9])$want IDs are still in the retiring shards" "finish's refusal names the count"
for cmd in merge split; do
    rc=0
    scale $cmd >$cmd.out 2>$cmd.err || rc=$?
    assert_eq "$rc" 1 "$cmd while merging: exit status"
    assert_file_match $cmd.err 'already merging \(4 -> 2 shards\)' "$cmd's refusal while merging"
done
assert_eq "$(rcli HGETALL "$NS:layout" | paste -sd' ')" "$layout" "layout after refusals"

scale finish --drain >finish2.out 2>finish2.err || fail "finish --drain: exit status $?: $(cat finish2.err)"
assert_file_match finish2.out "drained $want IDs" "finish --drain's report"
assert_file_match finish2.out "merge finished: 2 shards, stable, epoch $((epoch1 + 1))" "finish --drain's end"
assert_eq "$(sp_status '[.state, .shards, .prev_shards, .epoch] | @tsv' | tr '\t' ' ')" "stable 2 2 $((epoch1 + 1))" "layout after finish --drain"
assert_eq "$(rcli HGET "$NS:layout" retired)" 4 "retired"
sp_wait_retired 2 3
for s in 2 3; do assert_eq "$(sp_retired_keys $s | paste -sd' ')" "$NS:e:$s" "keys of retired shard $s"; done
sp_where_all $(awk -v R="$R" -v S="$S" '$1 !~ /^rep-/ || $1 == R || $1 == S { print $1 }' hashes.txt) >where.txt
bad=$(awk 'NR == FNR { n[$1]++; s[$1] = s[$1] " " $2; next }
    $1 !~ /^rep-/ || $1 == R || $1 == S {
        if (n[$1] != 1 || s[$1] + 0 != $2 % 2) print $1 " in shard(s)" (s[$1] == "" ? " none" : s[$1]) ", want shard " $2 % 2
    }' R="$R" S="$S" where.txt hashes.txt)
[[ -z $bad ]] || fail "after the drain: $bad"

sp_wait_delivered events.json expect.tsv
wait_until 5000 '(($(jq -c --arg id "$R" "select(.id == \$id and .shard < 2)" events.json | wc -l) >= 2))' ||
    fail "$R did not go on repeating from its new shard: $(jq -c --arg id "$R" 'select(.id == $id)' events.json)"
printf 'cancel %s\ncancel %s\n' "$R" "$S" | produce || fail "cancel: exit status $?"
sp_wait_no_data 3000
sleep 0.5
events_follow_stop
sp_check events.json expect.tsv hashes.txt 4 2
assert_never_early events.json

# 2 -> 1: what is left moves into shard 0 and shard 1 retires
{ seq -f 'late-%g' 0 29; } >late.txt
awk '{ print "touch " $1 " +3600000 pl-" $1 }' late.txt | produce || fail "producer: exit status $?"
scale merge >merge3.out || fail "merge 2 -> 1: exit status $?"
assert_file_match merge3.out "merging 2 -> 1 shards" "merge 2 -> 1"
scale finish --drain >finish3.out 2>finish3.err || fail "finish --drain of 2 -> 1: exit status $?: $(cat finish3.err)"
assert_file_match finish3.out "merge finished: 1 shards, stable" "finish --drain of 2 -> 1"
assert_eq "$(rcli HGET "$NS:layout" retired)" 4 "retired after 2 -> 1 (the most the namespace had)"
sp_wait_retired 1
assert_eq "$(sp_where_all $(cat late.txt) | awk '{ print $2 }' | sort | uniq -c | awk '{ print $1 " in " $2 }')" "30 in 0" "where the IDs are after 2 -> 1"
assert_eq "$(scale get late-7 --json | jq -r '[.shard, .payload] | @tsv' | tr '\t' ' ')" "0 pl-late-7" \
    "a payload moved with its ID (get --json)"
rc=0
scale merge >merge4.out 2>merge4.err || rc=$?
assert_eq "$rc" 1 "merge of one shard: exit status"
assert_file_match merge4.err 'has one shard: nothing to merge' "merge of one shard"
rc=0
scale init 4 >init.out 2>init.err || rc=$?
assert_eq "$rc" 1 "init 4 on 1 shard: exit status"
assert_file_match init.err 'split twice \(1 -> 2 -> 4\)' "init 4 says to split twice"
# a scanner of a shard that never existed is a mistake, not a retirement
rc=0
timeout 20 "$LAPSE_BIN/lapse-scanner" -c "$CONF" --shard 9 >s9.out 2>s9.err || rc=$?
assert_eq "$rc" 1 "a scanner of shard 9 (never existed): exit status"
assert_file_match s9.err 'shard 9 does not exist' "its error"
