#!/usr/bin/env bash
# 0100-sigterm: a scanner ends cleanly on SIGTERM (and SIGINT) — exit status
# 0 within 3 s — whether idle or in the middle of dispatching (acks slowed
# to 300 ms); no ID is lost: what it did not deliver, a second scanner does.
. "$(dirname "$0")/../lib.sh"

SCANNER_CFG="poll_ms = 10; lease_ms = 1000;"
redis_start main
kafka_start
write_config
scale init 1 >/dev/null
events_follow events.json

stop_ok() { # SIGNAL WHAT
    proc_stop "$SCANNER" 10 "$1"
    assert_eq "$PROC_RC" 0 "exit status after SIG$1 ($2)"
    assert_le "$PROC_MS" 3000 "ms to exit after SIG$1 ($2)"
}

# idle: started (it holds the lock), nothing due
idle_scanner() {
    scanner_start 0
    wait_until 10000 '[[ $(holder_pid) == $(proc_pid $SCANNER) ]]' ||
        fail "the scanner did not take the lock within 10 s (holder: '$(shard_holder)')"
}
idle_scanner
stop_ok TERM idle
idle_scanner
stop_ok INT idle

# busy
kafka_ctl "rtt 1 300"
for ((i = 0; i < 200; i++)); do printf 'touch s-%d +%d\n' "$i" $((100 + i * 5)); done | produce
scanner_start 0
wait_until 10000 '[[ -s events.json ]] && (($(ns_leases) > 0))' ||
    fail "no point found where some IDs were delivered and others in flight"
stop_ok TERM busy
note "stopped after $(events_unique events.json) delivered, $(ns_leases) left claimed"

kafka_ctl "rtt 1 0"
scanner_start 0
events_wait_ids events.json 200 8000
ns_wait_empty 3000
scanner_stop
