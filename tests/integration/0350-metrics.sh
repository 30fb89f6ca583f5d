#!/usr/bin/env bash
# 0350-metrics: the scanner's Prometheus endpoint (scanner.metrics_port) tells
# the truth about what it did.
#
#  - idle, right after start: every series
#    labelled {ns="demo",shard="0"} with HELP and TYPE; lease_held 1,
#    takeovers_total 1, redis_up 1, splitting 0, layout_epoch the epoch
#    lapse-scale status reports, all traffic counters 0;
#  - while acks take 300 ms and max_inflight = 10 holds back a backlog of 60
#    due IDs: the inflight gauge reads 1..10, the due gauge > 0, and
#    oldest_overdue_seconds > 0;
#  - after 100 deliveries (60 + 40 falling due over 400 ms, acks fast again):
#    claimed_total = events_produced_total = events_acked_total =
#    settled_total = the IDs delivered (no retries happened), inflight 0,
#    due 0, events_failed_total 0; the lateness histogram counts every event
#    (_count = produced, cumulative buckets never decrease, +Inf = _count,
#    bounds in seconds), the 40 on-time IDs land in low buckets (le="0.25"
#    holds at least 40); busy_seconds_total grew from the idle reading;
#    `promtool check metrics` finds nothing to say;
#  - after `lapse-scale split`: splitting 1 and layout_epoch the new epoch
#    (after finish and `merge`: merging 1, splitting 0),
#    without a restart (the scanner follows the layout).
#
# Catches: counters that are not updated or updated in the wrong place (an
# ack counted at send, a settle never counted), a gauge left stale, a
# histogram that drops or double-counts events, a malformed exposition.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
metrics_config "max_inflight = 10;"
scale init 1 >/dev/null
events_follow events.json
scanner_start 0
wait_until 5000 '[[ -n $(holder_pid) ]]' || fail "the scanner did not take the lock"
assert_eq "$(listen_addrs "$mp" | paste -sd' ')" 127.0.0.1 \
    "where the endpoint listens (scanner.metrics_bind's default: loopback only)"

# ---- idle
metrics_get "$mp" >idle.txt
for name in claimed_total events_produced_total events_acked_total events_failed_total settled_total \
    inflight due oldest_overdue_seconds lease_held takeovers_total recovered_total fenced_total \
    redis_errors_total redis_reconnects_total redis_up kafka_errors_total splitting merging layout_epoch \
    busy_seconds_total; do
    assert_file_match idle.txt "^# HELP lapse_scanner_$name " "HELP of $name"
    assert_file_match idle.txt "^# TYPE lapse_scanner_$name (counter|gauge)\$" "TYPE of $name"
    assert_file_match idle.txt "^lapse_scanner_$name\\{ns=\"$NS\",shard=\"0\"\\} [0-9]+(\\.[0-9]+)?\$" "sample of $name"
done
assert_file_match idle.txt '^# TYPE lapse_scanner_lateness_seconds histogram$' "TYPE of lateness_seconds"
if grep -E '^lapse_scanner_[a-z_]*_ms[_{ ]' idle.txt; then fail "a metric name still in milliseconds"; fi
val() { awk -v n="lapse_scanner_$2" '{ split($1, a, "{") } a[1] == n { print $2; exit }' "$1"; }
ms() { awk -v v="$1" 'BEGIN { printf "%d\n", v * 1000 }'; } # seconds -> integer ms
epoch=$(scale status --json | jq -r .epoch)
assert_eq "$(val idle.txt lease_held)" 1 "lease_held (idle)"
assert_eq "$(val idle.txt takeovers_total)" 1 "takeovers_total (idle)"
assert_eq "$(val idle.txt redis_up)" 1 "redis_up (idle)"
assert_eq "$(val idle.txt splitting)" 0 "splitting (stable layout)"
assert_eq "$(val idle.txt merging)" 0 "merging (stable layout)"
assert_eq "$(val idle.txt layout_epoch)" "$epoch" "layout_epoch (lapse-scale status says $epoch)"
for name in claimed_total events_produced_total events_acked_total settled_total inflight due lateness_seconds_count; do
    assert_eq "$(val idle.txt $name)" 0 "$name (idle)"
done

# ---- a held-back backlog
kafka_ctl "rtt 1 300"
for ((i = 0; i < 60; i++)); do printf 'touch b-%d +0\n' "$i"; done | produce
max_inflight=0 max_due=0 max_age=0
for ((k = 0; k < 10; k++)); do
    metrics_get "$mp" >busy.txt
    v=$(val busy.txt inflight); ((v > max_inflight)) && max_inflight=$v
    v=$(val busy.txt due); ((v > max_due)) && max_due=$v
    v=$(ms "$(val busy.txt oldest_overdue_seconds)"); ((v > max_age)) && max_age=$v
    sleep 0.1
