#!/usr/bin/env bash
# 0040-cancel: of 50 IDs due in 1.5 s, 25 are cancelled before any scanner
# runs; exactly the other 25 arrive, and nothing else does until well past
# the deadline (1.5 s after it). Cancelled IDs lose their payloads too.
# Cancelling an unknown ID is accepted silently.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
write_config
scale init 2 >/dev/null

t0=$(now_ms)
for ((i = 0; i < 50; i++)); do printf 'touch c-%d +1500 payload-%d\n' "$i" "$i"; done | produce
t1=$(now_ms)
for ((i = 0; i < 50; i += 2)); do printf 'cancel c-%d\n' "$i"; done | produce

ids_state $(seq -f 'c-%g' 0 49) >state.txt
while read -r id s pl; do
    i=${id#c-}
    if ((i % 2 == 0)); then
        assert_eq "$s" - "score of cancelled $id"
        assert_eq "$pl" 0 "payload of cancelled $id stored"
    else
        assert_ge "$s" $((t0 + 1500)) "deadline of $id"
        assert_le "$s" $((t1 + 1500)) "deadline of $id"
        assert_eq "$pl" 1 "payload of $id stored"
    fi
done <state.txt
assert_eq "$(wc -l <state.txt)" 50 "IDs checked"

printf 'cancel never-touched\ncancel c-0\n' | produce 2>cancel.err ||
    fail "cancel of an unknown ID: exit status $? ($(cat cancel.err))"
! grep -q 'line [0-9]' cancel.err || fail "cancel of an unknown ID reported: $(cat cancel.err)"

scanners_start 2
# the 25 come (however slow the machine) ...
events_read 25 20000 >events.json || fail "only $(_lines events.json) of the 25 events arrived within 20 s"
# ... and a 26th never does: read until 1.5 s past the last deadline (at
# least 500 ms more, when the 25 came that late)
wait_ms=$((t1 + 1500 + 1500 - $(now_ms)))
((wait_ms >= 500)) || wait_ms=500
if events_read 26 "$wait_ms" >all.json; then
    fail "a 26th event arrived: $(jq -c . all.json | tail -n 3)"
fi
jq -r .id events.json | sort >got
for ((i = 1; i < 50; i += 2)); do echo "c-$i"; done | sort >want
diff want got >d.diff || { cat d.diff >&2; fail "the events are not exactly the 25 IDs not cancelled"; }
jq -s -e 'all(.[]; .payload == ("payload-" + (.id | ltrimstr("c-"))))' events.json >/dev/null ||
    fail "wrong payload in an event"
ns_wait_empty 3000
