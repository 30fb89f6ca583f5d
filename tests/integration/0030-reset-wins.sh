#!/usr/bin/env bash
# 0030-reset-wins: writes that land while an ID is being dispatched.
#
# The broker's round trip is made 10 s long, so a claimed batch stays in
# flight long enough for a loaded machine to see the claim and land the
# resets meanwhile (the new deadlines are 16 s ahead, so the slow dispatch
# finishes first; the lease is 30 s, so +16000 is still earlier than B's
# lease; 5 s and 8 s were too short beside a nemesis run). While A, B and C are claimed (out of the zset, in the claim's
# in-flight record):
#   touch A +16000  -> kept: A is pending again with the new deadline and
#                      fires again later with it (the old fire may arrive too)
#   extend B +16000 -> kept, although +16000 is earlier than B's lease
#                      (the claim took B out of the zset: nothing is pending)
#   cancel C        -> C is gone after the in-flight dispatch completes and
#                      never fires a second time
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
SCANNER_CFG="poll_ms = 10; lease_ms = 30000;"
write_config
scale init 1 >/dev/null
scanner_start 0
events_follow events.json

# warm up the whole path before slowing it down
echo "touch warm +0" | produce
events_wait_ids events.json 1 10000

kafka_ctl "rtt 1 10000"
printf 'touch A +100 pa\ntouch B +100 pb\ntouch C +100 pc\n' | produce
wait_until 5000 '[[ -n $(id_claimed A) && -n $(id_claimed B) && -n $(id_claimed C) ]]' ||
    fail "A, B, C not all claimed within 5 s (leases: $(id_claimed A) $(id_claimed B) $(id_claimed C))"
seen=$(now_ms)
dA=$(inflight_of A)
dB=$(inflight_of B)
dC=$(inflight_of C)
_int "$dA" "in-flight deadline of A"
_int "$dB" "in-flight deadline of B"
_int "$dC" "in-flight deadline of C"

t1=$(now_ms)
printf 'touch A +16000 pa2\nextend B +16000 pb2\ncancel C\n' | produce
t2=$(now_ms)
[[ $(rcli HLEN "$NS:f:0") != 0 ]] ||
    fail "machine too slow: the resets landed $((t2 - seen)) ms after the claim was seen, when its 10 s dispatch had completed"
newA=$(id_score A)
newB=$(id_score B)
assert_ge "$newA" $((t1 + 16000)) "A's new deadline"
assert_le "$newA" $((t2 + 16000)) "A's new deadline"
assert_ge "$newB" $((t1 + 16000)) "B's new deadline"
assert_le "$newB" $((t2 + 16000)) "B's new deadline"
assert_eq "$(id_score C)" "" "C's score after cancel"

# the slow dispatch completes
wait_until 20000 '[[ $(rcli HLEN "$NS:f:0") == 0 ]]' || fail "in-flight IDs not acknowledged within 20 s"
kafka_ctl "rtt 1 0"
assert_eq "$(id_score A)" "$newA" "A after its old deadline was delivered"
assert_eq "$(id_score B)" "$newB" "B after its old deadline was delivered"
assert_eq "$(id_payload A)" pa2 "A's payload"
assert_eq "$(id_payload B)" pb2 "B's payload"
assert_eq "$(id_score C)" "" "C after its dispatch completed"
! id_has_payload C || fail "C's payload is still stored after cancel"

# the new deadlines fire; C does not fire again
events_wait_ids events.json 4 8000 # warm, A, B, C
wait_until 25000 '(($(jq -c "select(.id == \"A\" or .id == \"B\")" events.json | wc -l) >= 4))' ||
    fail "A and B did not fire with their new deadlines: $(jq -c 'select(.id != "warm")' events.json)"
ns_wait_empty 3000
sleep 0.3 # let a wrong extra event for C show
events_follow_stop

got() { jq -r --arg id "$1" 'select(.id == $id) | .deadline_ms' events.json | tr '\n' ' '; }
assert_eq "$(got A)" "$dA $newA " "deadlines A fired with"
assert_eq "$(got B)" "$dB $newB " "deadlines B fired with"
assert_eq "$(got C)" "$dC " "deadlines C fired with"
assert_eq "$(jq -r 'select(.id == "A" and .deadline_ms == '"$newA"') | .payload' events.json)" pa2 "A's second payload"
assert_never_early events.json
