#!/usr/bin/env bash
# 0079-waiting-for-second-node: 0078 for a node other than the first. With
# two nodes in the config, the first answering and the second on a port
# nothing listens on, the stdin producer and the Kafka ingress start (a
# node that is down fails only its own writes: 0617) and say at once which
# line of the config names the second node, how long its writes will wait
# and why; a scanner of a shard on that node names its line too (it waits
# on for it, as after a failover).
# Catches: a start that names only the first node, so that the second
# one's writes wait out their window in silence and then report "has not
# answered" with no line of the config.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
kafka_start "$IN"
redis_start main
# the second node answers for init (which refuses a node down: 0082), then
# stops: its port is then one nothing listens on
redis_start second
FREE_PORT=$(redis_port second)
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-wait2\"; };"
# a node a line, so that the second one's line is its own
sed -i "s|^redis = .*|redis = { retry_timeout_ms = 12000; nodes = (\\n  { host = \"127.0.0.1\"; port = $(redis_port main); },\\n  { host = \"127.0.0.1\"; port = $FREE_PORT; } ); };|" "$CONF"
line=$(grep -n "port = $FREE_PORT;" "$CONF" | cut -d: -f1)
[[ -n $line ]] || fail "the config's second node: $(cat "$CONF")"

# (initialised: the programs start, shard 1 on the second node)
scale init 2 >/dev/null || fail "init: exit status $?"
redis_stop second
SPAWN_WATCH=0 spawn producer "$LAPSE_BIN/lapse-producer" -c "$CONF" # (no input: it exits 0)
ingress_start
names=(producer "$INGRESS")

where="\\(${CONF//./\\.}:$line\\)"
why="redis 127\\.0\\.0\\.1:$FREE_PORT: .*refused"
for n in "${names[@]}"; do
    wait_until 5000 "grep -Eq 'waiting for Redis $where up to 12 s \\(redis\\.retry_timeout_ms\\): $why; its writes wait for it, then their lines are reported failed' '$T/$n.log'" ||
        fail "$n's first line does not name the second node and how long: $(head -c 400 "$T/$n.log")"
done
scanner_start 1
wait_until 5000 "grep -Eq 'shard 1: its node $where does not answer yet, waiting for it: $why' '$T/$SCANNER.log'" ||
    fail "the scanner of shard 1 does not name its node's line: $(head -c 400 "$T/$SCANNER.log")"
