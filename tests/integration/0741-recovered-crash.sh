#!/usr/bin/env bash
# 0741-recovered-crash: the timeout/recovered pair survives kill -9, and an
# ID that never comes back is forgotten after the retention.
#
# scanner.lease_ms = 1000; scanner.offline_retention_s = 600 for steps 1
# and 2, 1 for step 3 (a retention of 1 s could forget c-2 before its
# second write on a slow machine, and then no recovered event is due).
#  1. c-1 (watch) times out and goes offline; the scanner is killed with
#     SIGKILL; c-1 signals while no scanner runs; a new scanner sends its
#     recovered event.
#  2. c-2 times out and goes offline; every broker goes down; c-2 signals:
#     its recovered event is claimed and sent, not acknowledged; the scanner
#     is killed with SIGKILL; the brokers come back; a new scanner sends it
#     again once the lease ran out. Every copy of c-2's recovered event is
#     the same, byte for byte.
#  3. g-1 times out, stays silent: after ~1 s it is no longer offline
#     (lapse_scanner_offline_forgotten_total counts it), and its next write
#     sends no recovered event.
# Catches: a recovered event lost with a crash, copies that disagree (a
# consumer keyed by (id, deadline_ms, type) would see two facts), offline
# records that live for ever.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
metrics_config "lease_ms = 1000; offline_retention_s = 600;"
scale init 1 >/dev/null
events_follow events.json
scanner_start 0
first=$SCANNER

# recovered: the recovered events read back, "id" a line (copies kept)
recovered() { jq -R -r 'fromjson? | select(.type == "recovered") | .id' events.json; }

# 1. killed between the two
echo "watch c-1 +100" | produce
wait_until 10000 '[[ $(scale_offline | cut -f1) == c-1 ]]' || fail "c-1 never offline: $(scale_offline)"
proc_kill9 "$first"
echo "watch c-1 +60000" | produce
scanner_start 0
wait_until 15000 '[[ $(recovered | sort -u | paste -sd,) == c-1 ]]' || fail "c-1's recovered event: '$(recovered)'"
assert_eq "$(scale_offline)" "" "offline after c-1 came back"
second=$SCANNER

# 2. killed while the recovered event was in flight
echo "watch c-2 +100" | produce
wait_until 10000 '[[ $(scale_offline | cut -f1) == c-2 ]]' || fail "c-2 never offline: $(scale_offline)"
kafka_ctl "down 1"
echo "watch c-2 +60000" | produce
# (this scanner sent c-1's recovered event too: c-2's is its second)
wait_until 10000 '(( $(metric $mp recovered_events_total) >= 2 ))' || fail "c-2's recovered event never sent"
proc_kill9 "$second"
kafka_ctl "up 1"
scanner_start 0
# (the event reader reconnects to the returned broker with librdkafka's
# back-off, up to 10 s, and the new scanner waits out the lease)
wait_until 40000 '(( $(recovered | grep -c "^c-2$") >= 1 ))' || fail "c-2's recovered event never arrived within 40 s"
jq -R -c 'fromjson? | select(.type == "recovered" and .id == "c-2")' events.json | sort -u >c2.json
assert_eq "$(_lines c2.json)" 1 "distinct copies of c-2's recovered event ($(cat c2.json))"
assert_eq "$(scale_offline)" "" "offline after c-2 came back"

# 3. never back: forgotten (a scanner with a retention of 1 s)
proc_stop "$SCANNER" 10
metrics_config "lease_ms = 1000; offline_retention_s = 1;"
scanner_start 0
echo "watch g-1 +100" | produce
wait_until 10000 '(( $(jq -R -r "fromjson? | select(.id == \"g-1\") | .type" events.json | wc -l) == 1 ))' ||
    fail "g-1 never timed out"
wait_until 10000 '(( $(metric $mp offline_forgotten_total) >= 1 ))' || fail "g-1 not forgotten: $(scale_offline)"
assert_eq "$(scale_offline)" "" "offline after the retention"
assert_eq "$(metric $mp offline)" 0 "the offline gauge after the retention"
echo "watch g-1 +60000" | produce
echo "touch marker +50" | produce
events_wait_ids events.json 4 10000
assert_eq "$(recovered | sort -u | paste -sd,)" "c-1,c-2" "recovered events (none for g-1)"
