#!/usr/bin/env bash
# 0962-console-read-share: the snapshot's reads take at most console.read_pct
# of the time, however short refresh_ms is: a namespace whose read is slow
# (hundreds of shards) is read less often, not Redis's CPU spent on it.
#
# refresh_ms = 100, read_pct = 10; a page polls /api/status. Quick reads (4
# shards: a few ms): one every refresh_ms. Then Redis pauses its clients
# (CLIENT PAUSE ALL, 1.5 s), so that the read under way takes long: the
# view says how long (read_took_ms). At 10 %, the next read comes no
# sooner than 10 times that after it: while the page goes on polling for
# 2 s after a read of 1 s or more, the view stays that read. (Without
# the rule: a read every 100 ms.)
. "$(dirname "$0")/../lib.sh"

redis_start main
console_config "refresh_ms = 100; read_pct = 10; idle_ms = 60000;"
scale init 4 >/dev/null
console_start
reads() { capi /api/console | jq .snapshot_reads; }
assert_eq "$(capi /api/console | jq .read_pct)" 10 "read_pct in /api/console"

capi /api/status >/dev/null
r0=$(reads)
wait_until 5000 'capi /api/status >/dev/null; (($(reads) >= r0 + 5))' ||
    fail "quick reads not one every refresh_ms: $(($(reads) - r0)) in 5 s"

rcli CLIENT PAUSE 1500 ALL >/dev/null
# the read the pause held (pages are answered from the snapshot meanwhile)
slow() { capi /api/status >view.json && (($(jq .read_took_ms view.json) >= 1000)); }
wait_until 5000 slow || fail "no slow read seen after the pause: $(jq -c '{read_ms, read_took_ms}' view.json)"
at=$(jq .read_ms view.json)
took=$(jq .read_took_ms view.json)
note "a read of $took ms at $at"
for i in $(seq 20); do
    capi /api/status >view.json
    nap 0.1
done
assert_eq "$(jq .read_ms view.json)" "$at" "the view 2 s after a read of $took ms (read_pct 10: none for $((took * 10)) ms)"
