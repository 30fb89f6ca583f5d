#!/usr/bin/env bash
# 0370-graceful-sigterm-busy: SIGTERM to a busy active scanner, with a
# standby waiting (lease_ms = 2000, so librdkafka gives up after 1000 ms).
#
#  1. Slow broker (every answer 500 ms late), 300 IDs: 200 due at once, 100
#     over +1500..+2500 ms. SIGTERM to the active A while >= 100 are in
#     flight: A stops claiming, waits for the in-flight answers, settles
#     them, releases the lock and exits 0 within 3 s: right after the exit
#     the lock no longer names A (without the release it would for the rest
#     of A's 2000 ms lease), the standby B holds it within 1.5 s (it polls
#     every 200 ms; the rest is room for a loaded machine) and delivers the
#     rest.
#  2. Brokers down, a new standby C waiting, 100 IDs due: B claims them and
#     Kafka never answers. SIGTERM to B: B gives up on them (librdkafka's
#     timeout) and exits 0 within 4 s, leaving them leased; C takes over at
#     once and takes back exactly those leased IDs ("N in-flight IDs of a
#     previous holder due again", recovered_total); once the brokers return
#     C delivers them all within 4 s.
# Every ID of both phases is delivered at least once, never early; Redis
# ends empty.
#
# Catches: a SIGTERM that hangs on in-flight events (or exits non-zero); one
# that drops in-flight events (acknowledged but never settled, or settled
# without an acknowledgement); a lock kept after exit (the standby waits out
# the lease); a takeover that leaves a stopped holder's claimed IDs to their
# leases instead of taking them back.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
free_port >/dev/null
pc=$FREE_PORT
SCANNER_CFG="poll_ms = 10; lease_ms = 2000;"
write_config
SCANNER_CFG="poll_ms = 10; lease_ms = 2000; metrics_port = $pc;" write_config "$T/c.conf"
scale init 1 >/dev/null
events_follow events.json

scanner_start 0
A=$SCANNER
wait_until 5000 '[[ $(holder_pid) == $(proc_pid $A) ]]' || fail "A did not take the lock"
scanner_start 0
B=$SCANNER
wait_until 5000 'grep -q "standby; held by" "$T/$B.log"' || fail "B does not say it is on standby"
echo "touch warm +0" | produce
events_wait_ids events.json 1 10000

# ---- 1. busy, slow broker
kafka_ctl "rtt 1 500"
{
    for ((i = 0; i < 200; i++)); do printf 'touch now-%d +%d\n' "$i" $((i / 2)); done
    for ((i = 0; i < 100; i++)); do printf 'touch later-%d +%d\n' "$i" $((1500 + i * 10)); done
} | produce
wait_until 5000 '(($(ns_leases) >= 100))' || fail "fewer than 100 IDs in flight (got $(ns_leases))"
note "SIGTERM to A with $(ns_leases) in flight, $(events_unique events.json) delivered"
atoken=$(shard_holder)
proc_stop "$A" 10
exit_ms=$(local_ms)
assert_ne "$(shard_holder)" "$atoken" "the lock right after A's exit (A's lease runs 2000 ms from its last claim)"
assert_eq "$PROC_RC" 0 "A's exit status after SIGTERM"
note "A exited after $PROC_MS ms: $(grep -o 'stopped (.*)' "$T/$A.log")"
assert_le "$PROC_MS" 3000 "ms for A to exit after SIGTERM with 500 ms acks"
wait_until 10000 '[[ $(lock_pid 0) == $(proc_pid $B) ]]' || fail "B did not take the lock within 10 s of A's exit"
took=$(($(local_ms) - exit_ms))
note "B took over $took ms after A's exit"
assert_le "$took" 1500 "ms from A's exit to B's takeover"
assert_eq "$(holder_pid)" "$(proc_pid $B)" "pid in the lock (lapse-scale status) after A's exit"
kafka_ctl "rtt 1 0"
events_wait_ids events.json 301 8000
ns_wait_empty 3000

# ---- 2. brokers down: B abandons its in-flight IDs to C
CONF=$T/c.conf scanner_start 0
C=$SCANNER
wait_until 5000 'grep -q "standby; held by" "$T/$C.log"' || fail "C does not say it is on standby"
kafka_ctl "down 1"
for ((i = 0; i < 100; i++)); do printf 'touch down-%d +0\n' "$i"; done | produce
wait_until 3000 '(($(ns_leases) == 100))' || fail "B did not claim the 100 IDs (claimed: $(ns_leases))"
btoken=$(shard_holder)
proc_stop "$B" 10
exit_ms=$(local_ms)
assert_ne "$(shard_holder)" "$btoken" "the lock right after B's exit"
assert_eq "$PROC_RC" 0 "B's exit status after SIGTERM with the brokers down"
# all 100 stay leased (no broker to acknowledge one); not counted now: C
# may have taken them back already
leased=100
note "B exited after $PROC_MS ms: $(grep -o 'stopped (.*)' "$T/$B.log")"
assert_le "$PROC_MS" 4000 "ms for B to exit after SIGTERM with the brokers down"
wait_until 10000 '[[ $(lock_pid 0) == $(proc_pid $C) ]]' || fail "C did not take the lock within 10 s of B's exit"
took=$(($(local_ms) - exit_ms))
note "C took over $took ms after B's exit"
assert_le "$took" 1500 "ms from B's exit to C's takeover"
assert_eq "$(holder_pid)" "$(proc_pid $C)" "pid in the lock (lapse-scale status) after B's exit"
# (C logs, and counts in its metrics, after acquire.lua answered it)
wait_until 5000 'grep -q ": active (token" "$T/$C.log"' || fail "C holds the lock but does not say it is active"
assert_file_match "$T/$C.log" ": active \\(token .*\\); $leased in-flight IDs of a previous holder due again" "C's log"
assert_eq "$(metric $pc recovered_total)" "$leased" "C's recovered_total"
kafka_ctl "up 1"
up_ms=$(local_ms)
events_wait_ids events.json 401 4000
note "the 100 delivered $(($(local_ms) - up_ms)) ms after the brokers' return"
ns_wait_empty 3000
assert_never_early events.json
scanner_stop
