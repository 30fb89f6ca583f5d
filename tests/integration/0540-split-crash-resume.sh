#!/usr/bin/env bash
# 0540-split-crash-resume: `lapse-scale split` dies half-way and is run again.
#
# The state a split leaves when it dies after fencing and before publishing
# (tools/scale/split.c: step 1 wrote NS:layout:next, step 2 raised every shard's
# epoch key NS:e:I, step 3 never ran) is made by hand with redis-cli, with
# IDs pending and scanners and a long-running producer P running
# (redis.retry_timeout_ms = 1000). Then:
#  - the layout is unchanged (status: stable, old epoch);
#  - P's next write pauses: every script answers STALE, P re-reads the
#    layout, finds nothing newer and retries; half the timeout later the
#    write is neither applied (with the old layout or at all) nor reported;
#  - after redis.retry_timeout_ms P gives up on it: each line is reported
#    ("line N: ...") with a reason that points at the interrupted split, P
#    stays up, and the lines are never applied later;
#  - `lapse-scale split` again completes the interrupted split: epoch + 1,
#    splitting 2 -> 4, layout:next gone, every shard fenced at the new epoch;
#  - writes flow again: P's refused lines sent again and new ones land in
#    their shards of the new layout;
#  - every ID fires exactly once, with its deadline and payload, never early
#    (those due while the split hung fire late), and `finish` ends the split;
#    P exits non-zero (it refused lines).
# The deadlines are fixed at t0, the steps' times are not: on a loaded
# machine the w lines are sent again and the x lines written after their
# deadlines (at t0 + 6-8 s), and fire at once: one already fired counts as
# landed where its event came from; and an ID fires at most SP_LATE_MS
# after the later of its deadline and the end of the fence (the last write).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
SP_REDIS_EXTRA="command_timeout_ms = 1000; retry_timeout_ms = 1000;"
sp_write_config
scale init 2 >/dev/null
scanner_start 0
scanner_start 1
events_follow events.json

{ seq -f 'c%02g' 0 39; seq -f 'w%02g' 0 19; seq -f 'x%02g' 0 19; } >ids.txt
sp_hashes ids.txt >hashes.txt
t0=$(now_ms)
# c: written before the crash, due from t0 + 1.5 s (some while the split
# hangs); w: the write that pauses; x: written after the resume
awk -v t0="$t0" 'BEGIN {
    srand(540)
    for (i = 0; i < 40; i++) {
        d = t0 + 1500 + int(rand() * 3000); pl = i % 3 ? "pc-" i : ""
        printf "touch c%02d @%.0f%s\n", i, d, pl == "" ? "" : " " pl > "c.txt"
        printf "c%02d\tonce\t%.0f\t%s\t0\t0\n", i, d, pl == "" ? "-" : pl > "expect.tsv"
    }
    for (i = 0; i < 20; i++) {
        d = t0 + 4000 + int(rand() * 1000)
        printf "touch w%02d @%.0f pw-%d\n", i, d, i > "w.txt"
        printf "w%02d\tonce\t%.0f\tpw-%d\t0\t1\n", i, d, i > "expect.tsv"
        d = t0 + 4000 + int(rand() * 1000)
        printf "touch x%02d @%.0f px-%d\n", i, d, i > "x.txt"
        printf "x%02d\tonce\t%.0f\tpx-%d\t0\t1\n", i, d, i > "expect.tsv"
    }
}'
sp_producer P
sp_feed P c.txt

# what a split that died after its fence leaves behind
sp_dead_split_fence
tfence=$(now_ms)
assert_eq "$(sp_status '[.state, .shards, .epoch] | @tsv' | tr '\t' ' ')" "stable 2 $epoch0" "layout while fenced"

# P's write pauses: not applied (with its old layout or at all), not yet given up
tw=$(local_ms)
cat w.txt >&"${SP_FD[P]}"
sleep 0.5
# (the report count first: the checks after it take time of their own)
nrep=$(grep -c '^line ' P.log || true)
assert_eq "$(sp_where_all $(cut -d' ' -f2 w.txt))" "" "paused IDs stored while the split hangs"
proc_alive P || fail "producer P exited while the split hung"
assert_eq "$nrep" 0 "lines P reported as failed after 0.5 s (retry_timeout_ms 1000)"
# after the timeout: every line reported, with the interrupted split named
wait_until 3000 '(($(grep -c "^line " P.log) >= 20))' ||
    fail "P did not report its 20 paused lines within 3 s: $(tail -n 3 P.log)"
