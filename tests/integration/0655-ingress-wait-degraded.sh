#!/usr/bin/env bash
# 0655-ingress-wait-degraded: with redis.wait_replicas = 1, the ingress
# holds back only the partitions whose messages write to a primary that
# lost its replica, and only from the first such message on.
#
# Two plain nodes, each with a replica: a (shard 0) and h (shard 1);
# retry_timeout_ms = 2000. a's replica dies (kill -9): nothing written on a
# can be confirmed. Partition 0 then carries 50 signals of IDs of shard 1
# (on h); partition 1 carries 20 of them, one of shard 0 (on a), and 20
# more of shard 1, then the shard-0 ID again (its two signals fold into one
# write, reported failed by the second's tag). Checked: partition 0 is committed whole and its IDs
# are in h; partition 1 is committed up to the first shard-0 message and no
# further, not up to the second (its shard-1 IDs are in h, applied, the later ones not committed); the metrics name a as short of
# replicas. Then a's replica comes back: everything is committed, every ID
# is stored, the metric's series is gone.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
redis_start a
redis_replica_start a ar
redis_start h
redis_replica_start h hr
kafka_start "$IN"
free_port >/dev/null
mp=$FREE_PORT
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-wd\"; metrics_port = $mp;
  properties = ( $INGRESS_PROPS ); rules = ( { time = \"field\"; timeout_ms = 600000; } ); };"
sed -i "s|^redis = .*|redis = { nodes = ( { host = \"127.0.0.1\"; port = $(redis_port a); }, { host = \"127.0.0.1\"; port = $(redis_port h); } ); wait_replicas = 1; wait_timeout_ms = 200; retry_timeout_ms = 2000; };|" "$CONF"
scale init 2 >/dev/null || fail "init: exit status $?"

# IDs by shard (of 2: XXH64's bit 0)
seq -f 'd%03g' 0 199 >ids.txt
sp_hashes ids.txt >hashes.txt
awk '$2 % 2 == 1 { print $1 }' hashes.txt >on_h.txt
on_a=$(awk '$2 % 2 == 0 { print $1; exit }' hashes.txt)
(($(wc -l <on_h.txt) >= 90)) || fail "too few IDs of shard 1"

redis_kill9 ar
wait_until 10000 "redis-cli -p $(redis_port a) INFO replication | grep -q '^connected_slaves:0'" ||
    fail "a still counts its replica 10 s after its death"

b=$(($(now_ms) + 1000000))
head -n 50 on_h.txt | awk -v b="$b" '{ printf "%s\t{\"ts\":%.0f}\n", $1, b + NR }' | kafka_put "$IN" -p 0
{
    sed -n 51,70p on_h.txt
    echo "$on_a"
    sed -n 71,90p on_h.txt
    echo "$on_a" # a later signal of the same ID: folded into the first's op
} | awk -v b="$b" '{ printf "%s\t{\"ts\":%.0f}\n", $1, b + NR }' | kafka_put "$IN" -p 1
ingress_start
ingress_wait_assigned

# committed PARTITION: the group's committed offset there
committed() { kafka_committed "$IN" g-wd | awk -v p="$1" '$1 == p { print $2 }'; }
wait_until 20000 '[[ $(committed 0) == 50 && $(committed 1) == 20 ]]' ||
    fail "committed offsets $(committed 0) (partition 0, want 50) and $(committed 1) (partition 1, want 20) after 20 s"
hh() { shard_card 1 "$(redis_port h)"; }
# (the 20 after a's are applied too, each time partition 1 is read again;
# they are not committed; under load the re-read may come a moment after
# the commits above)
wait_until 10000 '[[ $(hh) == 90 ]]' || fail "IDs on h: got '$(hh)', want '90' 10 s after the commits"
metrics_get "$mp" >metrics.txt
assert_file_match metrics.txt "^lapse_ingress_primary_replicas_missing\\{ns=\"$NS\",primary=\"127.0.0.1:$(redis_port a)\"\\} 1\$" \
    "the metric naming a"
wait_until 5000 '[[ $(committed 1) == 20 ]] && grep -q "not applied" "$T/ingress.log"' ||
    fail "the ingress did not say why partition 1 waits"
assert_eq "$(committed 1)" 20 "partition 1's committed offset while a has no replica"

redis_restart ar
wait_until 10000 "_primary_streams $(redis_port a) && redis-cli -p $(redis_port a) INFO replication | grep -q '^connected_slaves:1'" ||
    fail "a has no replica again 10 s after its restart"
wait_until 20000 'kafka_all_committed "$IN" g-wd' ||
    fail "not all committed 20 s after a's replica came back ($(committed 0), $(committed 1))"
assert_eq "$(hh)" 90 "IDs on h"
assert_eq "$(shard_get ZSCORE z 0 "$on_a" "$(redis_port a)")" $((b + 42 + 600000)) "the deadline of $on_a on a"
wait_until 5000 '! metrics_get "$mp" | grep -q "^lapse_ingress_primary_replicas_missing{"' ||
    fail "the metric still names a once it confirms again"
ingress_stop
