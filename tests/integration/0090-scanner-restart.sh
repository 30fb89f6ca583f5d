#!/usr/bin/env bash
# 0090-scanner-restart: a scanner killed with SIGKILL in the middle of
# dispatching (acks slowed to 300 ms, so batches are in flight) loses
# nothing: a new scanner delivers every ID, the claimed ones once their
# lease (1 s here) runs out, and Redis ends empty.
. "$(dirname "$0")/../lib.sh"

SCANNER_CFG="poll_ms = 10; lease_ms = 1000;"
redis_start main
kafka_start
write_config
scale init 1 >/dev/null
events_follow events.json

kafka_ctl "rtt 1 300"
# the scanner runs before the IDs are written, so they fall due one after
# the other under it (not all at once after a slow start)
scanner_start 0
wait_until 10000 '[[ -n $(holder_pid) ]]' || fail "the scanner did not take the lock within 10 s"
for ((i = 0; i < 100; i++)); do printf 'touch r-%d +%d\n' "$i" $((200 + i * 10)); done | produce
wait_until 10000 '[[ -s events.json ]] && (($(ns_leases) > 0))' ||
    fail "no point found where some IDs were delivered and others in flight"
scanner_kill9 0
kill_ms=$(local_ms)
delivered=$(events_unique events.json)
leased=$(ns_leases)
note "killed after $delivered delivered, $leased claimed"
((delivered < 100)) ||
    fail "machine too slow: all 100 IDs (due over 1 s) were delivered before the kill, so the test proves nothing"

# (At 300 ms per ack, a 1 s lease leaves librdkafka 500 ms per message: too
# tight to drain reliably; this test is about the restart, so speed up.)
kafka_ctl "rtt 1 0"

scanner_start 0
events_wait_ids events.json 100 8000
note "all 100 delivered $(($(local_ms) - kill_ms)) ms after the kill"
ns_wait_empty 3000
assert_never_early events.json
