#!/usr/bin/env bash
# 0817-status-small-keys: lapse-scale status shows each shard's keys, its
# largest key and the zsets over Redis's listpack limit (128), and says
# what to do about those:
# - small keys, no scanner yet: 1,000 IDs over 2 shards sit in one bucket
#   each (b = 0), over the limit: status --json .shard_info[].keys 1,
#   .largest_key_ids their count, .over_listpack 1, .largest_key_bytes a
#   number; the text names the largest and says what to do;
# - with scanners the buckets split: more keys, none over the limit, the
#   largest at most 128 IDs, and the text says nothing about the limit;
# - one zset a shard: 1 key a shard, its size, over the limit as it is.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
write_config
scale init 2 --small-keys >/dev/null
awk 'BEGIN { for (i = 0; i < 1000; i++) printf "touch s-%d +3600000\n", i }' | produce ||
    fail "lapse-producer exited with $?"
scale status --json >st1.json || fail "status --json: exit status $?"
assert_eq "$(jq -c '[.shard_info[].keys]' st1.json)" "[1,1]" "keys per shard before any split"
assert_eq "$(jq '[.shard_info[].largest_key_ids] | add' st1.json)" 1000 "the two largest keys hold every ID"
assert_eq "$(jq -c '[.shard_info[].over_listpack]' st1.json)" "[1,1]" "zsets over the listpack limit"
assert_match "$(jq '.shard_info[0].largest_key_bytes' st1.json)" '^[0-9]+$' "largest key's bytes"
scale status >st1.txt || fail "status: exit status $?"
assert_file_match st1.txt '^keys: 2 zsets hold IDs; the largest, in shard [01], [0-9]+ IDs, [0-9]+ bytes$' "keys line"
assert_file_match st1.txt '^2 zsets hold more than 128 IDs .*zset-max-listpack-entries' "what to do about the limit"

scanners_start 2
wait_until 20000 '[[ $(scale status --json | jq "[.shard_info[].over_listpack] | add") == 0 ]]' ||
    fail "buckets still over the limit 20 s after the scanners started"
scale status --json >st2.json || fail "status --json: exit status $?"
assert_ge "$(jq '[.shard_info[].keys] | add' st2.json)" 10 "keys after the buckets split"
assert_le "$(jq '[.shard_info[].largest_key_ids] | max' st2.json)" 128 "largest bucket after the splits"
scale status >st2.txt || fail "status: exit status $?"
! grep -q 'more than 128 IDs' st2.txt || fail "status still speaks of the limit: $(grep 'more than' st2.txt)"

NS=one CONF=$T/one.conf write_config
NS=one CONF=$T/one.conf scale init 2 --one-zset >/dev/null
awk 'BEGIN { for (i = 0; i < 1000; i++) printf "touch o-%d +3600000\n", i }' |
    NS=one CONF=$T/one.conf produce || fail "lapse-producer (one zset) exited with $?"
NS=one CONF=$T/one.conf scale status --json >st3.json || fail "status --json (one zset): exit status $?"
assert_eq "$(jq -c '[.shard_info[].keys]' st3.json)" "[1,1]" "keys per shard, one zset"
assert_eq "$(jq '[.shard_info[].largest_key_ids] | add' st3.json)" 1000 "one zset a shard holds every ID"
