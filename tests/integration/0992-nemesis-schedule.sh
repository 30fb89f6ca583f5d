#!/usr/bin/env bash
# 0992-nemesis-schedule: a nemesis seed replays: tests/nemesis/run
# --schedule-only draws the same fault schedule for the same seed and
# length, every time, and another one for another seed; the schedule holds
# the split, its finish, the merge back and its finish, in that order, faults of both kinds (processes and
# Redis, one Redis fault at a time) inside the run, and a Cluster's kinds
# only on odd seeds.
#
# Catches: a schedule drawn in a subshell (bash reseeds RANDOM there: seed
# 2 once gave two different schedules), a fault past the writers' end.
. "$(dirname "$0")/../lib.sh"

run=$LAPSE_ROOT/tests/nemesis/run
for seed in 2 3; do
    "$run" --seed $seed --minutes 3 --schedule-only >s1.txt || fail "schedule of seed $seed: exit status $?"
    "$run" --seed $seed --minutes 3 --schedule-only >s2.txt || fail "schedule of seed $seed again: exit status $?"
    cmp -s s1.txt s2.txt || fail "seed $seed drew two schedules: $(diff s1.txt s2.txt | head -5)"
    assert_ge "$(wc -l <s1.txt)" 20 "faults in 3 minutes of seed $seed"
    assert_eq "$(grep -c ' split ' s1.txt)" 1 "splits in seed $seed's schedule"
    assert_eq "$(grep -c ' merge ' s1.txt)" 1 "merges in seed $seed's schedule"
    assert_eq "$(grep -c ' finish ' s1.txt)" 2 "finishes in seed $seed's schedule"
    assert_eq "$(awk '$2 ~ /^(split|merge|finish)$/ { printf "%s ", $2 }' s1.txt)" "split finish merge finish " \
        "the layout's changes in seed $seed's schedule"
    awk '$1 < 0 || $1 > 180000 { bad = 1 } END { exit bad }' s1.txt || fail "a fault outside the run: $(cat s1.txt)"
    grep -qE ' (scanner|client|producer|ingress)-' s1.txt || fail "no process fault in seed $seed's schedule"
    cp s1.txt "seed-$seed.txt"
done
cmp -s seed-2.txt seed-3.txt && fail "seeds 2 and 3 drew the same schedule"
grep -qE ' (cluster-failover|slot-move) ' seed-2.txt && fail "a Cluster fault in an even (Sentinel) seed's schedule"
"$run" --seed 2 --minutes 3 --topology cluster --schedule-only >c.txt || fail "cluster schedule: exit status $?"
cmp -s c.txt seed-2.txt && note "(seed 2 on a Cluster drew no Cluster fault)"
# Redis faults one at a time: each starts after the one before has healed
awk 'FNR == 1 { free = 0 } $2 ~ /^(primary-kill|replica-pause|redis-full|kafka-down|cluster-failover|slot-move)$/ {
        if ($1 < free) { print "overlap at " $1; exit 1 }
        free = $1 + $3 + ($2 == "primary-kill" ? 20000 : 4000) }' seed-2.txt seed-3.txt ||
    fail "two Redis faults at once"
rc=0
"$run" --seed x --schedule-only 2>err.txt || rc=$?
assert_eq "$rc" 2 "exit status of a bad seed"
assert_file_match err.txt 'seed: a whole number, not "x"'
