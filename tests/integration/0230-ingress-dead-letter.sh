#!/usr/bin/env bash
# 0230-ingress-dead-letter: messages the ingress cannot understand (not
# JSON, binary, a JSON array, an empty value, wrong-typed or conflicting
# fields, an oversized id, an unknown op, a signal no rule takes or with a
# bad timestamp) are each logged as "ingress: TOPIC/PARTITION/OFFSET:
# reason", counted, and copied to the dead-letter topic with key and value
# byte for byte and the reason in headers; the good messages around them
# are applied and everything is committed. Then a dead-letter copy that
# Kafka refuses keeps its message uncommitted: the batch is read again until
# the copy is acknowledged, and only then committed.
. "$(dirname "$0")/../lib.sh"

IN=lapse.dl
DLQ=lapse.dl.dead
redis_start main
kafka_start
kafka_ctl "topic $IN 1" # one partition: offset = line number - 1
kafka_ctl "topic $DLQ 1"
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-dl\"; dead_letter_topic = \"$DLQ\";
  properties = ( $INGRESS_PROPS );
  rules = ( { id_field = \"device\"; time = \"field\"; timeout_ms = 60000; } ); };"
scale init 4 >/dev/null

b=$(($(now_ms) + 3600000))
long=$(printf 'x%.0s' {1..600})
declare -A why # offset -> the exact reason, or a prefix ending in '*'
: >in.tsv
n=0
good() { printf '%s\n' "$1" >>in.tsv; n=$((n + 1)); }
bad() { printf '%s\n' "$2" >>in.tsv; why[$n]=$1; n=$((n + 1)); }
good "good-1	{\"op\":\"touch\",\"id\":\"good-1\",\"at_ms\":$b}"
bad 'no watchdog rule matches (rules[0]: value is not a JSON object); value: invalid JSON: *' \
    'hello world'
good "	{\"device\":\"sensor-1\",\"ts\":$b}"
bad 'field "in_ms": expected a non-negative integer' \
    'k3	{"op":"touch","id":"x","in_ms":"5"}'
bad 'field "id": must be 1..512 bytes (got 600)' \
    "k4	{\"op\":\"touch\",\"id\":\"$long\",\"in_ms\":5}"
bad 'field "op": unknown operation "frob" (expected touch, extend, repeat, cancel or watch)' \
    'k5	{"op":"frob","id":"y"}'
good 'good-2	{"op":"extend","id":"good-2","in_ms":600000,"payload":"p2"}'
bad 'no watchdog rule matches (rules[0]: value is not a JSON object); value: a JSON array, not an object' \
    'k7	[1,2,3]'
bad 'no watchdog rule matches (rules[0]: value is not a JSON object); value: no value' \
    'empty	'
bad 'no watchdog rule matches (rules[0]: no field "device")' \
    'k9	{"x":1}'
bad 'rules[0]: field "ts": expected a non-negative integer (unix ms)' \
    "k10	{\"device\":\"sensor-2\",\"ts\":-5}"
bad 'fields "in_ms" and "at_ms": give only one' \
    'k11	{"op":"touch","id":"z","in_ms":1,"at_ms":2}'
bad 'no watchdog rule matches (rules[0]: value is not a JSON object); value: invalid JSON: *' \
    "$(printf 'bin\t\377\376\001')"
good "	{\"device\":\"sensor-3\",\"ts\":$b}"
kafka_put "$IN" <in.tsv

ingress_start
ingress_wait_assigned
wait_until 8000 '[[ -n $(id_score sensor-3) ]]' || fail "the last good message was not applied"
assert_eq "$(id_score good-1)" "$b" "good-1"
assert_eq "$(id_score sensor-1)" $((b + 60000)) "sensor-1"
assert_eq "$(id_payload good-2)" p2 "good-2's payload"
assert_eq "$(id_score sensor-3)" $((b + 60000)) "sensor-3"
assert_eq "$(ns_count)" 4 "IDs (only the good messages')"
wait_until 5000 'kafka_all_committed "$IN" g-dl' || fail "not committed: $(kafka_committed "$IN" g-dl)"

# each bad one logged where it was, with its reason
log=$T/$INGRESS.log
for off in "${!why[@]}"; do
    w=${why[$off]}
    grep -qF -- "ingress: $IN/0/$off: ${w%\*}" "$log" || fail "offset $off not logged with '${w%\*}'"
done

# each copied, byte for byte, with the reason and where it came from
kafka_get "$DLQ" ${#why[@]} 15000 >dlq.json || fail "only $(_lines dlq.json) of ${#why[@]} dead-letter copies"
for off in "${!why[@]}"; do
    line=$(sed -n "$((off + 1))p" in.tsv)
    key=null value=$line # jq -r prints a null key as "null"
    [[ $line != *$'\t'* ]] || key=${line%%$'\t'*} value=${line#*$'\t'}
    copy=$(jq -c --arg o "$off" 'select(.headers["lapse.offset"] == $o)' dlq.json)
    [[ -n $copy ]] || fail "no dead-letter copy of offset $off"
    w=${why[$off]}
    jq -e --arg w "${w%\*}" --arg p "${w: -1}" --arg t "$IN" \
        '.headers["lapse.topic"] == $t and .headers["lapse.partition"] == "0" and
         (if $p == "*" then (.headers["lapse.error"] | startswith($w)) else .headers["lapse.error"] == $w end)' \
        <<<"$copy" >/dev/null || fail "offset $off: copy headers $(jq -c .headers <<<"$copy"), want error '$w'"
    assert_eq "$(jq -r .key <<<"$copy")" "$key" "key of the copy of offset $off"
    if [[ $key == bin ]]; then
        assert_eq "$(jq -r .value_hex <<<"$copy")" fffe01 "binary value of the copy"
    else
        [[ $(jq -r .value <<<"$copy") == "$value" ]] || fail "value of the copy of offset $off differs"
    fi
done
ingress_stop
assert_file_match "$log" "ingress: $n messages: 2 commands, 2 signals, 10 not understood \(10 dead-lettered\)"

# a copy Kafka refuses: its message is not committed until a copy is taken
printf 'again\tnot json\ngood-3\t{"op":"touch","id":"good-3","at_ms":%d}\n' "$b" | kafka_put "$IN"
kafka_ctl "error 0 10 2" # the next 2 produce requests fail (message too large)
ingress_start
ingress_wait_assigned
wait_until 8000 '[[ -n $(id_score good-3) ]]' || fail "good-3 not applied"
wait_until 8000 'kafka_all_committed "$IN" g-dl' || fail "not committed: $(kafka_committed "$IN" g-dl)"
assert_file_match "$T/$INGRESS.log" "not applied \(dead-letter topic $DLQ: .*\): not committed, reading them again"
kafka_get "$DLQ" $((${#why[@]} + 1)) 15000 >dlq2.json || fail "the copy of offset $n never reached $DLQ"
jq -e --arg o "$n" 'select(.headers["lapse.offset"] == $o) | .value == "not json"' dlq2.json >/dev/null ||
    fail "the copy of offset $n is wrong: $(tail -n 1 dlq2.json)"
ingress_stop
