#!/usr/bin/env bash
# 0300-standby-takeover: two scanners for one shard (lease_ms = 1000).
#
#  1. Exactly one is active: the lock (`lapse-scale status --json`
#     .shard_info[].scanner) names A's pid, A's metrics say lease_held 1 and
#     B's 0, only A's log says "active", B's says "standby".
#  2. A is killed with SIGKILL while a stream of due IDs is being dispatched
#     (acks slowed to 50 ms, so some are in flight). B takes the lock within
#     lease_ms + 500 ms, takes back exactly the IDs A had claimed
#     (recovered_total = the leases left at the kill), and every ID is
#     delivered, never early; Redis ends empty.
#  3. A new standby C waits; B gets SIGTERM while IDs still fall due: B exits
#     0 and C holds the lock less than 600 ms later — well before B's lease
#     could have run out (>= ~1000 ms), so only B's release explains it; C
#     delivers the rest.
#
# Catches: a second active scanner (no lock, or a lock not checked); a standby
# that never takes over or waits far past the lease; a takeover that leaves
# the dead holder's claimed IDs to their leases or loses them; a SIGTERM that
# does not release the lock (the standby would wait out the lease).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
free_port >/dev/null
pa=$FREE_PORT
free_port >/dev/null
pb=$FREE_PORT
SCANNER_CFG="poll_ms = 10; lease_ms = 1000; metrics_port = $pa;" write_config "$T/a.conf"
SCANNER_CFG="poll_ms = 10; lease_ms = 1000; metrics_port = $pb;" write_config "$T/b.conf"
write_config
scale init 1 >/dev/null
events_follow events.json

# ---- 1. one active, one standby
CONF=$T/a.conf scanner_start 0
A=$SCANNER
wait_until 5000 '[[ $(holder_pid) == $(proc_pid $A) ]]' || fail "A did not take the lock within 5 s (holder: '$(shard_holder)')"
CONF=$T/b.conf scanner_start 0
B=$SCANNER
wait_until 5000 'grep -q "standby; held by" "$T/$B.log"' || fail "B does not say it is on standby"
sleep 0.3 # several of B's attempts at the lock
assert_eq "$(holder_pid)" "$(proc_pid $A)" "pid in the lock"
assert_eq "$(metric $pa lease_held)" 1 "A's lease_held"
assert_eq "$(metric $pb lease_held)" 0 "B's lease_held"
assert_eq "$(grep -c ': active (token' "$T/$A.log")" 1 "A's 'active' log lines"
assert_eq "$(grep -c ': active (token' "$T/$B.log")" 0 "B's 'active' log lines"
assert_file_match "$T/$B.log" "standby; held by $(shard_holder)\$" "B's log"

# ---- 2. SIGKILL of the active one in mid-stream
kafka_ctl "rtt 1 50"
N=300
for ((i = 0; i < N; i++)); do printf 'touch k-%d +%d\n' "$i" $((200 + i * 5)); done | produce
wait_until 10000 '(($(events_unique events.json) >= 20 && $(ns_leases) > 0))' ||
    fail "no point found where some IDs were delivered and others in flight"
proc_kill9 "$A"
kill_ms=$(local_ms)
leased=$(ns_leases)
delivered=$(events_unique events.json)
note "A killed after $delivered delivered, $leased claimed and unacknowledged"
((delivered < N)) || fail "everything was delivered before the kill: test proves nothing"
wait_until 10000 '[[ $(lock_pid 0) == $(proc_pid $B) ]]' || fail "B did not take the lock within 10 s of the kill"
took=$(($(local_ms) - kill_ms))
note "B took over $took ms after the kill (lease 1000 ms)"
assert_le "$took" 2000 "ms from the kill to B's takeover (lease 1000 + margin for a loaded machine)"
assert_eq "$(holder_pid)" "$(proc_pid $B)" "pid in the lock (lapse-scale status) after the takeover"
# (B logs, and counts in its metrics, after acquire.lua answered it)
wait_until 5000 'grep -q ": active (token" "$T/$B.log"' || fail "B holds the lock but does not say it is active"
assert_eq "$(metric $pb lease_held)" 1 "B's lease_held after the takeover"
assert_eq "$(metric $pb recovered_total)" "$leased" "IDs B took back from A"
assert_file_match "$T/$B.log" ": active \\(token .*\\); $leased in-flight IDs of a previous holder due again" "B's log"
kafka_ctl "rtt 1 0"
events_wait_ids events.json $N 8000
ns_wait_empty 3000
note "all $N delivered $(($(local_ms) - kill_ms)) ms after the kill"

# ---- 3. SIGTERM of the active one: the standby takes over at once
CONF=$T/a.conf scanner_start 0
C=$SCANNER
wait_until 5000 'grep -q "standby; held by" "$T/$C.log"' || fail "C does not say it is on standby"
for ((i = 0; i < 100; i++)); do printf 'touch t-%d +%d\n' "$i" $((300 + i * 10)); done | produce
wait_until 5000 '(($(events_unique events.json) >= N + 10))' || fail "B delivered nothing of the second stream"
bpid=$(proc_pid "$B")
kill -TERM "$bpid"
term_ms=$(local_ms)
wait_until 10000 '[[ $(lock_pid 0) == $(proc_pid $C) ]]' || fail "C did not take the lock within 10 s of B's SIGTERM"
took=$(($(local_ms) - term_ms))
note "C took over $took ms after B's SIGTERM"
assert_le "$took" 600 "ms from B's SIGTERM to C's takeover (B's lease: 1000 ms)"
assert_eq "$(holder_pid)" "$(proc_pid $C)" "pid in the lock (lapse-scale status) after B's SIGTERM"
proc_stop "$B" 10
assert_eq "$PROC_RC" 0 "B's exit status after SIGTERM"
events_wait_ids events.json $((N + 100)) 8000
ns_wait_empty 3000
assert_never_early events.json
scanner_stop
