#!/usr/bin/env bash
# 0397-idle-nap: an idle scanner waits to be woken instead of polling.
#
#  1. Idle means no writes but the lease's renewal: over a 3 s window an
#     idle scanner (idle_ms = 3000) makes at most 2 writes and 12 commands
#     in all (INFO commandstats, scripts' inner calls counted). Polling
#     every poll_ms made ~93 claims a second, each 9 commands, 2 writes.
#  2. A deadline written 50 ms ahead into the idle shard fires within 900 ms
#     of being written, three times over: the write wakes the scanner (it
#     would otherwise sleep up to 3 s), and never early.
#  3. A lost wake-up costs at most the nap: with the mark deleted (as a
#     failover to a replica that lacks it would) an ID written 50 ms ahead
#     rings nothing, and still fires within idle_ms (+ slack), once.
#  4. SIGTERM ends a napping scanner promptly and cleanly (exit 0).
# lapse_scanner_naps_total and woken_total count the naps and the writes
# that ended them.
#
# Catches: a scanner that polls while idle (1), a producer write that does
# not wake it (2), a nap that trusts its mark without checking it (3).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
metrics_config "lease_ms = 10000; idle_ms = 3000;"
scale init 1 >/dev/null
events_follow events.json
scanner_start 0
S=$SCANNER
wait_until 5000 '[[ $(lock_pid 0) == $(proc_pid $S) ]]' || fail "the scanner did not take the lock"
# napping: its mark (the lowest score it saw: none) stands
wait_until 5000 '[[ $(rcli GET "$NS:s:0") == inf ]]' || fail "the scanner set no mark"

# ---- 1. idle: the lease's renewal is the only write
stat() { # the calls of each command since RESETSTAT, "name calls" lines
    rcli INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_\([a-z|]*\):calls=\([0-9]*\),.*/\1 \2/p'
}
rcli CONFIG RESETSTAT >/dev/null
t0=$(local_ms)
wait_until 4000 '(($(local_ms) >= t0 + 3000))'
stats=$(stat)
writes=$(awk '$1 ~ /^(pexpire|set|del|zadd|zrem|hset|hdel|rpush|lpush|incr|sadd|expire|pexpireat)$/ { n += $2 } END { print n + 0 }' <<<"$stats")
cmds=$(awk '$1 !~ /^(info|config)/ { n += $2 } END { print n + 0 }' <<<"$stats")
note "idle 3 s: $writes writes, $cmds commands ($(tr '\n' ' ' <<<"$stats"))"
assert_le "$writes" 2 "writes of an idle scanner in 3 s"
assert_le "$cmds" 12 "commands of an idle scanner in 3 s"

# ---- 2. a write earlier than the scanner's next look wakes it
for i in 1 2 3; do
    w0=$(local_ms)
    echo "touch wake-$i +50" | produce
    events_wait_ids events.json "$i" 900 || fail "wake-$i (due 50 ms after it was written) did not fire within 900 ms"
    note "wake-$i fired $(($(local_ms) - w0)) ms after it was written"
    # napping again before the next one
    wait_until 3000 '[[ $(rcli GET "$NS:s:0") == inf ]]' || fail "no mark after wake-$i"
done

assert_ge "$(metric "$mp" woken_total)" 3 "woken_total after three writes that woke it"
assert_ge "$(metric "$mp" naps_total)" 4 "naps_total"

# ---- 3. a lost wake-up costs at most the nap
rcli DEL "$NS:s:0" >/dev/null
w0=$(local_ms)
echo "touch lost-1 +50" | produce
assert_eq "$(rcli LLEN "$NS:b:0")" 0 "tokens on the bell after a write with the mark gone"
events_wait_ids events.json 4 6000 || fail "lost-1 did not fire within idle_ms (+ 3 s)"
note "lost-1 fired $(($(local_ms) - w0)) ms after it was written (idle_ms 3000)"
assert_never_early events.json
assert_once events.json

# ---- 4. SIGTERM while napping
wait_until 3000 '[[ $(rcli GET "$NS:s:0") == inf ]]' || fail "no mark after lost-1"
t0=$(local_ms)
proc_stop "$S" 10
assert_eq "$PROC_RC" 0 "the scanner's exit status on SIGTERM"
assert_le "$(($(local_ms) - t0))" 2000 "ms from SIGTERM to exit while napping"
