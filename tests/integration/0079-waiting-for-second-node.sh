#!/usr/bin/env bash
# 0079-waiting-for-second-node: 0078 for a node other than the first. With
# two nodes in the config, the first answering and the second on a port
# nothing listens on, the stdin producer and the Kafka ingress say at once
# how long they will wait and which line of the config names the second
# node, again about every 10 s with the time left, and exit 1 once
# redis.retry_timeout_ms passed. A scanner of a shard on that node names
# its line at once too (it waits on for it, as after a failover).
# Catches: a start that waits only for the first node, so that the second
# one's writes wait out their window in silence and then report "has not
# answered" with no time said up front and no line of the config.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
kafka_start "$IN"
redis_start main
free_port >/dev/null
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-wait2\"; };"
# a node a line, so that the second one's line is its own
sed -i "s|^redis = .*|redis = { retry_timeout_ms = 12000; nodes = (\\n  { host = \"127.0.0.1\"; port = $(redis_port main); },\\n  { host = \"127.0.0.1\"; port = $FREE_PORT; } ); };|" "$CONF"
line=$(grep -n "port = $FREE_PORT;" "$CONF" | cut -d: -f1)
[[ -n $line ]] || fail "the config's second node: $(cat "$CONF")"

# (initialised, so that a producer that did not wait would run on)
scale init 2 >/dev/null 2>&1 || true
spawn producer "$LAPSE_BIN/lapse-producer" -c "$CONF"
ingress_start
names=(producer "$INGRESS")

where="\\(${CONF//./\\.}:$line\\)"
why="redis 127\\.0\\.0\\.1:$FREE_PORT: .*refused"
for n in "${names[@]}"; do
    wait_until 5000 "grep -Eq 'waiting for Redis $where up to 12 s \\(redis\\.retry_timeout_ms\\): $why' '$T/$n.log'" ||
        fail "$n's first line does not name the second node and how long: $(head -c 400 "$T/$n.log")"
done
for n in "${names[@]}"; do
    wait_until 13000 "grep -Eq 'still waiting for Redis $where, [0-9]+ s left: $why' '$T/$n.log' || ! proc_alive $n" ||
        fail "$n: no second line within 13 s: $(head -c 600 "$T/$n.log")"
done
scanner_start 1
wait_until 5000 "grep -Eq 'shard 1: its node \\(${CONF//./\\.}:$line\\) does not answer yet, waiting for it: $why' '$T/$SCANNER.log'" ||
    fail "the scanner of shard 1 does not name its node's line: $(head -c 400 "$T/$SCANNER.log")"
for n in "${names[@]}"; do
    wait_until 10000 "! proc_alive $n" || fail "$n still waits 10 s after redis.retry_timeout_ms"
    proc_stop "$n" 1
    assert_eq "$PROC_RC" 1 "$n's exit status"
done
