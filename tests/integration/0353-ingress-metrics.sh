#!/usr/bin/env bash
# 0353-ingress-metrics: lapse-producer --from-kafka serves what it did on
# ingress.metrics_port.
#
#  - /healthz 200 and /readyz 200 once it consumes;
#  - after 13 messages (3 commands, 1 command without an ID, 6 signals of
#    which 2 repeat an ID within producer.slack_ms, 1 signal no rule
#    matches, 1 whose matched key is a bad ID, 1 more command):
#    messages_total 13, commands_applied_total 4, signals_extended_total 6,
#    absorbed_total >= 1, rejected_total by reason bad_command 1, no_rule
#    1, bad_signal 1 (the others 0), dead_lettered_total 3 (a copy of each
#    message not understood, acknowledged by the dead-letter topic),
#    redis_up 1, batch_apply_seconds_count >= 1, and consumer_lag
#    {topic,partition} present for every partition and 0 once committed;
#  - the text passes `promtool check metrics`;
#  - Redis stopped: /readyz 503 naming Redis, redis_up 0, /healthz 200;
#    Redis back: /readyz 200, redis_up 1.
#
# Catches: a counter updated in the wrong place (a rejected message counted
# as applied, absorbed extends lost), a reason label missing, a lag that
# never falls to 0 after the commit, probes that do not follow Redis.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
DLQ=lapse.dlq
redis_start main --appendonly yes # (args: redis_restart replays them)
kafka_start
kafka_ctl "topic $IN 2"
kafka_ctl "topic $DLQ 1"
free_port >/dev/null
mp=$FREE_PORT
write_config "$CONF" "producer = { slack_ms = 60000; };
ingress = { topic = \"$IN\"; group = \"g-m\"; dead_letter_topic = \"$DLQ\";
  metrics_port = $mp; properties = ( $INGRESS_PROPS );
  rules = ( { id_prefix = \"dev-\"; timeout_ms = 600000; } ); };"
scale init 4 >/dev/null
ingress_start
url=http://127.0.0.1:$mp
code() { curl -s -o "${2:-/dev/null}" -w '%{http_code}' -m 2 "$url$1" || true; }
wait_until 5000 '[[ $(code /healthz) == 200 ]]' || fail "/healthz did not answer 200"
assert_eq "$(listen_addrs "$mp" | paste -sd' ')" 127.0.0.1 \
    "where the endpoint listens (ingress.metrics_bind's default: loopback only)"
wait_until 5000 '[[ $(code /readyz) == 200 ]]' || fail "/readyz: $(code /readyz r.txt) $(cat r.txt)"
ingress_wait_assigned

get() { curl -s -m 2 "$url/metrics" >"$1" || fail "GET /metrics failed"; }
val() { # FILE NAME [LABELS]: the sample lapse_ingress_NAME{ns="demo"LABELS}
    awk -v k="lapse_ingress_$2{ns=\"$NS\"${3:-}}" '$1 == k { print $2; exit }' "$1"
}
b=$(($(now_ms) + 3600000))
{
    printf 'c-1\t{"op":"touch","id":"c-1","at_ms":%d}\n' "$b"
    printf 'c-2\t{"op":"touch","id":"c-2","at_ms":%d}\n' "$b"
    printf 'c-3\t{"op":"extend","id":"c-3","in_ms":3600000}\n'
    printf 'c-4\t{"op":"touch","at_ms":%d}\n' "$b"      # no id: bad_command
    printf 'dev-1\tup\ndev-2\tup\ndev-3\tup\ndev-4\tup\n'
    printf 'other\tup\n'                                 # no_rule
    printf 'dev-\001x\tup\n'                             # bad_signal
} | kafka_put "$IN"
wait_until 10000 'get m.txt; [[ $(val m.txt messages_total) == 10 ]]' ||
    fail "messages_total $(val m.txt messages_total), want 10"
# the same IDs again, one batch later: within the slack, absorbed
printf 'dev-1\tup\ndev-2\tup\n' | kafka_put "$IN"
printf 'c-5\t{"op":"cancel","id":"c-5"}\n' | kafka_put "$IN"
wait_until 10000 'kafka_all_committed "$IN" g-m' || fail "not all committed: $(kafka_committed "$IN" g-m | tr '\n' ';')"
wait_until 5000 'get m.txt; [[ $(val m.txt messages_total) == 13 && $(val m.txt dead_lettered_total) == 3 ]]' || true
note "$(grep -E '^lapse_ingress_[a-z_]+(_total)?\{' m.txt | grep -v _bucket | tr '\n' ' ')"
assert_eq "$(val m.txt messages_total)" 13 "messages_total"
assert_eq "$(val m.txt commands_applied_total)" 4 "commands_applied_total"
assert_eq "$(val m.txt signals_extended_total)" 6 "signals_extended_total"
assert_ge "$(val m.txt absorbed_total)" 1 "absorbed_total (dev-1, dev-2 again within slack_ms)"
assert_eq "$(val m.txt rejected_total ',reason="bad_command"')" 1 "rejected_total{reason=bad_command}"
assert_eq "$(val m.txt rejected_total ',reason="no_rule"')" 1 "rejected_total{reason=no_rule}"
assert_eq "$(val m.txt rejected_total ',reason="bad_signal"')" 1 "rejected_total{reason=bad_signal}"
assert_eq "$(val m.txt rejected_total ',reason="invalid"')" 0 "rejected_total{reason=invalid}"
assert_eq "$(val m.txt rejected_total ',reason="redis_refused"')" 0 "rejected_total{reason=redis_refused}"
assert_eq "$(val m.txt dead_lettered_total)" 3 "dead_lettered_total"
assert_eq "$(val m.txt redis_up)" 1 "redis_up"
assert_eq "$(val m.txt redis_errors_total)" 0 "redis_errors_total"
assert_ge "$(val m.txt batch_apply_seconds_count)" 1 "batch_apply_seconds_count"
assert_eq "$(val m.txt batch_apply_seconds_bucket ',le="+Inf"')" "$(val m.txt batch_apply_seconds_count)" "+Inf bucket = count"
# the lag comes with librdkafka's statistics, once a second
lag_zero() { get m.txt; [[ -n $(val m.txt consumer_lag ",topic=\"$IN\",partition=\"0\"") ]] &&
    [[ -n $(val m.txt consumer_lag ",topic=\"$IN\",partition=\"1\"") ]] &&
    ! grep -E '^lapse_ingress_consumer_lag\{' m.txt | grep -qv ' 0$'; }
wait_until 5000 lag_zero || fail "consumer_lag after the commit: $(grep '^lapse_ingress_consumer_lag' m.txt | tr '\n' ' ')"
promtool check metrics <m.txt >promtool.txt 2>&1 || fail "promtool check metrics: $(head -c 600 promtool.txt)"

# Redis away and back: the probe sees it while no messages arrive
redis_stop main
wait_until 5000 '[[ $(code /readyz r.txt) == 503 ]]' || fail "/readyz with Redis down: $(code /readyz)"
note "/readyz with Redis down: $(cat r.txt)"
assert_match "$(cat r.txt)" 'Redis' "/readyz reason"
assert_eq "$(code /healthz)" 200 "/healthz with Redis down"
get m.txt
assert_eq "$(val m.txt redis_up)" 0 "redis_up with Redis down"
redis_restart main
wait_until 8000 '[[ $(code /readyz) == 200 ]]' || fail "/readyz after Redis came back: $(code /readyz r.txt) $(cat r.txt)"
get m.txt
assert_eq "$(val m.txt redis_up)" 1 "redis_up after Redis came back"
assert_ge "$(val m.txt redis_reconnects_total)" 1 "redis_reconnects_total"
ingress_stop
