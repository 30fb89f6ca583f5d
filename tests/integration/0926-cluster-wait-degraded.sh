#!/usr/bin/env bash
# 0926-cluster-wait-degraded: with redis.wait_replicas = 1 on a Redis
# Cluster, a primary that lost its only replica fails its own writes,
# promptly, and no others.
#
# 3 primaries with a replica each, 8 shards, retry_timeout_ms = 3000. The
# 20,000 IDs are written once while the cluster is whole (so each one's
# shard shows in Redis afterwards). The primary serving the most shards is
# killed (kill -9) and not restarted: its replica is promoted and has no
# replica of its own, so no write there can be confirmed. A producer then
# given 20,000 touches of those IDs exits 1 within retry_timeout_ms + 5 s;
# every line whose shard is on a healthy primary is applied and not
# reported failed; every line whose shard is on the promoted one is
# reported failed (`line N: ...`); lapse-scale status and check name the
# promoted primary as short of replicas. Then the old primary comes back
# as a replica of the promoted one: check no longer names it, and a new
# producer's writes are confirmed (exit 0).
. "$(dirname "$0")/../lib.sh"

cluster_start 3 1
kafka_start --brokers 1
CLUSTER_REDIS_EXTRA="wait_replicas = 1; wait_timeout_ms = 200; retry_timeout_ms = 3000;"
cluster_config
scale init 8 >/dev/null || fail "init: exit status $?"

far1=$(($(now_ms) + 3600000)) far2=$(($(now_ms) + 7200000))
seq -f "touch i%05g @$far1" 0 19999 >first.txt
seq -f "touch i%05g @$far2" 0 19999 >second.txt
produce <first.txt 2>first.log || fail "writing the IDs while the cluster is whole: exit status $?"

victim=$(cluster_busiest_primary 8)
lost=()
for s in 0 1 2 3 4 5 6 7; do [[ $(cluster_shard_port "$s") == "$victim" ]] && lost+=("$s"); done
note "killing the primary on $victim, serving shards ${lost[*]}"
proc_kill9 "${_REDIS_PROC[$(cluster_node_of "$victim")]}"
cluster_wait_ok 30000
for s in "${lost[@]}"; do
    p=$(cluster_shard_port "$s")
    assert_eq "$(redis-cli -p "$p" INFO replication | tr -d '\r' | sed -n 's/^connected_slaves://p')" 0 \
        "replicas of the promoted primary on $p"
done

# dump: "ID SHARD SCORE" of every ID the primaries hold
dump() {
    local p
    for p in $(cluster_primaries); do
        redis-cli -p "$p" EVAL "local out = {}
            for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
                local s = string.match(k, ':(%d+)}')
                local z = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
                for i = 1, #z, 2 do out[#out + 1] = z[i] .. ' ' .. s .. ' ' .. z[i + 1] end
            end return out" 0 "$NS"
    done
}

t0=$(local_ms)
rc=0
produce <second.txt 2>second.log || rc=$?
took=$(($(local_ms) - t0))
note "the producer exited $rc after $took ms; $(grep -c '^line ' second.log) lines reported failed"
assert_eq "$rc" 1 "the producer's exit status (lines on the lost primary failed)"
assert_le "$took" 8000 "the producer's run (retry_timeout_ms + 5 s)"

dump >ids.txt
assert_eq "$(wc -l <ids.txt)" 20000 "IDs the primaries hold"
# failed.txt: the IDs reported failed (line N is ID N - 1)
sed -n 's/^line \([0-9]*\): .*/\1/p' second.log | awk '{ printf "i%05d\n", $1 - 1 }' | sort -u >failed.txt
assert_eq "$(sed -n 's/^line [0-9]*: //p' second.log | grep -vc 'replicas')" 0 "reports not naming the missing replicas"
lostre=" ($(IFS='|'; echo "${lost[*]}")) "
awk -v re="$lostre" '$0 ~ re { print $1 }' ids.txt | sort >on_lost.txt
awk -v re="$lostre" '$0 !~ re { print $1 }' ids.txt | sort >on_healthy.txt
note "$(wc -l <on_lost.txt) IDs on the lost primary's shards, $(wc -l <on_healthy.txt) on the others"
assert_ge "$(wc -l <on_healthy.txt)" 1 "IDs on the healthy primaries"
assert_eq "$(comm -23 on_lost.txt failed.txt | wc -l)" 0 "lines on the lost primary not reported failed"
assert_eq "$(comm -12 on_healthy.txt failed.txt | wc -l)" 0 "lines on the healthy primaries reported failed"
assert_eq "$(awk -v re="$lostre" -v t="$far2" '$0 !~ re && $3 != t' ids.txt | wc -l)" 0 \
    "IDs on the healthy primaries without the second write's deadline"

# status and check name the primary short of replicas (check also finds
# no scanners here: exit 1 either way)
promoted=$(cluster_shard_port "${lost[0]}")
scale check --json >check.json || true
assert_eq "$(jq -r '[.problems[] | select(.problem == "replicas_missing") | .message] | join(";")' check.json)" \
    "node cluster: primary 127.0.0.1:$promoted has 0 replicas, redis.wait_replicas = 1: writes there cannot be confirmed (producers report them failed)" \
    "check's replicas_missing problems"
scale status --json >status.json || fail "status: exit status $?"
assert_eq "$(jq -r '[.nodes[] | select(.replicas_missing) | .primary] | join(",")' status.json)" "127.0.0.1:$promoted" \
    "status: primaries with replicas_missing"
scale status >status.txt || fail "status: exit status $?"
assert_file_match status.txt "^replicas missing: cluster primary 127.0.0.1:$promoted has 0 replicas online" "status's line"

# a replica again: the old primary rejoins as the promoted one's replica
redis_restart "$(cluster_node_of "$victim")"
cluster_wait_ok 30000
scale check --json >check.json || true
assert_eq "$(jq '[.problems[] | select(.problem == "replicas_missing")] | length' check.json)" 0 \
    "check's replicas_missing problems once the replica is back"
produce <second.txt 2>third.log || fail "the producer once the replica is back: exit status $? ($(head -n 3 third.log))"
dump >ids.txt
assert_eq "$(awk -v t="$far2" '$3 == t' ids.txt | wc -l)" 20000 "IDs with the second write's deadline"
