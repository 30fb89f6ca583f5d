#!/usr/bin/env bash
# 0614-wait-resend-repeat: a repeat sent again after its WAIT fell short
# keeps the count its first application started: each seq fires with one
# deadline, 1, 2, 3 ... in order (docs/protocol.md, `repeat`), however
# often the producer sends it again while its first points fire.
#
# A primary with one replica, the replica stopped (SIGSTOP) with its link
# left up, redis.wait_replicas = 1, wait_timeout_ms = 200. The producer
# writes `repeat rp +100 300`: the first attempt applies it, its WAIT times
# out, and the producer sends it again, several times, while the scanner
# fires its first points. Once the replica resumes the producer exits 0;
# the ID is cancelled after its seq 6.
#
# Catches: a repeat sent again starting its count over (found by the
# nemesis, seed 12): seq 1 again at its first deadline, then seq 2 at the
# grid point after the new application, a second deadline for seq 2.
. "$(dirname "$0")/../lib.sh"

redis_start a
redis_replica_start a b
kafka_start --brokers 1
write_config "$CONF" ""
sed -i "s|^redis = { nodes = \(.*\); };$|redis = { nodes = \1; wait_replicas = 1; wait_timeout_ms = 200; };|" "$CONF"
grep -q "wait_replicas = 1" "$CONF" || fail "could not set redis.wait_replicas"
scale init 1 >/dev/null || fail "init: exit status $?"
scanner_start 0
events_follow events.json

kill -STOP "$(proc_pid "${_REDIS_PROC[b]}")" # its link stays up
echo 'repeat rp +100 300' >lines.txt
SPAWN_STDIN=$T/lines.txt spawn producer "$LAPSE_BIN/lapse-producer" -c "$CONF"
waits() { redis-cli -p "$(redis_port a)" GET "$NS:w:0"; } # one INCR before each WAIT
wait_until 20000 '[[ -n $(id_score rp) ]]' || fail "the first attempt did not apply"
base=$(waits)
seqs() { jq -r 'select(.id == "rp") | .seq' events.json | sort -n | tail -n 1; }
# the producer sends it again while seqs 1..3 fire
wait_until 20000 '(($(waits) - ${base:-0} >= 4)) && (($(seqs) >= 3))' ||
    fail "no three fires and four more sends within 20 s (waits $(waits), seq $(seqs))"
proc_alive producer || fail "the producer exited while no replica had its write: $(tail -n 2 "$T/producer.log")"
kill -CONT "$(proc_pid "${_REDIS_PROC[b]}")"
wait_until 30000 '! proc_alive producer' || fail "the producer did not finish within 30 s of the replica's return"
proc_stop producer 1
assert_eq "$PROC_RC" 0 "the producer's exit status"
wait_until 20000 '(($(seqs) >= 6))' || fail "rp fired only up to seq $(seqs)"
echo 'cancel rp' | produce || fail "cancel: exit status $?"

# each seq one deadline, seqs 1..k without a gap, deadlines 300 ms apart
jq -r 'select(.id == "rp") | "\(.seq) \(.deadline_ms)"' events.json | sort -u | sort -n >pairs.txt
awk '{ n[$1]++; d[$1] = $2; if ($1 > k) k = $1 }
    END { for (s = 1; s <= k; s++) {
        if (n[s] != 1) { print "seq " s ": " n[s] + 0 " deadlines"; bad = 1 }
        else if (s > 1 && d[s] - d[s - 1] < 300) { print "seq " s " only " d[s] - d[s - 1] " ms after seq " s - 1; bad = 1 }
    } exit bad }' pairs.txt >bad.txt || fail "rp's seqs: $(cat bad.txt) (events: $(paste -sd' ' pairs.txt))"
note "rp: $(wc -l <pairs.txt) seqs, each with one deadline; sent $(($(waits) - base)) more times"
