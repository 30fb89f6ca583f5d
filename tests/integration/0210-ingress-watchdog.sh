#!/usr/bin/env bash
# 0210-ingress-watchdog: raw signals become `extend` by the first matching
# rule of ingress.rules: the ID from a JSON field or from the message key,
# the time from a JSON field, the Kafka timestamp or the arrival, plus the
# rule's timeout. Out-of-order signals (older timestamps arriving later)
# never pull a deadline earlier; a rule whose time field is missing lets the
# next rule try; a binary value is fine for a key-and-arrival rule; a signal
# no rule matches, or one whose matched time field is malformed, is counted
# and logged with topic/partition/offset and changes nothing.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
redis_start main
kafka_start "$IN"
write_config "$CONF" "ingress = {
  topic = \"$IN\"; group = \"g-wd\"; properties = ( $INGRESS_PROPS );
  rules = (
    { id_field = \"device\"; id_prefix = \"sensor-\"; time = \"field\"; time_field = \"ts\"; timeout_ms = 60000; },
    { match_field = \"type\"; match_value = \"heartbeat\"; time = \"kafka\"; timeout_ms = 30000; },
    { id_prefix = \"gw-\"; timeout_ms = 5000; }
  );
};"
scale init 4 >/dev/null
ingress_start
ingress_wait_assigned

T0=$(($(now_ms) + 100000)) # signal timestamps: any unix ms will do
t0=$(now_ms)
{
    printf 'k\t{"device":"sensor-1","ts":%d}\n' $((T0 + 5000))
    printf 'k\t{"device":"sensor-1","ts":%d}\n' "$T0"           # older, later: ignored
    printf 'x\t{"device":"sensor-2","ts":%d,"type":"heartbeat"}\n' "$T0" # rules 0 and 1 match: 0 wins
    printf 'gw-1\t\001\377 binary\n'                              # any bytes: key + arrival
    printf 'other\t{"x":1}\n'                                     # no rule matches
    printf 'k\t{"device":"sensor-5","ts":"yesterday"}\n'          # rule 0 matches, bad time
    printf 'gw-\001x\tvalue\n'                                    # rule 2 matches, bad ID
} >a.in
kafka_put "$IN" <a.in
wait_until 5000 '[[ -n $(id_score gw-1) && $(id_score sensor-1) == $((T0 + 65000)) ]]' ||
    fail "signals not applied within 5 s: $(ns_dump | tr '\n' ';')"
t1=$(now_ms)

# Kafka timestamps: newer, then older, then newer again
K=$((T0 + 20000))
printf 'hb-1\t{"type":"heartbeat"}\nsensor-9\t{"device":"sensor-9","type":"heartbeat"}\n' |
    kafka_put "$IN" --timestamp "$K" # sensor-9 has no ts: rule 0 misses, rule 1 takes the key
wait_until 5000 '[[ $(id_score hb-1) == $((K + 30000)) ]]' || fail "hb-1 not applied: $(id_score hb-1)"
printf 'hb-1\t{"type":"heartbeat"}\n' | kafka_put "$IN" --timestamp $((K - 10000))
printf 'hb-1\t{"type":"heartbeat","seq":3}\nhb-2\t{"type":"heartbeat"}\n' |
    kafka_put "$IN" --timestamp $((K + 7000))
wait_until 5000 '[[ -n $(id_score hb-2) ]]' || fail "hb-2 not applied"

assert_eq "$(id_score sensor-1)" $((T0 + 65000)) "sensor-1: its newest ts + 60 s"
assert_eq "$(id_score sensor-2)" $((T0 + 60000)) "sensor-2: rule 0 (first match), not rule 1"
s=$(id_score gw-1)
assert_ge "$s" $((t0 + 5000)) "gw-1: arrival + 5 s"
assert_le "$s" $((t1 + 5000)) "gw-1: arrival + 5 s"
assert_eq "$(id_score sensor-9)" $((K + 30000)) "sensor-9: rule 1 (Kafka timestamp), key as ID"
assert_eq "$(id_score hb-1)" $((K + 37000)) "hb-1: the newest Kafka timestamp + 30 s"
assert_eq "$(id_score hb-2)" $((K + 37000)) "hb-2"
assert_eq "$(ns_count)" 6 "IDs in the namespace: $(ns_dump | cut -d' ' -f1 | tr '\n' ' ')"
! id_has_payload gw-1 || fail "a watchdog extend stored a payload"

# the bad ones: logged as topic/partition/offset: reason
log=$T/$INGRESS.log
assert_file_match "$log" "ingress: $IN/[0-3]/[0-9]+: no watchdog rule matches \(rules\[0\]: no field \"device\"; rules\[1\]: no field \"type\"; rules\[2\]: ID \"other\" lacks prefix \"gw-\"\)$"
assert_file_match "$log" "ingress: $IN/[0-3]/[0-9]+: rules\[0\]: field \"ts\": expected a non-negative integer \(unix ms\)$"
assert_file_match "$log" "ingress: $IN/[0-3]/[0-9]+: rules\[2\]: message key: ID contains control byte 0x01 at offset 3$"
wait_until 5000 'kafka_all_committed "$IN" g-wd' ||
    fail "not all committed: $(kafka_committed "$IN" g-wd | tr '\n' ';')"
ingress_stop
assert_file_match "$log" 'ingress: 12 messages: 0 commands, 9 signals, 3 not understood \(0 dead-lettered\)'
