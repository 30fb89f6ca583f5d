#!/usr/bin/env bash
# 0355-metrics-port-per-shard: one config serves the metrics of every
# scanner of a host (the lapse-scanner@N units): shard N listens on
# scanner.metrics_port + N, and a port that cannot be bound turns metrics
# off, never the shard's dispatch.
#
#  1. Scanners of shards 0 and 1 with one config (metrics_port = P): both
#     run, 127.0.0.1:P serves shard="0", P+1 shard="1", each with
#     lease_held 1; each logs the address it serves.
#  2. A standby of shard 1 on the same host wants P+1 too: it keeps
#     running, logs one line naming 127.0.0.1:P+1, "Address already in use"
#     and that metrics are off. The active one stops (SIGTERM): the standby
#     takes over and fires shard 1's IDs, and once the port is free it
#     serves P+1 itself (tried again every 10 s), lease_held 1.
#  3. metrics_port + N above 65535: the scanner stops at start (status 2)
#     with one line naming the key, the sum and 65535.
#
# Catches: every scanner but the first of a host exiting with "cannot
# listen: Address already in use" (its shard left without a scanner); a
# taken port that ends the scanner, or that it never tries again.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
for ((i = 0; i < 20; i++)); do # P (in mp) and P+1 both free
    metrics_config "lease_ms = 2000;"
    printf -v hex ':%04X ' $((mp + 1))
    grep -qF -- "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null || break
done
scale init 2 >/dev/null
events_follow events.json

# ---- 1. two shards, one config
scanner_start 0
S0=$SCANNER
scanner_start 1
S1=$SCANNER
wait_until 5000 '[[ -n $(lock_pid 0) && -n $(lock_pid 1) ]]' || fail "the scanners did not take their locks"
metrics_get "$mp" >m0.txt
metrics_get $((mp + 1)) >m1.txt
assert_file_match m0.txt '^lapse_scanner_lease_held\{ns="demo",shard="0"\} 1$' "127.0.0.1:$mp (shard 0)"
assert_file_match m1.txt '^lapse_scanner_lease_held\{ns="demo",shard="1"\} 1$' "127.0.0.1:$((mp + 1)) (shard 1)"
assert_file_match "$T/$S1.log" "shard 1: metrics on http://127\\.0\\.0\\.1:$((mp + 1))/metrics" "shard 1's log"

# ---- 2. a standby of shard 1 on the same host: the port is taken
scanner_start 1
B=$SCANNER
wait_until 5000 'grep -q "standby; held by" "$T/$B.log"' || fail "the second scanner of shard 1 is not on standby"
assert_file_match "$T/$B.log" "127\\.0\\.0\\.1:$((mp + 1)): cannot listen: Address already in use; metrics are off" \
    "the standby's reason"
assert_eq "$(grep -c 'metrics are off' "$T/$B.log")" 1 "the standby's lines about metrics"
note "$(grep 'metrics are off' "$T/$B.log")"
proc_alive "$B" || fail "the standby exited"

proc_stop "$S1" 10
assert_eq "$PROC_RC" 0 "the active scanner of shard 1 after SIGTERM"
wait_until 5000 '[[ $(lock_pid 1) == $(proc_pid $B) ]]' || fail "the standby did not take shard 1 over"
t=$(($(now_ms) - 100))
rcli ZADD "$NS:z:1" "$t" one-a "$t" one-b >/dev/null
rcli ZADD "$NS:z:0" "$t" zero-a >/dev/null
events_wait_ids events.json 3 5000
# tried again every 10 s: the port is free now
wait_until 15000 'grep -q "shard 1: metrics on http://127.0.0.1:$((mp + 1))/metrics" "$T/$B.log"' ||
    fail "the new holder of shard 1 does not serve metrics 15 s after the port was freed"
metrics_get $((mp + 1)) >m1.txt
assert_file_match m1.txt '^lapse_scanner_lease_held\{ns="demo",shard="1"\} 1$' "127.0.0.1:$((mp + 1)) after the takeover"
assert_file_match m1.txt '^lapse_scanner_events_produced_total\{ns="demo",shard="1"\} 2$' "shard 1's events, counted by the new holder"
assert_eq "$(grep -c 'metrics are off' "$T/$B.log")" 1 "the new holder's lines about metrics being off"
scanner_stop

# ---- 3. metrics_port + N above 65535
SCANNER_CFG="poll_ms = 10; metrics_port = 65535;" write_config "$T/high.conf"
rc=0
timeout 10 "$LAPSE_BIN/lapse-scanner" -c "$T/high.conf" --shard 1 >high.out 2>high.err || rc=$?
assert_eq "$rc" 2 "exit status with metrics_port 65535 for shard 1"
assert_eq "$(grep -c . high.err)" 1 "lines on stderr ($(head -c 300 high.err))"
assert_file_match high.err 'scanner\.metrics_port: 65535 \+ shard 1 = 65536 is above 65535' "the error"
