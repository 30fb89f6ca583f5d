#!/usr/bin/env bash
# 0650-ingress-failover: the ingress (--from-kafka) commits no offset for a
# write its primary could take with it. One Sentinel node (primary a,
# replicas b and c), redis.wait_replicas = 1. The replicas are stopped and
# cut off; 300 signals arrive and the ingress applies a batch of them on a,
# where no replica can confirm it, so no offset may be committed. Then a
# dies (kill -9), the replicas resume and one is promoted without those
# writes: the ingress, still retrying its batch, applies it on the new
# primary and commits only then. In the end all 301 signals are in Redis
# with their deadlines and every offset is committed.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
sentinel_node
kafka_start "$IN"
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-fo\"; properties = ( $INGRESS_PROPS );
  rules = ( { time = \"field\"; timeout_ms = 600000; } ); };"
sentinel_config "wait_replicas = 1; wait_timeout_ms = 200;"
scale init 2 >/dev/null || fail "init: exit status $?"
ingress_start
ingress_wait_assigned

b=$(($(now_ms) + 1000000))
printf 's-0\t{"ts":%d}\n' "$b" | kafka_put "$IN"
wait_until 10000 'kafka_all_committed "$IN" g-fo' || fail "s-0 not committed"
kafka_committed "$IN" g-fo | cut -d' ' -f1,2 >before

pa=$(redis_port a)
for r in b c; do kill -STOP "$(proc_pid "${_REDIS_PROC[$r]}")"; done
redis-cli -p "$pa" CLIENT KILL TYPE replica >/dev/null
for ((i = 1; i <= 300; i++)); do printf 's-%d\t{"ts":%d}\n' "$i" $((b + i)); done | kafka_put "$IN"
a_count() { echo $(($(shard_card 0 "$pa") + $(shard_card 1 "$pa"))); }
# (the ingress applies a batch at a time: the first one waits for a replica)
wait_until 10000 '(($(a_count) > 1))' || fail "the ingress applied none of the signals on a"
kafka_committed "$IN" g-fo | cut -d' ' -f1,2 >during
diff before during >c.diff || { cat c.diff >&2; fail "offsets committed while no replica had the writes"; }

redis_kill9 a
for r in b c; do kill -CONT "$(proc_pid "${_REDIS_PROC[$r]}")"; done
wait_until 30000 '[[ $(sentinel_primary lapse-a) != $pa ]]' || fail "no replica promoted within 30 s"
wait_until 30000 '[[ $(ns_count) == 301 ]]' || fail "only $(ns_count) of 301 signals on the new primary"
while read -r id score; do
    i=${id#s-}
    assert_eq "$score" $((b + i + 600000)) "deadline of $id"
done < <(ns_dump)
wait_until 10000 'kafka_all_committed "$IN" g-fo' || fail "not all committed after the failover"
ingress_stop
