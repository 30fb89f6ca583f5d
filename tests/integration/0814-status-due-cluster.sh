#!/usr/bin/env bash
# 0814-status-due-cluster: lapse-scale status --due on a Redis Cluster of 3
# primaries, 8 shards: each shard's script goes to the primary serving its
# slot (the shards of one primary in one pipeline), and every count is
# right: per shard, each bucket holds exactly that shard's IDs of the bucket
# (read from the primary serving it), in --json and text; the node column
# names "slot@primary" as status does.
. "$(dirname "$0")/../lib.sh"

cluster_start 3
cluster_config
scale init 8 >/dev/null || fail "init: exit status $?"

names=(overdue next_1m next_10m next_1h next_1d later)
offsets=(-5000 30000 300000 1800000 18000000 259200000)
now=$(now_ms)
for b in 0 1 2 3 4 5; do
    for ((i = 0; i < 12; i++)); do echo "touch ${names[b]}-$i @$((now + offsets[b]))"; done
done | produce 2>/dev/null || fail "producer: exit status $?"

scale status --due --json >due.json || fail "status --due --json: exit status $?"
scale status --due >due.txt || fail "status --due: exit status $?"
assert_eq "$(jq -c '[.total | .overdue, .next_1m, .next_10m, .next_1h, .next_1d, .later, .inflight, .pending]' due.json)" \
    "[12,12,12,12,12,12,0,72]" "total (--json)"
assert_file_match due.txt '^total +12 +12 +12 +12 +12 +12 +0 +72 +in [0-9]+\.[0-9] s$' "total (text)"
for s in 0 1 2 3 4 5 6 7; do
    port=$(cluster_shard_port $s)
    # (the shard's zset, or its buckets in small keys)
    redis-cli -p "$port" EVAL "local r = {}
        for _, pat in ipairs({ KEYS[1], KEYS[1] .. ':*' }) do
            for _, k in ipairs(redis.call('KEYS', pat)) do
                for _, id in ipairs(redis.call('ZRANGE', k, 0, -1)) do r[#r + 1] = id end
            end
        end
        return r" 1 "$NS:z:{$NS:$s}" >ids-$s.txt
    for b in 0 1 2 3 4 5; do
        w=$(grep -c "^${names[b]}-" ids-$s.txt || true)
        assert_eq "$(jq ".shard_info[$s].${names[b]}" due.json)" "$w" "shard $s ${names[b]}"
    done
    assert_match "$(jq -r ".shard_info[$s].node" due.json)" "^[0-9]+@127\\.0\\.0\\.1:$port\$" "shard $s's node"
done
