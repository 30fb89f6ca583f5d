#!/usr/bin/env bash
# 0520-finish: ending a split.
#
# 2 shards; 40 one-shot IDs due 12-13 s ahead (the checks before the drain take a while on a loaded machine: one due before the drain is in flight, not drained; 7 s was not enough beside a nemesis run) (half with a payload) and two
# repeating IDs (R moves to a new shard, S stays) firing every 400 ms. After
# R fired twice from its old shard, `split`:
#  - status --json: splitting, .to_move = the moving IDs still in old shards
#    (all of them: nothing was written since), .last_to_move_due_ms >= the
#    latest of their deadlines;
#  - `finish` refuses (non-zero, the count in its message), `split` again
#    refuses ("already splitting"), and neither changes the layout;
#  - `finish --drain` moves them ("drained N"), then finishes: stable,
#    prev_shards == shards == 4, epoch + 1, no moved sets left, every moving
#    ID already in its new shard;
#  - the drained IDs fire from their new shard (.shard >= 2) at their
#    original deadlines with their payloads, exactly once; R keeps repeating
#    from its new shard with seq going on where it was (no gap, no repeat);
#  - status (text) during the split says when the last moving ID falls
#    due, as status --watch does (the same ISO time), and "(in N s)";
#  - `finish` on the stable layout is a no-op that says so ("no split to
#    finish"), exit 0, the layout unchanged;
#  - a split 4 -> 8 whose new scanners were never started: `finish` ends
#    it (exit 0: it did) and warns on stderr, naming shards 4-7 (and no
#    other) with a start line each; again 8 -> 16 with `finish --drain`:
#    shards 4-15; `init 64` on 16 shards (exit 1) says to split twice
#    (16 -> 32 -> 64), `init 4` to merge twice (16 -> 8 -> 4).
. "$(dirname "$0")/../lib.sh"

sp_start

{ seq -f 'o%02g' 0 39; seq -f 'rep-%g' 0 19; } >ids.txt
sp_hashes ids.txt >hashes.txt
R=$(awk '/^rep-/ && $2 % 4 >= 2 { print $1; exit }' hashes.txt)
S=$(awk '/^rep-/ && $2 % 4 < 2 { print $1; exit }' hashes.txt)
[[ -n $R && -n $S ]] || fail "no moving and staying repeat ID among rep-0..19"
moving=$(awk '/^o/ && $2 % 4 >= 2' hashes.txt | wc -l)
assert_ge "$moving" 5 "moving one-shot IDs among 40"

t0=$(now_ms)
awk -v t0="$t0" -v R="$R" -v S="$S" 'BEGIN {
    srand(520)
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
wait_until 5000 '(($(nR) >= 2))' || fail "$R did not fire twice before the split"

epoch0=$(sp_status .epoch)
scale split >split.out || fail "split: exit status $?"
scanner_start 2
scanner_start 3
epoch1=$(sp_status .epoch)
assert_eq "$epoch1" $((epoch0 + 1)) "epoch after split"
layout=$(rcli HGETALL "$NS:layout" | paste -sd' ')

# status while splitting
scale status --json >status1.json
assert_eq "$(jq -r '[.state, .shards, .prev_shards] | @tsv' status1.json | tr '\t' ' ')" "splitting 4 2" "state, shards, prev_shards"
want=$((moving + 1)) # and R
assert_eq "$(jq .to_move status1.json)" "$want" "status .to_move"
assert_eq "$(jq '[.shard_info[] | select(.shard < 2) | .to_move] | add' status1.json)" "$want" "sum of .shard_info[].to_move"
last_due=$(awk -F'\t' 'NR == FNR { h[$1] = $0; next } $2 == "once" { split(h[$1], a, " "); if (a[2] % 4 >= 2 && $3 > m) m = $3 } END { printf "%.0f", m }' hashes.txt expect.tsv)
got=$(jq .last_to_move_due_ms status1.json)
assert_ge "$got" "$last_due" "status .last_to_move_due_ms" # = unless R is in flight (its lease then)
assert_le "$got" $(($(now_ms) + 14000)) "status .last_to_move_due_ms"
# the text says when too, as --watch does
scale status >status1.txt || fail "status: exit status $?"
scale status --watch --count 1 >watch1.txt || fail "status --watch: exit status $?"
iso='20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z'
assert_file_match status1.txt "^split: [0-9]+ IDs left to move out of old shards; at the latest when the last falls due, $iso \\(in [0-9]+\\.[0-9] s\\)\$" \
    "status: when the last moving ID falls due"
