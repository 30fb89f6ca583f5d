#!/usr/bin/env bash
# 0597-autoscale-step: the scaler follows a 4x step of the load and its
# fall, by its windows.
#
# 2 shards (min_shards 2, max_shards 4), readings every 500 ms, up window
# 3 s, down window 8 s, cooldown 4 s; due/s per shard: up 10, down 4. A
# base of 360 IDs due within the next 30 s (3 due/s per shard), then 1440
# more (x IDs) due within the minute: 15 due/s per shard. The scaler:
#  - splits 2 -> 4 within up_window + one reading + 2.5 s for the split
#    itself, its start_cmd naming shards 2 and 3 (the test starts their
#    scanners), and finishes it (finish --drain): stable, 4 shards;
#  - once the x IDs are cancelled (the load falls to 1.5 due/s per shard),
#    merges 4 -> 2 no sooner than down_window after the fall, its stop_cmd
#    naming shards 2 and 3, and finishes it; the scanners of 2 and 3 exit 0
#    by themselves; 4 shards never go further (max) and 2 never below (min);
#  - every base ID is delivered exactly once, none early; an x ID at most
#    once, none early;
#  - its log names the figures and thresholds of each decision; SIGTERM
#    ends it with status 0.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
SCALE="scale = { interval_ms = 500; up_due_per_shard = 10; down_due_per_shard = 4;
  up_window_ms = 3000; down_window_ms = 8000; cooldown_ms = 4000; min_shards = 2; max_shards = 4;
  start_cmd = \"echo %d >> $T/started.txt\"; stop_cmd = \"echo %d >> $T/stopped.txt\"; };"
write_config "$CONF" "$SCALE"
scale init 2 >/dev/null
scanner_start 0
scanner_start 1
events_follow events.json

t0=$(now_ms)
awk -v t0="$t0" 'BEGIN { for (i = 0; i < 360; i++) printf "touch b%03d @%.0f\n", i, t0 + 3000 + int(i * 27000 / 360) }' |
    produce || fail "producer (base): exit status $?"
spawn auto "$LAPSE_SCRIPTS/lapse-scale" -c "$CONF" autoscale
wait_until 5000 'grep -q "autoscale: started" auto.log' || fail "the scaler did not start"

shards() { scale status --json | jq -r '"\(.state) \(.shards)"'; }
t1=$(now_ms)
t_step=$(local_ms)
awk -v t1="$t1" 'BEGIN { for (i = 0; i < 1440; i++) printf "touch x%04d @%.0f\n", i, t1 + 3000 + int(i * 55000 / 1440) }' |
    produce || fail "producer (step): exit status $?"
wait_until 12000 '[[ $(shards) == *" 4" ]]' || fail "no split within 12 s of the step: $(grep autoscale: auto.log | tail -n 3)"
took=$(($(local_ms) - t_step))
note "split $took ms after the step"
assert_le "$took" $((3000 + 500 + 2500)) "split after the step (ms)"
wait_until 5000 '[[ -s started.txt ]] && (($(wc -l <started.txt) == 2))' || fail "start_cmd did not run for two shards"
assert_eq "$(sort -n started.txt | paste -sd' ')" "2 3" "start_cmd's shards"
scanner_start 2
scanner_start 3
wait_until 10000 '[[ $(shards) == "stable 4" ]]' || fail "the split was not finished: $(grep autoscale: auto.log | tail -n 3)"
assert_file_match auto.log 'info lapse-scale: autoscale: split 2 -> 4: due/s per shard 1[0-9]\.[0-9] > up_due_per_shard 10 for [0-9.]+ s \(every reading of up_window_ms 3000, [0-9]+ readings\)' "the split's reason"
assert_file_match auto.log 'autoscale: split 2 -> 4 finished' "the finish"

# the load falls: the x IDs are cancelled
nap 1
t_fall=$(local_ms)
awk 'BEGIN { for (i = 0; i < 1440; i++) printf "cancel x%04d\n", i }' | produce || fail "producer (cancel): exit status $?"
wait_until 20000 '[[ $(shards) == *" 2" ]]' || fail "no merge within 20 s of the fall: $(grep autoscale: auto.log | tail -n 3)"
took=$(($(local_ms) - t_fall))
note "merge $took ms after the fall"
assert_ge "$took" 8000 "merge after the fall (ms): no sooner than down_window"
wait_until 10000 '[[ $(shards) == "stable 2" ]]' || fail "the merge was not finished: $(grep autoscale: auto.log | tail -n 3)"
assert_eq "$(sort -n stopped.txt | paste -sd' ')" "2 3" "stop_cmd's shards"
sp_wait_retired 2 3
assert_file_match auto.log 'info lapse-scale: autoscale: merge 4 -> 2: below every down threshold for [0-9.]+ s \(every reading of down_window_ms 8000, [0-9]+ readings\); due/s per shard [0-3]\.[0-9]' "the merge's reason"

# every base ID once, none early; x IDs at most once, none early
wait_until 40000 '(($(events_ids events.json | grep -c "^b") >= 360))' ||
    fail "only $(events_ids events.json | grep -c '^b') of 360 base IDs delivered"
nap 1
assert_eq "$(events_ids events.json | grep '^b' | sort -u | wc -l)" 360 "base IDs delivered"
assert_once events.json
assert_never_early events.json
assert_eq "$(scale status --json | jq -r '"\(.state) \(.shards)"')" "stable 2" "layout at the end"
assert_eq "$(grep -cE 'autoscale: (split|merge) [0-9]+ -> [0-9]+: ' auto.log)" 2 "changes made"
proc_stop auto 10
assert_eq "$PROC_RC" 0 "the scaler's exit status after SIGTERM"
