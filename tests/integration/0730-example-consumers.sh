#!/usr/bin/env bash
# 0730-example-consumers: examples/offline.c and examples/offline.py, the
# consumers of the event topic that keep the set of IDs offline, against
# lapse-kafka-dev.
#
# Real timeout events, fired by a scanner: ex-a .. ex-e once each, and ex-d
# a second time (a newer deadline). Then, by hand (lapse does not send
# "recovered" events yet), with the same keys: a recovered for ex-b; two for
# ex-c and its timeout again after them (redeliveries); a recovered for
# ex-d's older deadline only (it must not clear the newer timeout); ex-e's
# timeout again; a recovered for ex-f, which never timed out; an event of a
# type neither knows; a message that is not JSON.
# Both consumers, each in its own group, with --idle-ms: the set printed is
# exactly ex-a, ex-d (since its second fire) and ex-e ("id<TAB>since_ms",
# sorted), status 0, and each group committed every partition to its end.
# Then each again in a new group, stopped by SIGTERM once it committed
# everything: exit 0 and, with --json, the same set with deadline_ms.
. "$(dirname "$0")/../lib.sh"

if [[ $LAPSE_BIN == */build/*/bin ]]; then C=${LAPSE_BIN%/bin}/examples/offline; else C=$LAPSE_ROOT/build/plain/examples/offline; fi
PY=$LAPSE_ROOT/examples/offline.py
[[ -x $C ]] || fail "$C is not built (make)"
/usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null ||
    fail "python3-confluent-kafka is missing (scripts/install-deps)"

redis_start main
kafka_start
write_config
scale init 1 >/dev/null
scanner_start 0

printf 'touch %s +100\n' ex-a ex-b ex-c ex-d ex-e | produce 2>/dev/null || fail "producer: exit status $?"
events_read 5 15000 >first.json || fail "not all 5 timeouts arrived within 15 s"
echo "touch ex-d +100" | produce 2>/dev/null || fail "producer: exit status $?"
events_read 6 15000 >events.json || fail "ex-d's second timeout did not arrive within 15 s"
assert_eq "$(jq -r -s 'map(.type) | unique | join(",")' events.json)" timeout "the scanner's events' type"

ev() { jq -c --arg id "$1" "[.[] | select(.id == \$id)] | sort_by(.deadline_ms) | .[${2:-0}]" -s events.json; }
recovered() { # ID [WHICH]: a recovered event for the ID's timeout WHICH (0: first)
    ev "$1" "${2:-0}" | jq -c '{type: "recovered", ns, id, deadline_ms, fired_ms,
        recovered_ms: (.fired_ms + 1500), down_ms: 1500, shard}'
}
{
    printf 'ex-b\t%s\n' "$(recovered ex-b)"
    printf 'ex-c\t%s\n' "$(recovered ex-c)"
    printf 'ex-c\t%s\n' "$(recovered ex-c)"
    printf 'ex-c\t%s\n' "$(ev ex-c)"
    printf 'ex-d\t%s\n' "$(recovered ex-d 0)"
    printf 'ex-e\t%s\n' "$(ev ex-e)"
    printf 'ex-f\t{"type":"recovered","ns":"demo","id":"ex-f","deadline_ms":1,"fired_ms":2,"recovered_ms":3,"down_ms":1,"shard":0}\n'
    printf 'ex-g\t{"type":"paused","ns":"demo","id":"ex-g","deadline_ms":1,"fired_ms":2,"shard":0}\n'
    printf 'ex-h\tnot json\n'
} >extra.tsv
kafka_put "$TOPIC" <extra.tsv

{
    printf 'ex-a\t%s\n' "$(ev ex-a | jq .fired_ms)"
    printf 'ex-d\t%s\n' "$(ev ex-d 1 | jq .fired_ms)"
    printf 'ex-e\t%s\n' "$(ev ex-e | jq .fired_ms)"
} >want.txt
jq -c -s '[.[] | select(.id == "ex-a" or .id == "ex-d" or .id == "ex-e")]
          | group_by(.id) | map(max_by(.deadline_ms) | {id, since_ms: .fired_ms, deadline_ms})' \
    events.json >want.json
note "expected offline: $(tr '\t\n' '= ' <want.txt)"

X=(-X fetch.wait.max.ms=10 -X session.timeout.ms=4000 -X heartbeat.interval.ms=300)
timeout 60 "$C" -b "$KAFKA_BROKERS" -t "$TOPIC" -g c-idle --idle-ms 2000 "${X[@]}" >c.txt 2>c.err ||
    fail "examples/offline: exit status $? ($(tail -n 1 c.err))"
timeout 60 /usr/bin/python3 "$PY" -b "$KAFKA_BROKERS" -t "$TOPIC" -g py-idle --idle-ms 2000 "${X[@]}" >py.txt 2>py.err ||
    fail "examples/offline.py: exit status $? ($(tail -n 1 py.err))"
diff want.txt c.txt >c.diff || fail "examples/offline's set differs: $(tr '\n' ' ' <c.diff)"
diff want.txt py.txt >py.diff || fail "examples/offline.py's set differs: $(tr '\n' ' ' <py.diff)"
assert_file_match c.err 'offset [0-9]+: not an event of lapse, skipped' "offline: the message that is not JSON"
assert_file_match py.err 'offset [0-9]+: not an event of lapse, skipped' "offline.py: the message that is not JSON"
kafka_all_committed "$TOPIC" c-idle || fail "offline did not commit everything: $(kafka_committed "$TOPIC" c-idle | tr '\n' ' ')"
kafka_all_committed "$TOPIC" py-idle || fail "offline.py did not commit everything: $(kafka_committed "$TOPIC" py-idle | tr '\n' ' ')"

# SIGTERM: each in a new group, once it committed everything
SPAWN_OUT=$T/c.json spawn c-term "$C" -b "$KAFKA_BROKERS" -t "$TOPIC" -g c-term --json "${X[@]}"
c=$SPAWNED
SPAWN_OUT=$T/py.json spawn py-term /usr/bin/python3 "$PY" -b "$KAFKA_BROKERS" -t "$TOPIC" -g py-term --json "${X[@]}"
py=$SPAWNED
wait_until 30000 'kafka_all_committed "$TOPIC" c-term && kafka_all_committed "$TOPIC" py-term' ||
    fail "the SIGTERM runs did not commit everything within 30 s"
proc_stop "$c" 10
assert_eq "$PROC_RC" 0 "offline's exit status on SIGTERM"
proc_stop "$py" 10
assert_eq "$PROC_RC" 0 "offline.py's exit status on SIGTERM"
for f in c.json py.json; do
    jq -e -n --slurpfile a want.json --slurpfile b "$f" '$a[0] == $b[0]' >/dev/null ||
        fail "$f differs: got $(cat "$f"), want $(cat want.json)"
done
scanner_stop
