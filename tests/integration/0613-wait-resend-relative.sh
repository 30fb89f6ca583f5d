#!/usr/bin/env bash
# 0613-wait-resend-relative: a relative time ("+<ms>") is fixed when its
# write is first applied, so a write sent again after its WAIT fell short
# sets the same deadline, not a later one each time (a touch applied at
# once and again later would otherwise fire twice, with two deadline_ms
# that consumers cannot tell for one write; docs/protocol.md, "At least
# once").
#
# A primary with one replica, the replica stopped (SIGSTOP) with its link
# left up, redis.wait_replicas = 1. The producer writes a relative touch
# and a relative extend; the first attempt applies them, its WAIT times
# out, and the producer sends them again. Their scores after the first
# attempt and after three more are the same; once the replica resumes the
# producer exits 0 and the promoted replica holds those scores.
. "$(dirname "$0")/../lib.sh"

redis_start a
redis_replica_start a b
write_config "$CONF" ""
sed -i "s|^redis = { nodes = \(.*\); };$|redis = { nodes = \1; wait_replicas = 1; wait_timeout_ms = 200; };|" "$CONF"
grep -q "wait_replicas = 1" "$CONF" || fail "could not set redis.wait_replicas"
scale init 2 >/dev/null || fail "init: exit status $?"

kill -STOP "$(proc_pid "${_REDIS_PROC[b]}")" # its link stays up
t0=$(now_ms)
printf 'touch r-1 +3600000\nextend r-2 +3600000\n' >lines.txt
SPAWN_STDIN=$T/lines.txt spawn producer "$LAPSE_BIN/lapse-producer" -c "$CONF"
waits() { redis-cli -p "$(redis_port a)" GET "$NS:w:0"; } # one INCR before each WAIT
wait_until 20000 '[[ -n $(id_score r-1) && -n $(id_score r-2) ]]' || fail "the first attempt did not apply"
s1=$(id_score r-1) s2=$(id_score r-2) base=$(waits)
((s1 >= t0 + 3600000 && s1 <= $(now_ms) + 3600000)) || fail "r-1's first deadline $s1 (written at $t0)"
wait_until 20000 '! proc_alive producer || (($(waits) - ${base:-0} >= 3))' ||
    fail "the producer neither finished nor sent its writes three more times within 20 s"
proc_alive producer || fail "the producer exited while no replica had its writes: $(tail -n 2 "$T/producer.log")"
assert_eq "$(id_score r-1) $(id_score r-2)" "$s1 $s2" "the deadlines after three more attempts (the first's)"

kill -CONT "$(proc_pid "${_REDIS_PROC[b]}")"
wait_until 30000 '! proc_alive producer' || fail "the producer did not finish within 30 s of the replica's return"
proc_stop producer 1
assert_eq "$PROC_RC" 0 "the producer's exit status"
redis_kill9 a
redis-cli -p "$(redis_port b)" REPLICAOF NO ONE >/dev/null
REDIS_PORT=$(redis_port b)
assert_eq "$(id_score r-1) $(id_score r-2)" "$s1 $s2" \
    "the deadlines on the promoted replica"
