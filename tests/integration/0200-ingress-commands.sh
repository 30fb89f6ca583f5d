#!/usr/bin/env bash
# 0200-ingress-commands: lapse-producer --from-kafka applies JSON command
# messages exactly as the line protocol would: touch (in_ms), extend (at_ms,
# never earlier), repeat, cancel, payloads verbatim, unknown fields ignored,
# in the order of their partition. A lone message is applied within a
# second of being produced (batching never holds it back), and a touch with
# a short in_ms fires through the scanner as an ordinary event. What is
# applied gets committed; after SIGTERM (exit 0) a restarted ingress of the
# same group applies only what is new. Without ingress.topic, --from-kafka
# stops before connecting, naming the key.
. "$(dirname "$0")/../lib.sh"

IN=lapse.in
redis_start main
kafka_start "$IN"

# --from-kafka needs ingress.topic and ingress.group
write_config
rc=0
timeout 10 "$LAPSE_BIN/lapse-producer" -c "$CONF" --from-kafka 2>nocfg.err || rc=$?
assert_eq "$rc" 2 "exit status without ingress.topic"
assert_file_match nocfg.err "^$CONF: ingress\.topic: missing \(required by --from-kafka\)$"

write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-cmd\"; properties = ( $INGRESS_PROPS ); };"
scale init 4 >/dev/null
ingress_start
ingress_wait_assigned

b=$(($(now_ms) + 3600000))
t0=$(now_ms)
# key = id, so one ID's commands stay in order on one partition
kafka_put "$IN" <<INPUT
t-1	{"op":"touch","id":"t-1","in_ms":600000}
t-2	{"op":"touch","id":"t-2","in_ms":600000,"payload":"{\"k\": [1, 2]} sp  aces é"}
e-1	{"op":"extend","id":"e-1","at_ms":$b}
e-1	{"op":"extend","id":"e-1","at_ms":$((b - 5000)),"payload":"earlier: ignored"}
e-1	{"op":"extend","id":"e-1","at_ms":$((b + 5000))}
r-1	{"op":"repeat","id":"r-1","at_ms":$b,"period_ms":60000}
c-1	{"op":"touch","id":"c-1","in_ms":600000,"payload":"gone"}
c-1	{"op":"cancel","id":"c-1"}
u-1	{"v":2,"trace":{"span":"x"},"op":"touch","in_ms":600000,"id":"u-1","at_ms":null}
	{"op":"touch","id":"nokey-1","at_ms":$b}
INPUT
wait_until 5000 '[[ $(ns_count) == 6 && -z $(id_score c-1) ]]' ||
    fail "commands not applied within 5 s: $(ns_dump | tr '\n' ';')"
t1=$(now_ms)

s=$(id_score t-1)
assert_ge "$s" $((t0 + 600000)) "t-1 deadline (in_ms from when it was applied)"
assert_le "$s" $((t1 + 600000)) "t-1 deadline"
assert_eq "$(id_payload t-2)" '{"k": [1, 2]} sp  aces é' "t-2 payload"
! id_has_payload t-1 || fail "t-1 has a payload though none was given"
assert_eq "$(id_score e-1)" $((b + 5000)) "e-1 (extend: the later deadline wins, order kept)"
! id_has_payload e-1 || fail "e-1 kept the payload of an extend that did not move it"
assert_eq "$(id_score r-1)" "$b" "r-1 first fire"
assert_eq "$(id_score nokey-1)" "$b" "a command without a key"
[[ -n $(id_score u-1) ]] || fail "u-1 (unknown fields) not applied"
! id_has_payload c-1 || fail "c-1's payload survived its cancel"

# everything applied is committed (asynchronously: wait a little)
wait_until 5000 'kafka_all_committed "$IN" g-cmd' ||
    fail "offsets not committed after apply: $(kafka_committed "$IN" g-cmd | tr '\n' ';')"

# latency: one lone message, applied within a second of Kafka having it
# (kafka_put returns once the broker acknowledged it)
printf 'lone\t{"op":"touch","id":"lone","in_ms":600000}\n' | kafka_put "$IN"
start=$(local_ms)
wait_until 3000 '[[ -n $(id_score lone) ]]' || fail "a lone message was not applied within 3 s"
took=$(($(local_ms) - start))
note "lone message applied $took ms after Kafka acknowledged it"
assert_le "$took" 1000 "ms from acknowledged to applied for a lone message"

# end to end: a command fires as an ordinary event
scanners_start 4
printf 'fire-1\t{"op":"touch","id":"fire-1","in_ms":200,"payload":"via kafka"}\n' | kafka_put "$IN"
events_read 1 10000 >events.json || fail "the event for fire-1 did not arrive"
assert_eq "$(jq -r .id events.json)" fire-1 "event id"
assert_eq "$(jq -r .payload events.json)" "via kafka" "event payload"
scanner_stop

# SIGTERM: exit 0, everything committed, the counters logged
ingress_stop
assert_file_match "$T/$INGRESS.log" 'ingress: 12 messages: 12 commands, 0 signals, 0 not understood'
kafka_all_committed "$IN" g-cmd ||
    fail "not all committed after SIGTERM: $(kafka_committed "$IN" g-cmd | tr '\n' ';')"

# a restart of the same group reads only what is new: t-1, deleted behind
# its back, would come back if the old messages were applied again
shard_zrem "$(id_shard t-1)" t-1 >/dev/null
ingress_start
ingress_wait_assigned
printf 'after\t{"op":"touch","id":"after","in_ms":600000}\n' | kafka_put "$IN"
wait_until 5000 '[[ -n $(id_score after) ]]' || fail "the restarted ingress did not apply a new message"
ingress_stop
assert_file_match "$T/$INGRESS.log" 'ingress: 1 messages: 1 commands'
[[ -z $(id_score t-1) ]] || fail "the restarted ingress applied committed messages again"
