#!/usr/bin/env bash
# 0356-lateness-past-due: lapse_scanner_lateness_seconds measures the
# scanner, not the writer's clock.
#
#  1. `touch @0` and `touch @<an hour ago>`, written while the scanner keeps
#     up, fire at once; the histogram counts 2 events with a sum under 60 s
#     (not 56 years and an hour), and lapse_scanner_written_past_due_total
#     is 2.
#  2. An ID back from an expired lease (its holder never settled it; its
#     deadline 8 s ago) waited for real: it counts its full 8 s, and not as
#     written past due.
#  3. A real backlog: IDs fall due while no scanner runs; a scanner started
#     1.5 s later counts each of them at least 1.5 s late, none written past
#     due.
#
# Catches: lateness taken as fired_ms - deadline_ms for every event, which
# turns a deadline written in the past into scanner lateness (and fires the
# LapseScannerLatenessHigh alert); and a fix that hides real waiting.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
metrics_config
scale init 1 >/dev/null
events_follow events.json
scanner_start 0
wait_until 5000 '[[ -n $(lock_pid 0) ]]' || fail "the scanner did not take the lock"

# float A <= B (awk)
flt_le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }' || fail "${3:-value}: $1 > $2"; }

# ---- 1. deadlines already past when written
printf 'touch past-epoch @0\ntouch past-hour @%d\n' $(($(local_ms) - 3600000)) | produce
events_wait_ids events.json 2 5000
wait_until 2000 '[[ $(metric "$mp" lateness_seconds_count) == 2 ]]' || true
assert_eq "$(metric "$mp" lateness_seconds_count)" 2 "events counted in the lateness histogram"
sum=$(metric "$mp" lateness_seconds_sum)
note "lateness sum of @0 and @<an hour ago>: $sum s"
# (what it catches is 56 years and an hour; a loaded machine makes the
# scanner's own lateness a second or more: 1.16 s beside a CPU hog)
flt_le "$sum" 60 "lateness sum (s) of two deadlines written in the past"
assert_eq "$(metric "$mp" written_past_due_total)" 2 "written_past_due_total"

# ---- 2. back from an expired lease: it waited
t=$(now_ms)
inflight_set 0 "$((t - 3000)).5" expired $((t - 8000))
events_wait_ids events.json 3 5000
wait_until 2000 '[[ $(metric "$mp" lateness_seconds_count) == 3 ]]' || true
sum=$(metric "$mp" lateness_seconds_sum)
note "lateness sum with the expired lease's ID: $sum s"
flt_le 8 "$sum" "lateness sum (s) with an ID 8 s overdue"
assert_eq "$(metric "$mp" written_past_due_total)" 2 "written_past_due_total after the expired lease's ID"
scanner_stop

# ---- 3. a backlog while no scanner runs
t=$(($(now_ms) + 100))
for i in 1 2 3 4 5; do echo "ZADD $NS:z:0 $t backlog-$i"; done | rcli >/dev/null
sleep_until_ms $((t + 1500))
scanner_start 0
events_wait_ids events.json 8 5000
wait_until 2000 '[[ $(metric "$mp" lateness_seconds_count) == 5 ]]' || true
assert_eq "$(metric "$mp" lateness_seconds_count)" 5 "backlog events counted"
sum=$(metric "$mp" lateness_seconds_sum)
note "lateness sum of 5 IDs due 1.5 s before the scanner started: $sum s"
flt_le 7.5 "$sum" "lateness sum (s) of the backlog"
assert_eq "$(metric "$mp" written_past_due_total)" 0 "written_past_due_total of the backlog"
scanner_stop
assert_never_early events.json
