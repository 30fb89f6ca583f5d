#!/usr/bin/env bash
# 0345-start-before-redis: programs started while their (plain) Redis is
# down wait for it, up to redis.retry_timeout_ms, as once running: a node
# not up yet is no refusal.
#
# Redis (AOF, so the layout outlives the stop) is stopped; then a stdin
# producer with 2000 touches, the Kafka ingress, a scanner for each shard
# and lapse-scale status start. Once each says it waits for Redis, it
# starts again on the same port. Checked: the producer exits
# 0 with every line applied, status exits 0, a command message through
# the ingress is applied, and every ID fires, once.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
redis_start main --appendonly yes --appendfsync always
kafka_start "$IN"
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-start\"; properties = ( $INGRESS_PROPS ); };"
scale init 2 >/dev/null || fail "init: exit status $?"
events_follow events.json
seq -f 'p-%04g' 1 2000 | awk '{ printf "touch %s +%d\n", $1, 1500 + NR % 300 }' >lines.txt

redis_stop main
SPAWN_STDIN=$T/lines.txt spawn producer "$LAPSE_BIN/lapse-producer" -c "$CONF"
ingress_start
scanner_start 0
scanner_start 1
scale status >status.txt 2>status.err &
status_pid=$!
# (each says why it waits)
for n in producer "$INGRESS" scanner-0 scanner-1; do
    wait_until 10000 "grep -q 'waiting for Redis' '$T/$n.log'" ||
        fail "$n did not say it waits for Redis within 10 s: $(tail -n 2 "$T/$n.log")"
done
wait_until 10000 "grep -q 'waiting for Redis' status.err" ||
    fail "status did not say it waits for Redis within 10 s: $(cat status.err)"
for n in producer "$INGRESS" scanner-0 scanner-1; do
    proc_alive "$n" || fail "$n exited while Redis was down: $(tail -n 2 "$T/$n.log")"
done
redis_restart main

wait_until 30000 '! proc_alive producer' || fail "the producer did not finish within 30 s of Redis's return"
proc_stop producer 1
assert_eq "$PROC_RC" 0 "the producer's exit status ($(tail -n 2 "$T/producer.log"))"
rc=0
wait "$status_pid" || rc=$?
assert_eq "$rc" 0 "lapse-scale status's exit status ($(head -c 300 status.err))"
ingress_wait_assigned
printf 'k-1\t{"op":"touch","id":"k-1","in_ms":300}\n' | kafka_put "$IN"

events_wait_ids events.json 2001 30000
# a marker due after every other deadline: once it fired, the scanners
# have claimed past them all, so a second fire of any would have shown
echo "touch end-marker +300" | produce 2>marker.err || fail "the marker: exit status $?"
events_wait_ids events.json 2002 10000
scanner_stop
proc_stop "$INGRESS" 10
assert_eq "$PROC_RC" 0 "the ingress's exit status after SIGTERM"
events_follow_stop
assert_once events.json
assert_never_early events.json
