#!/usr/bin/env bash
# 0075-redis-db: a node's `db` is where everything of the namespace lives.
# With db = 3: init, a producer, a scanner and lapse-scale get all work in
# database 3 (the layout, the shards, the payloads); database 0 stays empty,
# and the IDs fire. Catches a connection that forgets its SELECT (after a
# reconnect as well: the scanner's connection is killed half-way).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
write_config
sed -i 's|port = \([0-9]*\); } ); };|port = \1; db = 3; } ); };|' "$CONF"
grep -q 'db = 3;' "$CONF" || fail "could not set the node's db"
scale init 2 >/dev/null || fail "init: exit status $?"
scanners_start 2
events_follow events.json

t0=$(now_ms)
for i in 0 1 2 3 4; do echo "touch d$i @$((t0 + 300 + i * 50)) pd$i"; done | produce ||
    fail "producer: exit status $?"
events_wait_ids events.json 5 10000
echo "touch far +3600000 pf" | produce || fail "producer: exit status $?"
assert_eq "$(scale get far --json | jq -r '.payload')" pf "lapse-scale get in db 3"

# the scanners reconnect (their SELECT must come again), then fire more
rcli -n 3 CLIENT KILL TYPE normal >/dev/null
t1=$(now_ms)
for i in 5 6 7; do echo "touch d$i @$((t1 + 300 + i * 50))"; done | produce ||
    fail "producer after the kill: exit status $?"
events_wait_ids events.json 8 15000
events_follow_stop
assert_never_early events.json

assert_eq "$(rcli -n 0 DBSIZE)" 0 "keys in database 0"
assert_ge "$(rcli -n 3 --scan --pattern "$NS:*" | wc -l)" 3 "keys of $NS in database 3 (layout, shards, payload)"
assert_eq "$(rcli -n 3 HGET "$NS:layout" shards)" 2 "the layout in database 3"
