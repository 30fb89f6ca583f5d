#!/usr/bin/env bash
# 0610-wait-replicas: with redis.wait_replicas = 1 a write is reported
# applied only once a replica has it, so it survives the loss of its
# primary. A primary with one replica, the replica stopped (SIGSTOP) and its
# link cut while a producer writes 10,000 touches: the producer
# must not finish while no replica has them; the replica resumes, the
# producer exits 0, and at once the primary dies (kill -9) and the replica
# is promoted: it holds all 10,000. The same with wait_replicas = 0 on a
# second pair shows what the test guards against: the producer finishes
# while the replica is stopped, and the promoted replica lacks the writes.
. "$(dirname "$0")/../lib.sh"

seq -f 'touch w-%05g +3600000' 1 10000 >touches.txt

# run PRIMARY REPLICA WAIT: init, stop the replica, start the producer; its
# process name in PRODUCER
run() {
    REDIS_PORT=$(redis_port "$1")
    write_config "$CONF" ""
    sed -i "s|^redis = { nodes = \(.*\); };$|redis = { nodes = \1; wait_replicas = $3; wait_timeout_ms = 200; };|" "$CONF"
    grep -q "wait_replicas = $3" "$CONF" || fail "could not set redis.wait_replicas"
    scale init 2 >/dev/null
    kill -STOP "$(proc_pid "${_REDIS_PROC[$2]}")"
    rcli CLIENT KILL TYPE replica >/dev/null # the link is cut: what follows waits for the replica's return
    SPAWN_STDIN=$T/touches.txt spawn "producer-$1" "$LAPSE_BIN/lapse-producer" -c "$CONF"
    PRODUCER=$SPAWNED
}

held() { # REPLICA: how many w-* IDs it holds
    local p
    p=$(redis_port "$1")
    echo $(($(shard_card 0 "$p") + $(shard_card 1 "$p")))
}

promote() { # PRIMARY REPLICA: kill -9 the primary, let the replica go on, promote it
    redis_kill9 "$1"
    kill -CONT "$(proc_pid "${_REDIS_PROC[$2]}")"
    redis-cli -p "$(redis_port "$2")" REPLICAOF NO ONE >/dev/null
}

redis_start a
redis_replica_start a b
run a b 1
# what it wrote so far is on the primary only: it must not report it applied
wait_until 10000 '(($(shard_card 0) > 0))' || fail "the producer wrote nothing within 10 s"
sleep 1 # (the producer keeps waiting for a replica, however long this takes)
proc_alive "$PRODUCER" || fail "the producer exited while no replica had its writes"
kill -CONT "$(proc_pid "${_REDIS_PROC[b]}")"
wait_until 30000 '! proc_alive "$PRODUCER"' || fail "the producer did not finish within 30 s of the replica's return"
proc_stop "$PRODUCER" 1
assert_eq "$PROC_RC" 0 "the producer's exit status"
promote a b # the moment the producer is done
assert_eq "$(held b)" 10000 "IDs the promoted replica holds (wait_replicas = 1)"

# the same without WAIT: acknowledged, then lost with the primary
redis_start c
redis_replica_start c d
run c d 0
wait_until 30000 '! proc_alive "$PRODUCER"' || fail "the producer (wait_replicas = 0) did not finish within 30 s"
proc_stop "$PRODUCER" 1
assert_eq "$PROC_RC" 0 "the producer's exit status (wait_replicas = 0)"
promote c d
got=$(held d)
note "wait_replicas = 0: the promoted replica holds $got of 10000 acknowledged IDs"
assert_eq "$got" 0 "IDs the promoted replica holds without WAIT (the scenario must lose them)"
