#!/usr/bin/env bash
# 0305-standby-quiet: a standby scanner logs what changes, not every poll of
# the lock (lease_ms = 1000: ten polls a second).
#
#  1. A holds shard 0; B and C stand by. While a marker ID due 3 s later
#     is fired by A, B and C each log exactly one line about the lease:
#     "standby; held by <A's token>".
#  2. A stops (SIGTERM); one of B and C takes over. The other logs one line
#     more, "the lease passed from <A's token> to <the new holder's>", and
#     nothing else while a second marker due 2 s later fires.
#
# Catches: a standby that logs "standby; held by ..." (and "similar lines
# suppressed") about twice a second for as long as it waits.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
SCANNER_CFG="poll_ms = 10; lease_ms = 1000;" write_config
scale init 1 >/dev/null
events_follow events.json

lease_lines() { grep -cE 'standby|suppressed|lease passed' "$T/$1.log" || true; }

# ---- 1. one active, two standbys
scanner_start 0
A=$SCANNER
wait_until 5000 '[[ $(lock_pid 0) == $(proc_pid $A) ]]' || fail "A did not take the lock"
a_token=$(rcli GET "$NS:l:0")
scanner_start 0
B=$SCANNER
scanner_start 0
C=$SCANNER
wait_until 5000 'grep -q "standby; held by" "$T/$B.log" && grep -q "standby; held by" "$T/$C.log"' ||
    fail "B and C do not say they stand by"
echo "touch marker-1 +3000" | produce
events_wait_ids events.json 1 8000
for n in "$B" "$C"; do
    assert_eq "$(lease_lines "$n")" 1 "$n's lines about the lease while A held it 3 s ($(grep -c . "$T/$n.log") lines in all)"
    assert_file_match "$T/$n.log" "shard 0: standby; held by $a_token\$" "$n's line"
done

# ---- 2. the lease passes to one of them
proc_stop "$A" 10
assert_eq "$PROC_RC" 0 "A's exit status"
wait_until 5000 '[[ $(lock_pid 0) == $(proc_pid $B) || $(lock_pid 0) == $(proc_pid $C) ]]' ||
    fail "neither B nor C took over"
if [[ $(lock_pid 0) == $(proc_pid $B) ]]; then new=$B other=$C; else new=$C other=$B; fi
new_token=$(rcli GET "$NS:l:0")
echo "touch marker-2 +2000" | produce
events_wait_ids events.json 2 8000
assert_eq "$(grep -c ': active (token' "$T/$new.log")" 1 "$new's 'active' lines"
assert_eq "$(lease_lines "$other")" 2 "$other's lines about the lease ($(grep -c . "$T/$other.log") lines in all)"
assert_file_match "$T/$other.log" "shard 0: standby; the lease passed from $a_token to $new_token\$" "$other's line on the change"
scanner_stop
