#!/usr/bin/env bash
# 0619-sentinel-down: a Sentinel primary that died, before any failover,
# fails only its own writes, promptly; once the sentinels promote its
# replica, a producer that kept running writes there again.
#
# Two nodes, 4 shards: a plain node h (node 0) and "lapse-a" behind three
# sentinels (primary a, one replica b; down-after 600 s, so no failover
# happens by itself). retry_timeout_ms = 3000. The 20,000 IDs are written
# once while all is up (so each one's node shows afterwards). a is killed
# (kill -9). A producer given 20,000 touches of those IDs exits 1 within
# retry_timeout_ms + 5 s: every line of h's shards applied and not reported
# failed, every line of lapse-a's reported failed. A streaming producer
# then fails a write for lapse-a. The sentinels are told to fail over (b
# promoted): the stream's next write that reaches lapse-a lands on b.
. "$(dirname "$0")/../lib.sh"

redis_start h
redis_start a
redis_replica_start a b
sentinels_start 3 lapse-a a 600000
write_config
sed -i "s|^redis = .*|redis = { nodes = ( { host = \"127.0.0.1\"; port = $(redis_port h); }, { sentinels = ( $SENTINELS ); master = \"lapse-a\"; } ); retry_timeout_ms = 3000; };|" "$CONF"
scale init 4 >/dev/null || fail "init: exit status $?"

far1=$(($(now_ms) + 3600000)) far2=$(($(now_ms) + 7200000))
seq -f "touch i%05g @$far1" 0 19999 >first.txt
seq -f "touch i%05g @$far2" 0 19999 >second.txt
produce <first.txt 2>first.log || fail "writing the IDs while all is up: exit status $?"

wait_until 10000 "[[ \$(ids_held $(redis_port b) | wc -l) == \$(ids_held $(redis_port a) | wc -l) ]]" ||
    fail "b does not hold a's IDs 10 s after they were written"
ids_by_node a h 20000
lost=$(head -n 1 on_lost.txt)
zset_of a "$lost" 4
lostkey=$ZSET

redis_kill9 a
t0=$(local_ms)
rc=0
produce <second.txt 2>second.log || rc=$?
took=$(($(local_ms) - t0))
note "the producer exited $rc after $took ms; $(grep -c '^line ' second.log) lines reported failed"
assert_eq "$rc" 1 "the producer's exit status (lines on lapse-a failed)"
assert_le "$took" 8000 "the producer's run (retry_timeout_ms + 5 s)"
sed -n 's/^line \([0-9]*\): .*/\1/p' second.log | awk '{ printf "i%05d\n", $1 - 1 }' | sort -u >failed.txt
assert_eq "$(sed -n 's/^line [0-9]*: //p' second.log | grep -vc "127.0.0.1:$(redis_port a)")" 0 "reports not naming a"
assert_eq "$(comm -23 on_lost.txt failed.txt | wc -l)" 0 "lines on lapse-a not reported failed"
assert_eq "$(comm -12 on_healthy.txt failed.txt | wc -l)" 0 "lines on h reported failed"
assert_eq "$(ids_held "$(redis_port h)" | awk -v t="$far2" '$2 != t' | wc -l)" 0 "IDs on h without the second write's deadline"
assert_eq "$(sentinel_primary lapse-a)" "$(redis_port a)" "the primary the sentinels name (no failover yet)"

# a producer that keeps running: a write for lapse-a fails
mkfifo s.fifo
SPAWN_STDIN=$T/s.fifo spawn s "$LAPSE_BIN/lapse-producer" -c "$CONF"
exec {fd}>s.fifo # opened after the spawn: the producer holds no write end, so closing it ends its input
echo "touch $lost @$((far2 + 1))" >&"$fd"
wait_until 10000 'grep -q "^line 1: " "$T/s.log"' || fail "the streaming producer did not report its write for lapse-a within 10 s"

# the sentinels promote b: the first of the stream's writes that reaches
# lapse-a lands there (a write between two probes, 250 ms doubling to 5 s
# apart, fails at once, unsent: so the stream goes on for up to 20 s)
redis-cli -p "${SENTINEL_PORTS[0]}" SENTINEL FAILOVER lapse-a >/dev/null
wait_until 20000 '[[ $(sentinel_primary lapse-a) == $(redis_port b) ]] &&
    redis-cli -p "$(redis_port b)" ROLE | head -n 1 | grep -qx master' ||
    fail "the sentinels did not promote b within 20 s"
k=1
tend=$(($(local_ms) + 20000))
for ((i = 0; i < 5000 && $(local_ms) < tend; i++)); do
    k=$((k + 1))
    echo "touch $lost @$((far2 + k))" >&"$fd"
    wait_until 10000 "[[ \$(redis-cli -p $(redis_port b) ZSCORE $lostkey $lost) == $((far2 + k)) ]] || grep -q '^line $k: ' $T/s.log" ||
        fail "line $k of the stream neither applied nor reported within 10 s"
    grep -q "^line $k: " "$T/s.log" || break
done
note "the stream's line $k reached b once it was promoted"
exec {fd}>&-
wait_until 10000 '! proc_alive s' || fail "the streaming producer did not exit within 10 s of its input's end"
proc_stop s 1
assert_eq "$(grep -c "^line $k: " "$T/s.log")" 0 "reports of the stream's write once b was promoted"
