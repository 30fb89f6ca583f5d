#!/usr/bin/env bash
# 0618-node-down-split: during a split, a node that is down fails only the
# writes that need it, promptly: those of its shards and those of IDs
# moving out of it (their twins cannot be taken); the rest are applied.
#
# Two plain nodes a and d, 2 shards (0 on a, 1 on d), split to 4 with the
# new shards on a (`split --to a`), left splitting; retry_timeout_ms = 2000.
# An ID of shard 0 stays there (hash & 3 == 0) or moves to shard 2 on the
# same node (== 2); one of shard 1 stays on d (== 1) or moves from d to
# shard 3 on a (== 3: take on d, seed and apply on a). d is killed. A
# producer given a touch of each of 400 IDs exits 1 within
# retry_timeout_ms + 5 s: every ID of 0 and 2 applied on a and not
# reported, every one of 1 and 3 reported failed and not applied.
. "$(dirname "$0")/../lib.sh"

redis_start a
redis_start d
write_config
sed -i "s|^redis = .*|redis = { nodes = ( { host = \"127.0.0.1\"; port = $(redis_port a); }, { host = \"127.0.0.1\"; port = $(redis_port d); } ); retry_timeout_ms = 2000; };|" "$CONF"
scale init 2 >/dev/null || fail "init: exit status $?"
scale split --to "127.0.0.1:$(redis_port a)" >split.out 2>&1 || fail "split: exit status $? ($(cat split.out))"
assert_eq "$(scale status --json | jq -r '[.shard_info[].node] | join(",")')" \
    "127.0.0.1:$(redis_port a),127.0.0.1:$(redis_port d),127.0.0.1:$(redis_port a),127.0.0.1:$(redis_port a)" \
    "nodes of shards 0..3"

seq -f 'm%03g' 0 399 >ids.txt
sp_hashes ids.txt >hashes.txt
awk '$2 % 4 == 0 || $2 % 4 == 2 { print $1 }' hashes.txt | sort >on_healthy.txt
awk '$2 % 4 == 1 || $2 % 4 == 3 { print $1 }' hashes.txt | sort >on_lost.txt
for r in 0 1 2 3; do
    assert_ge "$(awk -v r=$r '$2 % 4 == r' hashes.txt | wc -l)" 1 "IDs of shard $r"
done
far=$(($(now_ms) + 3600000))
awk -v t="$far" '{ printf "touch %s @%s\n", $1, t }' ids.txt >touch.txt

redis_kill9 d
t0=$(local_ms)
rc=0
produce <touch.txt 2>touch.log || rc=$?
took=$(($(local_ms) - t0))
note "the producer exited $rc after $took ms; $(grep -c '^line ' touch.log) lines reported failed"
assert_eq "$rc" 1 "the producer's exit status (lines for d failed)"
assert_le "$took" 7000 "the producer's run (retry_timeout_ms + 5 s)"
sed -n 's/^line \([0-9]*\): .*/\1/p' touch.log | while read -r n; do sed -n "${n}p" ids.txt; done | sort -u >failed.txt
assert_eq "$(sed -n 's/^line [0-9]*: //p' touch.log | grep -vc "127.0.0.1:$(redis_port d)")" 0 "reports not naming d"
assert_eq "$(comm -23 on_lost.txt failed.txt | wc -l)" 0 "lines for d not reported failed"
assert_eq "$(comm -12 on_healthy.txt failed.txt | wc -l)" 0 "lines on a reported failed"
# on a: the IDs of shards 0 and 2 (with the touch's deadline), none of 3
redis-cli -p "$(redis_port a)" EVAL "local out = {}
    for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
        local z = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
        for i = 1, #z, 2 do out[#out + 1] = z[i] .. ' ' .. z[i + 1] end
    end return out" 0 "$NS" | sort >held.txt
assert_eq "$(cut -d' ' -f1 held.txt)" "$(cat on_healthy.txt)" "IDs on a"
assert_eq "$(awk -v t="$far" '$2 != t' held.txt | wc -l)" 0 "IDs on a without the touch's deadline"
