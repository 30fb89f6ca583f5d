#!/usr/bin/env bash
# 0615-wait-stream-failover: with redis.wait_replicas = 1 a producer that
# streams full batches (sent in a pipeline, confirmed later by WAITs from a
# second connection: producer/lib/confirm.c) counts a batch applied only once a
# replica took it, through a Sentinel failover.
#
# One node behind Sentinel: primary a, replicas b and c. A producer reads a
# FIFO: 100,000 touches, which reach both replicas; then both replicas stop
# (SIGSTOP, links cut) and 100,000 more follow, so what the primary applies
# from then on is on the primary only. Once it holds some of them, it dies
# (kill -9) and the replicas resume: the sentinels promote one. Checked: the
# producer rides it out (exit 0 at the end of its input, nothing failed) and
# the new primary holds all 200,000 IDs: the batches only the dead primary
# took were sent again, not counted as confirmed.
. "$(dirname "$0")/../lib.sh"

sentinel_node
write_config
sentinel_config "wait_replicas = 1; wait_timeout_ms = 200;"
scale init 2 >/dev/null || fail "init through Sentinel: exit status $?"

held() { # PORT: how many IDs the server at PORT holds
    echo $(($(shard_card 0 "$1") + $(shard_card 1 "$1")))
}
seq -f 'touch s-%06g +3600000' 1 100000 >part1.txt
seq -f 'touch s-%06g +3600000' 100001 200000 >part2.txt
mkfifo in.fifo
SPAWN_STDIN=$T/in.fifo spawn producer "$LAPSE_BIN/lapse-producer" -c "$CONF"
exec {fd}>in.fifo # opened after the spawn: the producer holds no write end, so closing it ends its input

cat part1.txt >&"$fd"
for r in a b c; do
    wait_until 30000 '(($(held "$(redis_port $r)") == 100000))' ||
        fail "redis $r holds $(held "$(redis_port $r)") of the first 100000 IDs after 30 s"
done

note "part 1 on a, b, c"
kill -STOP "$(proc_pid "${_REDIS_PROC[b]}")" "$(proc_pid "${_REDIS_PROC[c]}")"
redis-cli -p "$(redis_port a)" CLIENT KILL TYPE replica >/dev/null
cat part2.txt >&"$fd" & # the producer reads no more while it cannot confirm
feeder=$!
# at least one full batch of part 2 applied on the primary alone
wait_until 30000 '(($(held "$(redis_port a)") >= 101000))' ||
    fail "the primary applied no batch of the second part within 30 s"
note "part 2 started on a alone"
alone=$(held "$(redis_port a)")
proc_alive producer || fail "the producer exited while no replica had its writes"
redis_kill9 a
kill -CONT "$(proc_pid "${_REDIS_PROC[b]}")" "$(proc_pid "${_REDIS_PROC[c]}")"
wait_until 30000 '[[ $(sentinel_primary lapse-a) != $(redis_port a) ]]' ||
    fail "the sentinels did not promote a replica within 30 s"
p=$(sentinel_primary lapse-a)
note "the primary held $alone IDs when it died; the sentinels promoted port $p"

wait "$feeder" || fail "writing the second part to the producer failed"
exec {fd}>&- # end of input: the producer flushes and exits
wait_until 60000 '! proc_alive producer' || fail "the producer did not finish within 60 s of the failover"
proc_stop producer 1
assert_eq "$PROC_RC" 0 "the producer's exit status"
grep -q ' 0 failed' "$T/producer.log" || fail "the producer's counters: $(tail -n 1 "$T/producer.log")"
p=$(sentinel_primary lapse-a) # (a loaded machine may see the sentinels fail over once more)
got=$(held "$p")
if ((got != 200000)); then # which ones, for the report
    for s in 0 1; do shard_ids "$s" "$p"; done | sort >held.txt
    { sed 's/^touch \([^ ]*\) .*/\1/' part1.txt part2.txt; } | sort | comm -23 - held.txt >missing.txt
    note "missing: $(wc -l <missing.txt) IDs, from $(head -n 1 missing.txt) to $(tail -n 1 missing.txt)"
fi
assert_eq "$got" 200000 "IDs the primary holds"