done
note "while held back: inflight up to $max_inflight, due up to $max_due, oldest overdue up to $max_age ms"
assert_ge "$max_inflight" 1 "inflight gauge while acks are slow"
assert_le "$max_inflight" 10 "inflight gauge (max_inflight 10)"
assert_ge "$max_due" 1 "due gauge while max_inflight holds the backlog back"
assert_ge "$max_age" 1 "oldest_overdue_seconds (in ms) while the backlog waits"
kafka_ctl "rtt 1 0"

# ---- counters after deliveries
for ((i = 0; i < 40; i++)); do printf 'touch f-%d +%d\n' "$i" $((100 + i * 10)); done | produce
events_wait_ids events.json 100 10000
ns_wait_empty 3000
n=$(events_unique events.json)
# Redis is empty once the last ack ran; the scanner counts it when it reads
# the reply: wait for the books to close (the checks below say what is off)
wait_until 5000 'metrics_get "$mp" >after.txt; [[ $(val after.txt settled_total) == "$n" && $(val after.txt inflight) == 0 && $(val after.txt due) == 0 ]]' || true
produced=$(val after.txt events_produced_total)
note "after $n IDs: $(grep -E '^lapse_scanner_(claimed|events_produced|events_acked|settled)_total' after.txt | sed 's/{[^}]*}//' | tr '\n' ' ')"
assert_eq "$(jq -s length events.json)" "$n" "events per ID (no retries expected here)"
assert_eq "$produced" "$n" "events_produced_total"
assert_eq "$(val after.txt claimed_total)" "$n" "claimed_total"
assert_eq "$(val after.txt events_acked_total)" "$n" "events_acked_total"
assert_eq "$(val after.txt settled_total)" "$n" "settled_total"
assert_eq "$(val after.txt events_failed_total)" 0 "events_failed_total"
assert_eq "$(val after.txt inflight)" 0 "inflight after the deliveries"
assert_eq "$(val after.txt due)" 0 "due after the deliveries"
assert_eq "$(val after.txt lease_held)" 1 "lease_held"
assert_eq "$(val after.txt lateness_seconds_count)" "$produced" "lateness_seconds_count"
busy0=$(val idle.txt busy_seconds_total) busy1=$(val after.txt busy_seconds_total)
note "busy_seconds_total: $busy0 idle, $busy1 after the deliveries"
awk -v a="$busy0" -v b="$busy1" 'BEGIN { exit !(b > a) }' ||
    fail "busy_seconds_total did not grow while the scanner worked ($busy0 -> $busy1)"
for f in idle.txt after.txt; do
    promtool check metrics <$f >promtool.txt 2>&1 || fail "promtool check metrics ($f): $(head -c 600 promtool.txt)"
done
prev=0
while read -r le count; do
    assert_ge "$count" "$prev" "lateness bucket le=$le (cumulative)"
    prev=$count
done < <(sed -n 's/^lapse_scanner_lateness_seconds_bucket{.*le="\([^"]*\)"} \([0-9]*\)$/\1 \2/p' after.txt)
assert_eq "$prev" "$produced" "lateness bucket le=+Inf"
assert_file_match after.txt '^lapse_scanner_lateness_seconds_bucket\{ns="demo",shard="0",le="\+Inf"\} ' "+Inf bucket"
assert_ge "$(sed -n 's/^lapse_scanner_lateness_seconds_bucket{.*le="0.25"} //p' after.txt)" 40 "events at most 250 ms late"
assert_never_early events.json

# ---- a split: the scanner follows the layout
scale split >/dev/null
epoch=$(scale status --json | jq -r .epoch)
wait_until 5000 'metrics_get "$mp" >split.txt; [[ $(val split.txt splitting) == 1 && $(val split.txt layout_epoch) == "$epoch" ]]' ||
    fail "after the split: splitting $(val split.txt splitting), layout_epoch $(val split.txt layout_epoch) (status: epoch $epoch)"
# ---- and a merge back
scale finish >/dev/null 2>&1 || fail "finish: exit status $?"
scale merge >/dev/null || fail "merge: exit status $?"
epoch=$(scale status --json | jq -r .epoch)
wait_until 5000 'metrics_get "$mp" >merge.txt; [[ $(val merge.txt merging) == 1 && $(val merge.txt splitting) == 0 && $(val merge.txt layout_epoch) == "$epoch" ]]' ||
    fail "after the merge: merging $(val merge.txt merging), splitting $(val merge.txt splitting), layout_epoch $(val merge.txt layout_epoch) (status: epoch $epoch)"
scanner_stop
