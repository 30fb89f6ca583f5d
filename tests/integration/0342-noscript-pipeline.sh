#!/usr/bin/env bash
# 0342-noscript-pipeline: a running producer whose Redis forgot its scripts
# (SCRIPT FLUSH: a restart without persistence of the script cache, a
# failover to a server that never loaded them) sends a batch of 4 shards
# on one node: four apply calls in one pipeline, every one answered
# NOSCRIPT. All are sent again after the scripts are loaded, and none is
# reported failed.
# Catches: the second and later NOSCRIPT replies of one pipeline taken for
# refusals (the first one alone asking for the round to be sent again), so
# that their lines were reported failed though nothing had been applied.
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale init 4 >/dev/null
pending() { scale status --json | jq '[.shard_info[].pending] | add'; }

mkfifo in
"$LAPSE_BIN/lapse-producer" -c "$CONF" <in >producer.out 2>producer.err &
producer=$!
exec 3>in
seq -f 'touch a-%g +3600000' 1 40 >&3
wait_until 10000 '(( $(pending) == 40 ))' || fail "first lines: $(pending) pending, not 40"
rcli SCRIPT FLUSH >/dev/null
seq -f 'touch b-%g +3600000' 1 40 >b.txt
assert_ge "$(awk '{ print $2 }' b.txt | while read -r id; do hash_shard "$id" 4; done | sort -u | wc -l)" 2 \
    "shards the second lines go to"
cat b.txt >&3
wait_until 10000 '(( $(pending) == 80 ))' || fail "second lines: $(pending) pending, not 80 ($(cat producer.err))"
exec 3>&-
rc=0
wait "$producer" || rc=$?
assert_eq "$rc" 0 "the producer's exit status ($(cat producer.err))"
assert_eq "$(grep -c '^line ' producer.err)" 0 "lines reported failed"