assert_ge $(($(local_ms) - tw)) 900 "time until P gave up on the paused lines (ms)"
assert_eq "$(grep '^line ' P.log | grep -vic 'split')" 0 "reports of paused lines that do not name the split"
proc_alive P || fail "producer P exited after giving up on lines"
note "P's report: $(grep -m1 '^line ' P.log)"
note "events while fenced: $(jq -c "select(.fired_ms > $tfence)" events.json | wc -l)"

# the split run again completes it
scale split >split.out 2>split.err || fail "split (resumed): exit status $?: $(cat split.err)"
assert_eq "$(sp_status '[.state, .shards, .prev_shards, .epoch] | @tsv' | tr '\t' ' ')" \
    "splitting 4 2 $((epoch0 + 1))" "state, shards, prev_shards, epoch after the resumed split"
assert_eq "$(rcli EXISTS "$NS:layout:next")" 0 "layout:next after the resumed split"
for s in 0 1 2 3; do assert_eq "$(rcli GET "$NS:e:$s")" $((epoch0 + 1)) "fence epoch of shard $s"; done
scanner_start 2
scanner_start 3

# the refused lines were not applied meanwhile; sent again, they land in
# their new shards (stored there, or already fired from there), and new
# writes flow
assert_eq "$(sp_where_all $(cut -d' ' -f2 w.txt))" "" "IDs reported as not applied, after the resumed split"
tagain=$(now_ms)
sp_feed P w.txt
sp_where_all $(cut -d' ' -f2 w.txt) >where.txt
# (the events of those not stored: fired since they were sent again)
gone() { cut -d' ' -f2 w.txt | grep -vxFf <(cut -d' ' -f1 where.txt); }
fired_again() { sp_events_tsv events.json | awk -F'\t' -v t="$tagain" '$3 >= t { print $1, "fired", $4 }'; }
wait_until 3000 '[[ -z $(gone | grep -vxFf <(fired_again | cut -d" " -f1)) ]]' || true
fired_again | grep -wFf <(gone) >>where.txt || true
note "w IDs that had fired already when looked for: $(grep -c ' fired ' where.txt || true)"
bad=$(awk 'NR == FNR { n[$1]++; sh[$1] = $2 == "fired" ? $3 : $2
        s[$1] = s[$1] ($2 == "fired" ? " fired from shard " $3 : " in shard " $2); next }
    /^w/ && (n[$1] != 1 || sh[$1] != $2 % 4) {
        print $1 (s[$1] == "" ? " in no shard, not fired" : s[$1]) ", want shard " $2 % 4
    }' where.txt hashes.txt)
[[ -z $bad ]] || fail "after the resumed split: $bad"
sp_feed P x.txt
tlast=$(now_ms)
# (w and x fall due from t0 + 4 s)
tdue=$((tfence < t0 + 4000 ? tfence : t0 + 4000))
note "fenced $((tfence - t0)) ms after t0, last write $((tlast - t0)) ms after t0"
SP_LATE_MS=$((SP_LATE_MS + tlast - tdue))

sp_wait_delivered events.json expect.tsv
wait_until 3000 '[[ $(sp_status .to_move) == 0 ]]' || fail "moving IDs still in old shards: $(scale status)"
sp_marker_cancels | produce || fail "cancelling the markers: exit status $?"
scale finish >finish.out 2>finish.err || fail "finish: exit status $?: $(cat finish.err)"
assert_eq "$(sp_status '[.state, .shards, .prev_shards, .epoch] | @tsv' | tr '\t' ' ')" \
    "stable 4 4 $((epoch0 + 2))" "state, shards, prev_shards, epoch after finish"
proc_stop P 10
assert_ne "$PROC_RC" 0 "producer P's exit status (it refused lines)"
((PROC_RC < 128)) || fail "producer P died of signal $((PROC_RC - 128))"
sp_wait_no_data 3000
sleep 0.3
events_follow_stop
sp_check events.json expect.tsv hashes.txt 2 4
assert_never_early events.json
