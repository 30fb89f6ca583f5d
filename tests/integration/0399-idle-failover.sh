#!/usr/bin/env bash
# 0399-idle-failover: a Sentinel failover while the shard's scanner naps.
# One node "lapse-a" (primary a, replicas b and c, three sentinels), one
# shard, idle_ms 3000.
#
#  1. The scanner naps (its mark stands). SENTINEL FAILOVER, and at once an
#     ID written 50 ms ahead through the new primary: its token rings a bell
#     nobody listens to (the scanner blocks on the old primary). It fires
#     within idle_ms (+ 3 s for the failover), once, never early: a lost
#     wake-up costs at most the nap.
#  2. Afterwards the scanner naps on the new primary: its mark stands there,
#     and IDs written 50 ms ahead fire within 900 ms of being written (the
#     bell followed the node).
#
# Catches: a bell left on the old server (every later wake-up lost: 2), a
# nap that outlives idle_ms when nobody rings (1).
. "$(dirname "$0")/../lib.sh"

sentinel_node
kafka_start --brokers 1
SCANNER_CFG="lease_ms = 10000; idle_ms = 3000;" write_config
sentinel_config
scale init 1 >/dev/null || fail "init through Sentinel: exit status $?"
events_follow events.json
scanner_start 0
S=$SCANNER
wait_until 10000 '[[ $(rcli GET "$NS:s:0") == inf ]]' || fail "the scanner set no mark"
pa=$(sentinel_primary lapse-a)

# ---- 1. a failover while it naps
assert_eq "$(redis-cli -p "${SENTINEL_PORTS[0]}" SENTINEL FAILOVER lapse-a)" OK "SENTINEL FAILOVER"
wait_until 10000 '[[ $(sentinel_primary lapse-a) != "$pa" ]]' ||
    fail "the sentinels still name $pa as the primary 10 s after SENTINEL FAILOVER"
w0=$(local_ms)
echo "touch after-1 +50" | produce || fail "producer after the failover: exit status $?"
events_wait_ids events.json 1 6000 || fail "after-1 did not fire within idle_ms + 3 s"
note "after-1 fired $(($(local_ms) - w0)) ms after it was written (idle_ms 3000)"

# ---- 2. napping on the new primary, woken there
pn=$(sentinel_primary lapse-a)
wait_until 8000 '[[ $(redis-cli -p "$pn" GET "$NS:s:0") == inf ]]' || fail "no mark on the new primary"
for i in 2 3 4; do
    w0=$(local_ms)
    echo "touch after-$i +50" | produce || fail "producer: exit status $?"
    events_wait_ids events.json "$i" 900 || fail "after-$i (due 50 ms after it was written) did not fire within 900 ms"
    note "after-$i fired $(($(local_ms) - w0)) ms after it was written"
    wait_until 5000 '[[ $(redis-cli -p "$pn" GET "$NS:s:0") == inf ]]' || fail "no mark after after-$i"
done
if (($(sentinel_failovers) > 1)); then
    note "the sentinels failed over $(sentinel_failovers) times: duplicates allowed"
else
    assert_once events.json
fi
assert_never_early events.json
proc_stop "$S" 10
assert_eq "$PROC_RC" 0 "the scanner's exit status"
