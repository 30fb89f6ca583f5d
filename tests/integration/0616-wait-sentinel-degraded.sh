#!/usr/bin/env bash
# 0616-wait-sentinel-degraded: with redis.wait_replicas = 1, a Sentinel
# primary whose only replica was promoted fails its own writes, promptly,
# and no others; once it has a replica again, writes are confirmed, also
# in a producer that kept running. The scanners' metrics say which shards'
# primary lacks a replica, and stop saying so once it has one.
#
# Two nodes, 4 shards: "lapse-a" behind three sentinels (primary a, one
# replica b) and a plain node h with its replica hr. retry_timeout_ms =
# 3000. The 20,000 IDs are written once while all is whole (so each one's
# node shows afterwards). a is killed (kill -9) and not restarted; the
# sentinels promote b, which has no replica. A producer given 20,000
# touches of those IDs exits 1 within retry_timeout_ms + 5 s: every line of
# h's shards applied and not reported failed, every line of b's reported
# failed. A streaming producer then fails a write for b too. Then b gets a
# replica (b2): the streaming producer's next write that reaches b is
# confirmed (not reported), without a restart, and a new producer's 20,000
# writes are confirmed (exit 0).
. "$(dirname "$0")/../lib.sh"

redis_start a
redis_replica_start a b
redis_start h
redis_replica_start h hr
sentinels_start 3 lapse-a a 1000
kafka_start --brokers 1
free_port >/dev/null # the scanners' metrics: shard N on mp + N
mp=$FREE_PORT
SCANNER_CFG="metrics_port = $mp;"
write_config
sed -i "s|^redis = .*|redis = { nodes = ( { sentinels = ( $SENTINELS ); master = \"lapse-a\"; }, { host = \"127.0.0.1\"; port = $(redis_port h); } ); wait_replicas = 1; wait_timeout_ms = 200; retry_timeout_ms = 3000; };|" "$CONF"
scale init 4 >/dev/null || fail "init: exit status $?"

far1=$(($(now_ms) + 3600000)) far2=$(($(now_ms) + 7200000))
seq -f "touch i%05g @$far1" 0 19999 >first.txt
seq -f "touch i%05g @$far2" 0 19999 >second.txt
produce <first.txt 2>first.log || fail "writing the IDs while all is whole: exit status $?"

redis_kill9 a
wait_until 20000 '[[ $(sentinel_primary lapse-a) == $(redis_port b) ]] &&
    redis-cli -p "$(redis_port b)" ROLE | head -n 1 | grep -qx master' ||
    fail "the sentinels did not promote b within 20 s"

ids_by_node b h 20000

t0=$(local_ms)
rc=0
produce <second.txt 2>second.log || rc=$?
took=$(($(local_ms) - t0))
note "the producer exited $rc after $took ms; $(grep -c '^line ' second.log) lines reported failed"
assert_eq "$rc" 1 "the producer's exit status (lines on b failed)"
assert_le "$took" 8000 "the producer's run (retry_timeout_ms + 5 s)"
sed -n 's/^line \([0-9]*\): .*/\1/p' second.log | awk '{ printf "i%05d\n", $1 - 1 }' | sort -u >failed.txt
assert_eq "$(sed -n 's/^line [0-9]*: //p' second.log | grep -vc 'replicas')" 0 "reports not naming the missing replicas"
assert_eq "$(comm -23 on_lost.txt failed.txt | wc -l)" 0 "lines on b not reported failed"
assert_eq "$(comm -12 on_healthy.txt failed.txt | wc -l)" 0 "lines on h reported failed"
assert_eq "$(ids_held "$(redis_port h)" | awk -v t="$far2" '$2 != t' | wc -l)" 0 "IDs on h without the second write's deadline"

# check names b as short of replicas (h has its replica)
scale check --json >check.json || true
assert_eq "$(jq -r '[.problems[] | select(.problem == "replicas_missing") | .message] | join(";")' check.json)" \
    "node lapse-a: primary 127.0.0.1:$(redis_port b) has 0 replicas, redis.wait_replicas = 1: writes there cannot be confirmed (producers report them failed)" \
    "check's replicas_missing problems"

# so do the scanners' metrics: each shard's scanner says how many replicas
# its primary lacks (b's shards 1, h's 0)
for s in 0 1 2 3; do scanner_start $s; done
# missing PORT: lapse_scanner_redis_replicas_missing there ("" while unread)
missing() { curl -s --max-time 3 "http://127.0.0.1:$1/metrics" | sed -n 's/^lapse_scanner_redis_replicas_missing{.*} //p'; }
# all_missing RE: every shard's gauge matches RE
all_missing() {
    local s
    for s in 0 1 2 3; do [[ $(missing $((mp + s))) =~ $1 ]] || return 1; done
}
wait_until 10000 'all_missing "^[0-9]+$"' ||
    fail "a scanner's metrics gave no lapse_scanner_redis_replicas_missing within 10 s"
gauges=$(for s in 0 1 2 3; do missing $((mp + s)); done | sort -u | tr '\n' ' ')
assert_eq "$gauges" "0 1 " "lapse_scanner_redis_replicas_missing of the four shards (h's, b's)"

# a producer that keeps running: a write for b fails (once its window closed)
lost=$(head -n 1 on_lost.txt)
zset_of b "$lost" 4
lostkey=$ZSET
redis_start b2 # b's replica-to-be (started before the stream: it would hold the FIFO open)
mkfifo s.fifo
SPAWN_STDIN=$T/s.fifo spawn s "$LAPSE_BIN/lapse-producer" -c "$CONF"
exec {fd}>s.fifo # opened after the spawn: the producer holds no write end, so closing it ends its input
echo "touch $lost @$((far2 + 1))" >&"$fd"
wait_until 10000 'grep -q "^line 1: " "$T/s.log"' || fail "the streaming producer did not report its write for b within 10 s"

# b gets a replica: the first of the stream's writes that reaches b is
# confirmed (a write between two probes fails at once, unsent)
redis-cli -p "$(redis_port b2)" REPLICAOF 127.0.0.1 "$(redis_port b)" >/dev/null
wait_until 10000 "redis-cli -p $(redis_port b2) INFO replication | grep -q 'master_link_status:up' && _primary_streams $(redis_port b)" ||
    fail "b2 did not become b's replica within 10 s"
k=1
for ((i = 0; i < 40; i++)); do
    k=$((k + 1))
    echo "touch $lost @$((far2 + k))" >&"$fd"
    wait_until 10000 "[[ \$(redis-cli -p $(redis_port b) ZSCORE $lostkey $lost) == $((far2 + k)) ]] || grep -q '^line $k: ' $T/s.log" ||
        fail "line $k of the stream neither applied nor reported within 10 s"
    grep -q "^line $k: " "$T/s.log" || break
done
note "the stream's line $k reached b once it had a replica"
exec {fd}>&-
wait_until 10000 '! proc_alive s' || fail "the streaming producer did not exit within 10 s of its input's end"
proc_stop s 1
assert_eq "$(grep -c "^line $k: " "$T/s.log")" 0 "reports of the stream's write once b had a replica"

scale check --json >check.json || true
assert_eq "$(jq '[.problems[] | select(.problem == "replicas_missing")] | length' check.json)" 0 \
    "check's replicas_missing problems once b has a replica"
wait_until 10000 'all_missing "^0$"' ||
    fail "lapse_scanner_redis_replicas_missing not 0 on every shard within 10 s of b's replica"
produce <second.txt 2>third.log || fail "a new producer once b has a replica: exit status $? ($(head -n 3 third.log))"