assert_eq "$(grep -oE "falls due, $iso" status1.txt)" "$(grep -oE "falls due, $iso" watch1.txt)" \
    "the last moving ID's time in status and status --watch"

# finish refuses while old shards hold moving IDs; so does a second split
rc=0
scale finish >finish1.out 2>finish1.err || rc=$?
((rc != 0 && rc < 128)) || fail "finish with $want IDs left to move: exit status $rc"
assert_file_match finish1.err "(^|[^0-9])$want IDs" "finish's refusal names the count"
assert_eq "$(rcli HGETALL "$NS:layout" | paste -sd' ')" "$layout" "layout after a refused finish"
rc=0
scale split >split2.out 2>split2.err || rc=$?
((rc != 0 && rc < 128)) || fail "split while splitting: exit status $rc"
assert_file_match split2.err 'already splitting' "the second split's refusal"
assert_eq "$(rcli HGETALL "$NS:layout" | paste -sd' ')" "$layout" "layout after a refused split"
assert_eq "$(rcli EXISTS "$NS:layout:next")" 0 "layout:next after refusals"
for s in 0 1 2 3; do assert_eq "$(rcli GET "$NS:e:$s")" "$epoch1" "fence epoch of shard $s"; done

# finish --drain
nbefore=$(nR)
tdrain=$(local_ms)
scale finish --drain >finish2.out 2>finish2.err || fail "finish --drain: exit status $?: $(cat finish2.err)"
assert_file_match finish2.out "drained $want IDs" "finish --drain's report"
assert_eq "$(cat finish2.err)" "" "finish --drain's stderr with a scanner on every shard"
assert_eq "$(sp_status '[.state, .shards, .prev_shards, .epoch, (.to_move // "-")] | @tsv' | tr '\t' ' ')" \
    "stable 4 4 $((epoch1 + 1)) -" "state, shards, prev_shards, epoch, to_move after finish --drain"
