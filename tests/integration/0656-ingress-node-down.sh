#!/usr/bin/env bash
# 0656-ingress-node-down: a node that is down holds back only the
# partitions whose messages write to it, and only from the first such
# message on; the other partitions are committed whole, promptly.
#
# Two plain nodes: a (node 0, shard 0, with AOF: it holds the layout) and h
# (shard 1); retry_timeout_ms = 2000. The ingress starts while both are up;
# then a is killed (kill -9) and not restarted for now. Partition 0 then
# carries 50 signals of IDs of shard 1 (on h); partition 1 carries 20 of
# them, one of shard 0 (on a), and 20 more of shard 1. Checked: partition 0
# is committed whole and its IDs are in h; partition 1 is committed up to
# the shard-0 message and no further. Then a is restarted (same port, its
# AOF reloaded): everything is committed and every ID is stored.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
redis_start a --appendonly yes
redis_start h
kafka_start "$IN"
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-nd\";
  properties = ( $INGRESS_PROPS ); rules = ( { time = \"field\"; timeout_ms = 600000; } ); };"
sed -i "s|^redis = .*|redis = { nodes = ( { host = \"127.0.0.1\"; port = $(redis_port a); }, { host = \"127.0.0.1\"; port = $(redis_port h); } ); retry_timeout_ms = 2000; };|" "$CONF"
scale init 2 >/dev/null || fail "init: exit status $?"

# IDs by shard (of 2: XXH64's bit 0)
seq -f 'd%03g' 0 199 >ids.txt
sp_hashes ids.txt >hashes.txt
awk '$2 % 2 == 1 { print $1 }' hashes.txt >on_h.txt
on_a=$(awk '$2 % 2 == 0 { print $1; exit }' hashes.txt)
(($(wc -l <on_h.txt) >= 90)) || fail "too few IDs of shard 1"

ingress_start
ingress_wait_assigned
redis-cli -p "$(redis_port a)" BGREWRITEAOF >/dev/null # (a's AOF has the layout when it is killed)
wait_until 10000 "redis-cli -p $(redis_port a) INFO persistence | grep -q '^aof_rewrite_in_progress:0' &&
    redis-cli -p $(redis_port a) INFO persistence | grep -q '^aof_rewrite_scheduled:0'" ||
    fail "a's AOF rewrite did not end within 10 s"
b=$(($(now_ms) + 1000000)) # (now_ms asks a)
redis_kill9 a

head -n 50 on_h.txt | awk -v b="$b" '{ printf "%s\t{\"ts\":%.0f}\n", $1, b + NR }' | kafka_put "$IN" -p 0
{
    sed -n 51,70p on_h.txt
    echo "$on_a"
    sed -n 71,90p on_h.txt
} | awk -v b="$b" '{ printf "%s\t{\"ts\":%.0f}\n", $1, b + NR }' | kafka_put "$IN" -p 1

# committed PARTITION: the group's committed offset there
committed() { kafka_committed "$IN" g-nd | awk -v p="$1" '$1 == p { print $2 }'; }
wait_until 20000 '[[ $(committed 0) == 50 && $(committed 1) == 20 ]]' ||
    fail "committed offsets $(committed 0) (partition 0, want 50) and $(committed 1) (partition 1, want 20) after 20 s"
hh() { shard_card 1 "$(redis_port h)"; }
# (the 20 after a's are applied too, each time partition 1 is read again;
# they are not committed: on a loaded machine the first reading may not
# have reached them yet when the offsets are)
wait_until 10000 '[[ $(hh) == 90 ]]' || fail "IDs on h: $(hh), not 90"
wait_until 5000 '[[ $(committed 1) == 20 ]] && grep -q "not applied" "$T/ingress.log"' ||
    fail "the ingress did not say why partition 1 waits"
assert_eq "$(committed 1)" 20 "partition 1's committed offset while a is down"

redis_restart a
wait_until 20000 'kafka_all_committed "$IN" g-nd' ||
    fail "not all committed 20 s after a came back ($(committed 0), $(committed 1))"
assert_eq "$(hh)" 90 "IDs on h"
assert_eq "$(shard_get ZSCORE z 0 "$on_a" "$(redis_port a)")" $((b + 21 + 600000)) "the deadline of $on_a on a"
ingress_stop
