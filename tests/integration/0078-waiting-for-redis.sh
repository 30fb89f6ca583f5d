#!/usr/bin/env bash
# 0078-waiting-for-redis: a program started while its first Redis node does
# not answer (here: a port nothing listens on) says at once how long it will
# wait and which line of the config names the node, then again about every
# 10 s with the time left, and exits 1 once redis.retry_timeout_ms passed.
# The same lines from the stdin producer, the Kafka ingress, a scanner and
# lapse-scale status.
# redis.retry_timeout_ms = 12000: the second line comes before the end.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
kafka_start "$IN"
free_port >/dev/null
REDIS_PORT=$FREE_PORT
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-wait\"; };"
sed -i 's/^redis = { nodes = \(.*\); };$/redis = { nodes = \1; retry_timeout_ms = 12000; };/' "$CONF"
line=$(grep -n '^redis = ' "$CONF" | cut -d: -f1)
assert_file_match "$CONF" 'retry_timeout_ms = 12000;' "the config's redis group"

spawn producer "$LAPSE_BIN/lapse-producer" -c "$CONF"
ingress_start
scanner_start 0
spawn scale "$LAPSE_BIN/lapse-scale" -c "$CONF" status
names=(producer "$INGRESS" "$SCANNER" scale)

where="\\(${CONF//./\\.}:$line\\)"
why="redis 127\\.0\\.0\\.1:$REDIS_PORT: .*refused"
for n in "${names[@]}"; do
    wait_until 5000 "grep -Eq 'waiting for Redis $where up to 12 s \\(redis\\.retry_timeout_ms\\): $why' '$T/$n.log'" ||
        fail "$n's first line does not say how long and which node: $(head -c 400 "$T/$n.log")"
done
for n in "${names[@]}"; do
    wait_until 13000 "grep -Eq 'still waiting for Redis $where, [0-9]+ s left: $why' '$T/$n.log' || ! proc_alive $n" ||
        fail "$n: no second line within 13 s: $(head -c 600 "$T/$n.log")"
    grep -Eq "still waiting for Redis $where, [1-3] s left: $why" "$T/$n.log" ||
        fail "$n did not say again, with 1..3 s left, before it gave up: $(head -c 600 "$T/$n.log")"
done
for n in "${names[@]}"; do
    wait_until 10000 "! proc_alive $n" || fail "$n still waits 10 s after redis.retry_timeout_ms"
    proc_stop "$n" 1
    assert_eq "$PROC_RC" 1 "$n's exit status"
    assert_eq "$(grep -c 'waiting for Redis' "$T/$n.log")" 2 "$n's lines about the wait"
done
