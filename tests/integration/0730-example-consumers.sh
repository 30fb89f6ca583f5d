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
# Both consumers by the two lines docs/protocol.md shows ("Consuming
# events"), taken from there and run one after the other as written, with
# the checkout as $lapse and lapse-kafka-dev as $kafka (the README's tour
# sets both, as the doc says): each in a group of its own, with --idle-ms,
# exits 0 and prints exactly ex-a, ex-d (since its second fire) and ex-e,
# the C one as "id<TAB>since_ms" lines, sorted, the Python one with --json
# (with deadline_ms); each group committed every partition to its end.
# (The second of the pair used to print [] in the first's group, and never
# stopped without --idle-ms.)
# Then each again in a new group, stopped by SIGTERM once it committed
# everything: exit 0 and, with --json, the same set with deadline_ms.
. "$(dirname "$0")/../lib.sh"

san=
if [[ $LAPSE_BIN == */build/*/bin ]]; then
    san=${LAPSE_BIN%/bin}
    san=${san##*/}
fi
C=$LAPSE_ROOT/build/${san:-plain}/examples/offline
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

# the documented pair, as written (a sanitized build's examples for the plain ones)
mapfile -t doc < <(awk '/^### Consuming events/ { sec = 1; next } sec && /^#/ { exit }
    sec && /^```sh$/ { blk = 1; next } blk && /^```$/ { exit } blk' "$LAPSE_ROOT/docs/protocol.md")
assert_eq "${#doc[@]}" 2 "command lines in docs/protocol.md's \"Consuming events\""
assert_match "${doc[0]}" '^"\$lapse"/build/plain/examples/offline .*--idle-ms [0-9]+' "the documented C consumer"
assert_match "${doc[1]}" '^"\$lapse"/examples/offline\.py .*--idle-ms [0-9]+ --json$' "the documented Python consumer"
group() { grep -oE -- '-g [^ ]+' <<<"$1" | cut -c4-; }
cg=$(group "${doc[0]}") pyg=$(group "${doc[1]}")
[[ -n $cg && -n $pyg && $cg != "$pyg" ]] || fail "the documented consumers do not each name a group of their own: ${doc[*]}"
grep -q ' -t lapse\.timeouts ' <<<"${doc[0]} ${doc[1]} " && [[ $TOPIC == lapse.timeouts ]] ||
    fail "the documented consumers do not read lapse.timeouts, this test's topic"
# (the doc says the README's tour sets both)
grep -qE '^lapse=\$PWD;' "$LAPSE_ROOT/README.md" && grep -qF 'kafka=$(head -1 kafka.addr)' "$LAPSE_ROOT/README.md" ||
    fail "the README's tour does not set \$lapse and \$kafka, which docs/protocol.md's consumers use"
run_doc() { # LINE OUT: the documented line, with the checkout as $lapse and the test's Kafka as $kafka
    local line=$1
    [[ -z $san ]] || line=${line//build\/plain\//build/$san/}
    (lapse=$LAPSE_ROOT kafka=$KAFKA_BROKERS && cd "$T" && eval "timeout 60 $line") >"$2" 2>"$2.err"
}
run_doc "${doc[0]}" c.txt || fail "the documented examples/offline: exit status $? ($(tail -n 1 c.txt.err))"
run_doc "${doc[1]}" py.json || fail "the documented examples/offline.py: exit status $? ($(tail -n 1 py.json.err))"
diff want.txt c.txt >c.diff || fail "examples/offline's set differs: $(tr '\n' ' ' <c.diff)"
jq -e -n --slurpfile a want.json --slurpfile b py.json '$a[0] == $b[0]' >/dev/null ||
    fail "examples/offline.py's set differs: got $(cat py.json), want $(cat want.json)"
assert_file_match c.txt.err 'offset [0-9]+: not an event of lapse, skipped' "offline: the message that is not JSON"
assert_file_match py.json.err 'offset [0-9]+: not an event of lapse, skipped' "offline.py: the message that is not JSON"
kafka_all_committed "$TOPIC" "$cg" || fail "offline did not commit everything: $(kafka_committed "$TOPIC" "$cg" | tr '\n' ' ')"
kafka_all_committed "$TOPIC" "$pyg" || fail "offline.py did not commit everything: $(kafka_committed "$TOPIC" "$pyg" | tr '\n' ' ')"

# SIGTERM: each in a new group, once it committed everything
X=(-X fetch.wait.max.ms=10 -X session.timeout.ms=4000 -X heartbeat.interval.ms=300)
SPAWN_OUT=$T/c-term.json spawn c-term "$C" -b "$KAFKA_BROKERS" -t "$TOPIC" -g c-term --json "${X[@]}"
c=$SPAWNED
SPAWN_OUT=$T/py-term.json spawn py-term /usr/bin/python3 "$PY" -b "$KAFKA_BROKERS" -t "$TOPIC" -g py-term --json "${X[@]}"
py=$SPAWNED
wait_until 30000 'kafka_all_committed "$TOPIC" c-term && kafka_all_committed "$TOPIC" py-term' ||
    fail "the SIGTERM runs did not commit everything within 30 s"
proc_stop "$c" 10
assert_eq "$PROC_RC" 0 "offline's exit status on SIGTERM"
proc_stop "$py" 10
assert_eq "$PROC_RC" 0 "offline.py's exit status on SIGTERM"
for f in c-term.json py-term.json; do
    jq -e -n --slurpfile a want.json --slurpfile b "$f" '$a[0] == $b[0]' >/dev/null ||
        fail "$f differs: got $(cat "$f"), want $(cat want.json)"
done
scanner_stop
