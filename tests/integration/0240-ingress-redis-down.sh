#!/usr/bin/env bash
# 0240-ingress-redis-down: while Redis is down the ingress keeps running and
# keeps retrying: the signals it reads stay uncommitted (a batch it could
# not apply is read again, with back-off), and once Redis is back every one
# of them is applied and committed. SIGTERM then ends it with status 0.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
redis_start main --appendonly yes --appendfsync always
kafka_start "$IN"
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-rd\"; properties = ( $INGRESS_PROPS );
  rules = ( { time = \"field\"; timeout_ms = 600000; } ); };"
# give up on Redis quickly, so an outage of a second or two fails batches
sed -i 's/^redis = { nodes = \(.*\); };$/redis = { nodes = \1; connect_timeout_ms = 100; command_timeout_ms = 300; retry_timeout_ms = 300; };/' "$CONF"
grep -q "retry_timeout_ms = 300" "$CONF" || fail "could not set redis.retry_timeout_ms"
scale init 4 >/dev/null
ingress_start
ingress_wait_assigned

b=$(($(now_ms) + 1000000))
printf 's-0\t{"ts":%d}\n' "$b" | kafka_put "$IN"
wait_until 5000 '[[ -n $(id_score s-0) ]]' || fail "s-0 not applied"
wait_until 5000 'kafka_all_committed "$IN" g-rd' || fail "s-0 not committed"
kafka_committed "$IN" g-rd | cut -d' ' -f1,2 >before

redis_stop main
for ((i = 1; i <= 50; i++)); do printf 's-%d\t{"ts":%d}\n' "$i" $((b + i)); done | kafka_put "$IN"
log=$T/$INGRESS.log
wait_until 5000 "grep -q 'not committed, reading them again' '$log'" ||
    fail "the ingress did not report a batch it could not apply"
sleep 1 # a few more rounds of retrying
proc_alive "$INGRESS" || fail "the ingress died while Redis was down"
kafka_committed "$IN" g-rd | cut -d' ' -f1,2 >during
diff before during >c.diff || { cat c.diff >&2; fail "offsets committed while Redis was down"; }

redis_restart main
wait_until 10000 '[[ $(ns_count) == 51 ]]' || fail "only $(ns_count) of 51 signals applied after Redis came back"
for ((i = 0; i <= 50; i++)); do
    assert_eq "$(id_score "s-$i")" $((b + i + 600000)) "deadline of s-$i"
done
wait_until 5000 'kafka_all_committed "$IN" g-rd' || fail "not committed after Redis came back"
ingress_stop
assert_file_match "$log" 'batches committed, [1-9][0-9]* read again$'
