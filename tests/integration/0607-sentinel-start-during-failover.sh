#!/usr/bin/env bash
# 0607-sentinel-start-during-failover: programs started while the sentinels
# still name a dead primary follow the failover instead of exiting
# (guarantee 7). An unreachable primary is no refusal: each program asks
# the sentinels again, with the back-off, for up to redis.retry_timeout_ms,
# as after a lost connection.
#
# One node "lapse-a": primary a, replicas b and c (after the failover the
# new primary keeps a replica, so WAIT can be satisfied), three sentinels
# (down after 2 s); redis.wait_replicas = 1. a dies (kill -9) and at once,
# while the sentinels still name it, a stdin producer with 3000 touches, a
# scanner for each shard and lapse-scale status start. Checked: the
# producer exits 0 with every line applied; status exits 0 and names the
# new primary; every ID fires, once (unless a loaded machine made the
# sentinels fail over a second time: sentinel_failovers); no program says
# "Connection refused" in an error.
. "$(dirname "$0")/../lib.sh"

sentinel_node
kafka_start --brokers 1
write_config
sentinel_config "wait_replicas = 1;"
scale init 2 >/dev/null || fail "init through Sentinel: exit status $?"
events_follow events.json
seq -f 'f-%04g' 1 3000 | awk '{ printf "touch %s +%d\n", $1, 2000 + NR % 500 }' >lines.txt

dead=$(redis_port a)
redis_kill9 a
SPAWN_STDIN=$T/lines.txt spawn producer "$LAPSE_BIN/lapse-producer" -c "$CONF"
scanner_start 0
scanner_start 1
scale status --json >status.json 2>status.err &
status_pid=$!
# (down after 2 s: everything started before the sentinels moved)
assert_eq "$(sentinel_primary lapse-a)" "$dead" "the primary the sentinels name once all started"

wait_until 60000 '! proc_alive producer' || fail "the producer did not finish within 60 s"
proc_stop producer 1
assert_eq "$PROC_RC" 0 "the producer's exit status ($(tail -n 2 "$T/producer.log"))"
grep -q ' 0 failed' "$T/producer.log" || fail "the producer's counters: $(tail -n 1 "$T/producer.log")"
rc=0
wait "$status_pid" || rc=$?
assert_eq "$rc" 0 "lapse-scale status's exit status ($(head -c 300 status.err))"
p=$(sentinel_primary lapse-a)
assert_ne "$p" "$dead" "the primary the sentinels name after the failover"
REDIS_PORT=$p
assert_eq "$(jq -r '.nodes[0].primary' status.json)" "127.0.0.1:$p" "the primary status names"

events_wait_ids events.json 3000 30000
# a marker due after every other deadline: once it fired, the scanners
# have claimed past them all, so a second fire of any would have shown
echo "touch end-marker +300" | produce 2>marker.err || fail "the marker: exit status $?"
events_wait_ids events.json 3001 10000
scanner_stop
events_follow_stop
if (($(sentinel_failovers) > 1)); then
    note "the sentinels failed over $(sentinel_failovers) times: duplicates allowed"
else
    assert_once events.json
fi
assert_never_early events.json
! grep -h '^error.*Connection refused' "$T/producer.log" "$T"/scanner-*.log status.err ||
    fail "a program gave up on a refused connection"
