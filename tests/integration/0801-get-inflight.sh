#!/usr/bin/env bash
# 0801-get-inflight: lapse-scale get on an ID a scanner holds in flight.
#
# One shard, lease_ms 3000, the only broker down: the scanner claims the ID
# and Kafka never acknowledges it, so it stays leased (claimed again each
# time a lease runs out). get --json then says in_flight true,
# leased_by "scanner", lease_until_ms later than the shard's clock and at
# most a lease ahead, inflight_deadline_ms the deadline written (the one
# being dispatched), deadline_ms null (nothing pending: it is being
# dispatched), the payload, and the scanner holding the shard (the lock's
# token); the text form says the same. Back up, the ID fires and get shows
# nothing left.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
SCANNER_CFG="poll_ms = 10; lease_ms = 3000;"
write_config
scale init 1 >/dev/null
scanner_start 0
wait_until 10000 '[[ -n $(rcli GET "$NS:l:0") ]]' || fail "the scanner took no lock within 10 s"
kafka_ctl "down 1"

D=$(($(now_ms) + 200))
echo "touch held-1 @$D payload-1" | produce 2>/dev/null || fail "producer: exit status $?"
inflight() { scale get held-1 --json >g.json && [[ $(jq .in_flight g.json) == true ]]; }
wait_until 10000 inflight || fail "get never showed held-1 in flight: $(cat g.json)"
now=$(now_ms)
assert_eq "$(jq -r .leased_by g.json)" scanner ".leased_by"
assert_eq "$(jq .inflight_deadline_ms g.json)" "$D" ".inflight_deadline_ms (the deadline being dispatched)"
assert_eq "$(jq .deadline_ms g.json)" null ".deadline_ms while in flight"
lease=$(jq .lease_until_ms g.json)
assert_ge "$lease" $((now - 1000)) ".lease_until_ms (the lease of a claim of the last second)"
assert_le "$lease" $((now + 3000 + 100)) ".lease_until_ms (at most a lease ahead)"
assert_eq "$(jq -r .payload g.json)" payload-1 ".payload"
assert_eq "$(jq -r .scanner g.json)" "$(rcli GET "$NS:l:0")" ".scanner (the lock holder)"
wait_until 10000 'scale get held-1 >g.txt && grep -q "^in flight *yes, claimed by" g.txt' ||
    fail "text form never showed held-1 in flight: $(cat g.txt)"
assert_file_match g.txt "^  deadline $D " "text: the deadline being dispatched"
assert_file_match g.txt '^  lease +until [0-9]+ ' "text: the lease"

kafka_ctl "up 1"
wait_until 15000 'scale get held-1 --json >g.json && [[ $(jq .found g.json) == false ]]' ||
    fail "held-1 still held 15 s after the broker came back: $(cat g.json)"
assert_eq "$(jq -c '[.deadline_ms, .in_flight, has("payload")]' g.json)" '[null,false,false]' "after delivery"
scanner_stop
