#!/usr/bin/env bash
# 0360-catchup-rate: a backlog drains at scanner.catchup_rate while fresh
# deadlines keep firing on time.
#
# 600 IDs overdue by 5 s are written while no scanner runs (a backlog, as
# after an outage). A scanner starts with catchup_rate = 200 and fresh_ms =
# 1000. While it drains, 10 fresh IDs are touched at +200, one every 150 ms.
#  - the fresh IDs fire at most 100 ms after their deadline (fired_ms -
#    deadline_ms), most of them while the backlog is still draining;
#  - the backlog is rate-limited: its events' fired_ms spread over at least
#    1500 ms (200 at once — one second of burst — then 400 at 200/s: ~2 s),
#    at most 300 of them in the first 200 ms, and it still finishes within
#    4 s (the limit is not far below the rate);
#  - all 610 are delivered, never early; Redis ends empty.
#
# Catches: no rate limit (the whole backlog in the first few ms); a rate limit
# that also holds back fresh deadlines (they wait behind the backlog and fire
# seconds late); a limit far slower than configured.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
SCANNER_CFG="poll_ms = 10; catchup_rate = 200; fresh_ms = 1000;"
write_config
scale init 1 >/dev/null
events_follow events.json

now=$(now_ms)
for ((i = 0; i < 600; i++)); do printf 'touch old-%d @%d\n' "$i" $((now - 5000 - i)); done | produce
assert_eq "$(shard_count 0 -inf "$now")" 600 "overdue IDs before the scanner starts"
# the fresh IDs go through one running producer: a touch costs a line, not
# the start of a process (which a loaded machine can stretch past the drain)
sp_producer F
sp_feed F /dev/null # started and connected

scanner_start 0
wait_until 5000 '[[ -n $(holder_pid) ]]' || fail "the scanner did not take the lock"
for ((k = 0; k < 10; k++)); do
    echo "touch fresh-$k +200" >&"${SP_FD[F]}"
    sleep 0.15
done
sp_marker_cancels >&"${SP_FD[F]}" # (sp_feed's marker, due in an hour)
events_wait_ids events.json 610 10000
ns_wait_empty 3000
assert_never_early events.json

mapfile -t old < <(events_fired events.json '.id | startswith("old-")')
first=${old[0]} last=${old[-1]}
spread=$((last - first))
early=0
for t in "${old[@]}"; do ((t < first + 200)) && early=$((early + 1)); done
lateness=$(jq -r 'select(.id | startswith("fresh-")) | .fired_ms - .deadline_ms' events.json | sort -n | tr '\n' ' ')
during=$(jq -r --argjson last "$last" 'select((.id | startswith("fresh-")) and .fired_ms < $last) | .id' events.json | wc -l)
note "backlog: ${#old[@]} events over $spread ms, $early in the first 200 ms"
note "fresh IDs: lateness $lateness ms; $during of 10 fired while the backlog drained"
assert_ge "$spread" 1500 "ms over which the backlog drained (600 at 200/s after a 200 burst)"
assert_le "$spread" 4000 "ms over which the backlog drained"
assert_le "$early" 300 "backlog events in the first 200 ms"
max_late=$(jq -s '[.[] | select(.id | startswith("fresh-")) | .fired_ms - .deadline_ms] | max' events.json)
assert_le "$max_late" 100 "ms a fresh deadline fired late while the backlog drained"
due_during=$(jq -r --argjson last "$last" 'select((.id | startswith("fresh-")) and .deadline_ms < $last) | .id' events.json | wc -l)
((due_during >= 5)) ||
    fail "machine too slow: only $due_during of the 10 fresh IDs (one touched every 150 ms) fell due before the backlog's last event, $spread ms after its first"
assert_ge "$during" 5 "fresh IDs fired while the backlog was still draining"
scanner_stop
