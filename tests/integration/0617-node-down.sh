#!/usr/bin/env bash
# 0617-node-down: a plain node that is down and stays down fails its own
# writes, promptly, and no others; once it is back (same port, its AOF
# reloaded), a producer that kept running writes there again.
#
# Two plain nodes a and d (d with AOF), 4 shards, retry_timeout_ms = 3000.
# The 20,000 IDs are written once while both are up (so each one's node
# shows afterwards). d is killed (kill -9) and not restarted. A producer
# given 20,000 touches of those IDs exits 1 within retry_timeout_ms + 5 s:
# every line of a's shards applied and not reported failed, every line of
# d's reported failed. A streaming producer then fails a write for d and
# applies one for a. d is restarted: the stream's next write that reaches
# d is applied (not reported), without a restart of the producer.
. "$(dirname "$0")/../lib.sh"

redis_start a
redis_start d --appendonly yes
write_config
sed -i "s|^redis = .*|redis = { nodes = ( { host = \"127.0.0.1\"; port = $(redis_port a); }, { host = \"127.0.0.1\"; port = $(redis_port d); } ); retry_timeout_ms = 3000; };|" "$CONF"
scale init 4 >/dev/null || fail "init: exit status $?"

far1=$(($(now_ms) + 3600000)) far2=$(($(now_ms) + 7200000))
seq -f "touch i%05g @$far1" 0 19999 >first.txt
seq -f "touch i%05g @$far2" 0 19999 >second.txt
produce <first.txt 2>first.log || fail "writing the IDs while all is up: exit status $?"

ids_by_node d a 20000
lost=$(head -n 1 on_lost.txt)
zset_of d "$lost" 4
lostkey=$ZSET
healthy=$(head -n 1 on_healthy.txt)
zset_of a "$healthy" 4
healthykey=$ZSET
redis-cli -p "$(redis_port d)" BGREWRITEAOF >/dev/null # (d's AOF has every ID when it is killed)
wait_until 10000 "redis-cli -p $(redis_port d) INFO persistence | grep -q '^aof_rewrite_in_progress:0' &&
    redis-cli -p $(redis_port d) INFO persistence | grep -q '^aof_rewrite_scheduled:0'" ||
    fail "d's AOF rewrite did not end within 10 s"

redis_kill9 d

t0=$(local_ms)
rc=0
produce <second.txt 2>second.log || rc=$?
took=$(($(local_ms) - t0))
note "the producer exited $rc after $took ms; $(grep -c '^line ' second.log) lines reported failed"
assert_eq "$rc" 1 "the producer's exit status (lines on d failed)"
assert_le "$took" 8000 "the producer's run (retry_timeout_ms + 5 s)"
sed -n 's/^line \([0-9]*\): .*/\1/p' second.log | awk '{ printf "i%05d\n", $1 - 1 }' | sort -u >failed.txt
assert_eq "$(sed -n 's/^line [0-9]*: //p' second.log | grep -vc "127.0.0.1:$(redis_port d)")" 0 "reports not naming d"
assert_eq "$(comm -23 on_lost.txt failed.txt | wc -l)" 0 "lines on d not reported failed"
assert_eq "$(comm -12 on_healthy.txt failed.txt | wc -l)" 0 "lines on a reported failed"
assert_eq "$(ids_held "$(redis_port a)" | awk -v t="$far2" '$2 != t' | wc -l)" 0 "IDs on a without the second write's deadline"

# a producer that keeps running: a write for d fails, one for a applies
mkfifo s.fifo
SPAWN_STDIN=$T/s.fifo spawn s "$LAPSE_BIN/lapse-producer" -c "$CONF"
exec {fd}>s.fifo # opened after the spawn: the producer holds no write end, so closing it ends its input
echo "touch $lost @$((far2 + 1))" >&"$fd"
wait_until 10000 'grep -q "^line 1: " "$T/s.log"' || fail "the streaming producer did not report its write for d within 10 s"
echo "touch $healthy @$((far2 + 2))" >&"$fd"
# (a write for a goes out at once: a's shards are not held by d's outage)
wait_until 5000 "[[ \$(redis-cli -p $(redis_port a) ZSCORE $healthykey $healthy) == $((far2 + 2)) ]]" ||
    fail "the stream's write for a was not applied within 5 s while d is down"

# d comes back (same port, its AOF reloaded): the first of the stream's
# writes that reaches d is applied (a write between two probes, 250 ms
# doubling to 5 s apart, fails at once, unsent: so the stream goes on for
# up to 20 s)
redis_restart d {fd}>&- # (the server must not hold the stream's FIFO open)
k=2
tend=$(($(local_ms) + 20000))
for ((i = 0; i < 5000 && $(local_ms) < tend; i++)); do
    k=$((k + 1))
    echo "touch $lost @$((far2 + k))" >&"$fd"
    wait_until 10000 "[[ \$(redis-cli -p $(redis_port d) ZSCORE $lostkey $lost) == $((far2 + k)) ]] || grep -q '^line $k: ' $T/s.log" ||
        fail "line $k of the stream neither applied nor reported within 10 s"
    grep -q "^line $k: " "$T/s.log" || break
done
note "the stream's line $k reached d once it was back"
exec {fd}>&-
wait_until 10000 '! proc_alive s' || fail "the streaming producer did not exit within 10 s of its input's end"
proc_stop s 1
assert_eq "$(grep -c "^line $k: " "$T/s.log")" 0 "reports of the stream's write once d was back"
assert_eq "$(grep -c "^line 2: " "$T/s.log")" 0 "reports of the stream's write for a"
produce <second.txt 2>third.log || fail "a new producer once d is back: exit status $? ($(head -n 3 third.log))"
assert_eq "$(ids_held "$(redis_port d)" | awk -v t="$far2" '$2 != t' | wc -l)" 0 "IDs on d without the second write's deadline"
