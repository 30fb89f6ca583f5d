#!/usr/bin/env bash
# 0742-consumers-vs-offline: the example consumers' offline set, built from
# real timeout and recovered events, is what `lapse-scale offline` says.
#
# 12 IDs written with `watch` time out; 5 of them signal again (recovered
# events), one is cancelled while offline. examples/offline.c and
# examples/offline.py, each in its own group with --idle-ms, print their
# sets: the same IDs as `lapse-scale offline` (6), each with the deadline
# that fell due (--json), plus the cancelled one (a cancel sends no event:
# consumers cannot know), and both consumers committed every partition.
#
# Catches: recovered events a consumer cannot tell from timeouts (fields,
# type, key), a pair out of order, an offline list that disagrees with the
# events (a cancel that sent an event, a recovery that sent none).
. "$(dirname "$0")/../lib.sh"

if [[ $LAPSE_BIN == */build/*/bin ]]; then C=${LAPSE_BIN%/bin}/examples/offline; else C=$LAPSE_ROOT/build/plain/examples/offline; fi
PY=$LAPSE_ROOT/examples/offline.py
[[ -x $C ]] || fail "$C is not built (make)"
/usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null ||
    fail "python3-confluent-kafka is missing (scripts/install-deps)"

redis_start main
kafka_start
write_config
scale init 2 >/dev/null
events_follow events.json
scanners_start 2

for i in $(seq 1 12); do echo "watch wd-$i +$((100 + i * 10))"; done | produce 2>/dev/null || fail "producer: exit status $?"
wait_until 15000 '[[ $(scale_offline | wc -l) == 12 ]]' || fail "not 12 offline: $(scale_offline | wc -l)"
printf 'extend wd-%d +600000\n' 2 4 6 8 10 | produce 2>/dev/null || fail "producer: exit status $?"
echo "cancel wd-12" | produce 2>/dev/null
wait_until 15000 '(( $(jq -R -r "fromjson? | select(.type == \"recovered\") | .id" events.json | wc -l) == 5 ))' ||
    fail "recovered events: $(jq -R -r 'fromjson? | select(.type == "recovered") | .id' events.json | paste -sd,)"
scale offline --json | jq -c '.offline | map({id, deadline_ms}) | sort_by(.id)' >offline.json
assert_eq "$(jq -r 'map(.id) | join(",")' offline.json)" "wd-1,wd-11,wd-3,wd-5,wd-7,wd-9" "IDs offline"
# a cancel forgets an offline ID without an event: the consumers keep it
d12=$(jq -R -r 'fromjson? | select(.id == "wd-12") | .deadline_ms' events.json)
jq -c --argjson d "$d12" '. + [{id: "wd-12", deadline_ms: $d}] | sort_by(.id)' offline.json >want.json

X=(-X fetch.wait.max.ms=10 -X session.timeout.ms=4000 -X heartbeat.interval.ms=300)
timeout 60 "$C" -b "$KAFKA_BROKERS" -t "$TOPIC" -g c-g --idle-ms 2000 --json "${X[@]}" >c.json 2>c.err ||
    fail "examples/offline: exit status $? ($(tail -n 1 c.err))"
timeout 60 /usr/bin/python3 "$PY" -b "$KAFKA_BROKERS" -t "$TOPIC" -g py-g --idle-ms 2000 --json "${X[@]}" >py.json 2>py.err ||
    fail "examples/offline.py: exit status $? ($(tail -n 1 py.err))"
for f in c.json py.json; do
    jq -e -n --slurpfile a want.json --slurpfile b "$f" '$a[0] == ($b[0] | map({id, deadline_ms}) | sort_by(.id))' >/dev/null ||
        fail "$f differs from lapse-scale offline: got $(cat "$f"), want $(cat want.json)"
done
kafka_all_committed "$TOPIC" c-g || fail "offline did not commit everything"
kafka_all_committed "$TOPIC" py-g || fail "offline.py did not commit everything"
