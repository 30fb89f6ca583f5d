#!/usr/bin/env bash
# 0612-wait-resend-noop: with redis.wait_replicas = 1, a write sent again
# after its WAIT fell short is confirmed only once a replica has it, even
# though sending it again changes nothing on the primary.
#
# A primary with one replica, the replica stopped (SIGSTOP) with its link
# left up, so the primary still counts it as attached. The producer writes
# an absolute touch and a cancel: the first attempt applies them, its WAIT
# times out, and the producer sends them again on a new connection. There
# they change nothing, so they propagate nothing, and a bare WAIT would
# answer at once with the attached replica (it covers only its own
# connection's writes). The producer must go on waiting; once the replica
# resumes it exits 0, the primary dies (kill -9) and the promoted replica
# holds both writes.
. "$(dirname "$0")/../lib.sh"

redis_start a
redis_replica_start a b
write_config "$CONF" ""
sed -i "s|^redis = { nodes = \(.*\); };$|redis = { nodes = \1; wait_replicas = 1; wait_timeout_ms = 200; };|" "$CONF"
grep -q "wait_replicas = 1" "$CONF" || fail "could not set redis.wait_replicas"
scale init 2 >/dev/null || fail "init: exit status $?"

when=$(($(now_ms) + 3600000))
echo "touch n-0 @$when" | produce || fail "the first write: exit status $?"
b_has() { REDIS_PORT=$(redis_port b) id_score "$1"; } # ID: its score on replica b
assert_eq "$(b_has n-0)" "$when" "n-0 on the replica before it stops"

kill -STOP "$(proc_pid "${_REDIS_PROC[b]}")" # its link stays up
printf 'touch n-1 @%s\ncancel n-0\n' "$when" >lines.txt
SPAWN_STDIN=$T/lines.txt spawn producer "$LAPSE_BIN/lapse-producer" -c "$CONF"
waits() { redis-cli -p "$(redis_port a)" GET "$NS:w:0"; } # one INCR before each WAIT
base=$(waits)
wait_until 20000 '! proc_alive producer || (($(waits) - ${base:-0} >= 3))' ||
    fail "the producer neither finished nor sent its writes three times within 20 s"
[[ $(id_where n-1) ]] || fail "the primary does not hold n-1"
proc_alive producer || fail "the producer exited while no replica had its writes: $(tail -n 2 "$T/producer.log")"

kill -CONT "$(proc_pid "${_REDIS_PROC[b]}")"
wait_until 30000 '! proc_alive producer' || fail "the producer did not finish within 30 s of the replica's return"
proc_stop producer 1
assert_eq "$PROC_RC" 0 "the producer's exit status"
redis_kill9 a
redis-cli -p "$(redis_port b)" REPLICAOF NO ONE >/dev/null
assert_eq "$(b_has n-1)" "$when" "n-1 on the promoted replica"
assert_eq "$(b_has n-0)" "" "n-0 (cancelled) on the promoted replica"