assert_eq "$(rcli EVAL "return #redis.call('KEYS', ARGV[1] .. ':m:*')" 0 "$NS")" 0 "moved sets left"
# every ID still pending is in its new shard now (the one-shots are all pending)
# (one snapshot: the one-shots fall due a few seconds after the drain)
sp_where_all $(awk -v R="$R" -v S="$S" '$1 !~ /^rep-/ || $1 == R || $1 == S { print $1 }' hashes.txt) >where.txt
bad=$(awk 'NR == FNR { n[$1]++; s[$1] = s[$1] " " $2; next }
    $1 !~ /^rep-/ || $1 == R || $1 == S {
        if (n[$1] != 1 || s[$1] + 0 != $2 % 4) print $1 " in shard(s)" (s[$1] == "" ? " none" : s[$1]) ", want shard " $2 % 4
    }' R="$R" S="$S" where.txt hashes.txt)
[[ -z $bad ]] || fail "after the drain: $bad"

sp_wait_delivered events.json expect.tsv
wait_until 5000 '(($(jq -c --arg id "$R" "select(.id == \$id and .shard >= 2)" events.json | wc -l) >= 2))' ||
    fail "$R did not go on repeating from its new shard: $(jq -c --arg id "$R" 'select(.id == $id)' events.json)"
printf 'cancel %s\ncancel %s\n' "$R" "$S" | produce || fail "cancel: exit status $?"
tc=$(now_ms)

layout=$(rcli HGETALL "$NS:layout" | paste -sd' ')
scale finish >finish3.out 2>finish3.err || fail "finish on a stable layout: exit status $?"
assert_eq "$(cat finish3.out)" "namespace $NS: no split or merge to finish: 4 shards, stable, epoch $((epoch1 + 1)) (nothing changed)" \
    "finish on a stable layout"
assert_eq "$(cat finish3.err)" "" "finish's stderr on a stable layout"
assert_eq "$(rcli HGETALL "$NS:layout" | paste -sd' ')" "$layout" "layout after finish on a stable layout"

sp_wait_no_data 3000
sleep 0.5
events_follow_stop

sp_check events.json expect.tsv hashes.txt 2 4
assert_never_early events.json
# R: fires before the drain from its old shard, afterwards from its new one
hR=$(awk -v id="$R" '$1 == id { print $2 }' hashes.txt)
bad=$(jq -r --arg id "$R" 'select(.id == $id) | "\(.seq) \(.shard) \(.fired_ms)"' events.json |
    awk -v o=$((hR % 2)) -v n=$((hR % 4)) -v t="$tdrain" '$2 != o && $2 != n || $3 < t && $2 != o || $3 > t + 3000 && $2 != n')
[[ -z $bad ]] || fail "$R fired from the wrong shard (seq shard fired_ms; old $((hR % 2)), new $((hR % 4))): $bad"
assert_ge "$nbefore" 2 "$R's fires before the drain"
bad=$(sp_events_tsv events.json | awk -F'\t' -v tc="$tc" '$3 > tc { n[$1]++ } END { for (i in n) if (n[i] > 1) print i, n[i] }')
[[ -z $bad ]] || fail "fired more than once after the cancel returned (id, fires): $bad"

# a split whose new scanners nobody started: finish ends it, and says which
# shards no scanner serves and how to start them
scale split >split3.out || fail "split 4 -> 8: exit status $?"
scale finish >finish4.out 2>finish4.err || fail "finish of 4 -> 8 without new scanners: exit status $?"
assert_file_match finish4.out "split finished: 8 shards" "finish of 4 -> 8"
assert_file_match finish4.err '^lapse-scale: finish: warning: shards 4-7 have no active scanner' "finish's warning names shards 4-7"
assert_eq "$(grep -oE -- '--shard [0-9]+' finish4.err | paste -sd,)" "--shard 4,--shard 5,--shard 6,--shard 7" \
    "finish's start lines"
assert_file_match finish4.err "^  lapse-scanner -c $CONF --shard 4 " "a start line as split prints it"
scale split >/dev/null || fail "split 8 -> 16: exit status $?"
scale finish --drain >finish5.out 2>finish5.err || fail "finish --drain of 8 -> 16 without new scanners: exit status $?"
assert_file_match finish5.out "split finished: 16 shards" "finish --drain of 8 -> 16"
assert_file_match finish5.err '^lapse-scale: finish: warning: shards 4-15 have no active scanner' "finish --drain's warning names shards 4-15"
assert_eq "$(grep -c -- '--shard' finish5.err)" 12 "finish --drain's start lines"

# init with another N: what to do instead
rc=0
scale init 64 >init.out 2>init.err || rc=$?
assert_eq "$rc" 1 "init 64 on 16 shards: exit status"
assert_file_match init.err 'already initialised with 16 shards' "init 64's refusal"
assert_file_match init.err 'split twice \(16 -> 32 -> 64\)' "init 64 says to split twice"
rc=0
scale init 4 >init.out 2>init.err || rc=$?
assert_eq "$rc" 1 "init 4 on 16 shards: exit status"
assert_file_match init.err 'merge twice \(16 -> 8 -> 4\)' "init 4 says to merge twice"
