#!/usr/bin/env bash
# 0927-cluster-wait-degraded-layout: with redis.wait_replicas = 1 on a Redis
# Cluster, a producer whose writes for one primary cannot be confirmed
# gives up on them within about redis.retry_timeout_ms, also when that
# primary holds the namespace's layout (which the producer rereads every
# second), with the default redis.wait_timeout_ms.
#
# 3 primaries with a replica each, 8 shards, retry_timeout_ms = 10000. The
# 20,000 IDs are written once while the cluster is whole. The primary
# holding the layout key is killed (kill -9) and not restarted: its replica
# is promoted with no replica of its own. A producer given 20,000 touches
# of those IDs then exits 1 within retry_timeout_ms + 5 s, and the
# promoted primary sees at most retry_timeout_ms / wait_timeout_ms + 5
# WAITs: the rounds of its own window (and of the batches pipelined
# before it opened), not one per batch (a layout read there made each
# batch's pipeline end in a WAIT on it, which waited out wait_timeout_ms;
# each batch then took over a second, so the next one read the layout
# again). Every line whose shard is on the promoted primary is reported
# failed, every other is applied and not reported. (Measured 2026-11-28:
# 11.4 s and 12 WAITs; 32.5 s and 31 WAITs before.) Test 0928 runs this
# with 200,000 lines and retry_timeout_ms + 10 s (DEGRADED_LINES,
# DEGRADED_EXTRA_MS; DEGRADED_PROBE=0 skips the part below).
#
# Then a producer with retry_timeout_ms = 1000 is fed lines for 2 s past
# the close of that primary's window: its probes (250 ms doubling) ask
# INFO how many replicas it has and, with 0, fail at once: not one WAIT
# there once the window closed (each would hold a batch wait_timeout_ms).
. "$(dirname "$0")/../lib.sh"

lines=${DEGRADED_LINES:-20000} extra_ms=${DEGRADED_EXTRA_MS:-5000}
cluster_start 3 1
kafka_start --brokers 1
CLUSTER_REDIS_EXTRA="wait_replicas = 1; retry_timeout_ms = 10000;"
cluster_config
scale init 8 >/dev/null || fail "init: exit status $?"

far1=$(($(now_ms) + 3600000)) far2=$(($(now_ms) + 7200000))
seq -f "touch i%05g @$far1" 0 $((lines - 1)) >first.txt
seq -f "touch i%05g @$far2" 0 $((lines - 1)) >second.txt
produce <first.txt 2>first.log || fail "writing the IDs while the cluster is whole: exit status $?"

# the primary holding the layout key
seed=$(cluster_primaries | sed -n 1p)
slot=$(redis-cli -p "$seed" CLUSTER KEYSLOT "$NS:layout:{$NS}")
victim=$(redis-cli -p "$seed" --json CLUSTER SLOTS 2>/dev/null |
    jq -r --argjson s "$slot" '.[] | select(.[0] <= $s and $s <= .[1]) | .[2][1]')
lost=()
for s in 0 1 2 3 4 5 6 7; do [[ $(cluster_shard_port "$s") == "$victim" ]] && lost+=("$s"); done
assert_ge "${#lost[@]}" 1 "shards on the layout's primary"
note "killing the primary on $victim (the layout's), serving shards ${lost[*]}"
proc_kill9 "${_REDIS_PROC[$(cluster_node_of "$victim")]}"
cluster_wait_ok 30000
promoted=$(cluster_shard_port "${lost[0]}")
assert_eq "$(redis-cli -p "$promoted" INFO replication | tr -d '\r' | sed -n 's/^connected_slaves://p')" 0 \
    "replicas of the promoted primary on $promoted"
redis-cli -p "$promoted" CONFIG RESETSTAT >/dev/null

t0=$(local_ms)
rc=0
produce <second.txt 2>second.log || rc=$?
took=$(($(local_ms) - t0))
waits=$(redis-cli -p "$promoted" INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_wait:calls=\([0-9]*\),.*/\1/p')
note "the producer exited $rc after $took ms; $(grep -c '^line ' second.log) lines reported failed;" \
    "${waits:-0} WAITs on the promoted primary"
assert_eq "$rc" 1 "the producer's exit status (lines on the lost primary failed)"
assert_le "${waits:-0}" 15 "WAITs on the promoted primary (retry_timeout_ms / wait_timeout_ms + 5)"
assert_le "$took" $((10000 + extra_ms)) "the producer's run of $lines lines (retry_timeout_ms + $((extra_ms / 1000)) s)"

# "ID SHARD SCORE" of every ID the primaries hold
for p in $(cluster_primaries); do
    redis-cli -p "$p" EVAL "local out = {}
        for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
            local s = string.match(k, ':(%d+)}')
            local z = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
            for i = 1, #z, 2 do out[#out + 1] = z[i] .. ' ' .. s .. ' ' .. z[i + 1] end
        end return out" 0 "$NS"
done >ids.txt
assert_eq "$(wc -l <ids.txt)" "$lines" "IDs the primaries hold"
sed -n 's/^line \([0-9]*\): .*/\1/p' second.log | awk '{ printf "i%05d\n", $1 - 1 }' | sort -u >failed.txt
assert_eq "$(sed -n 's/^line [0-9]*: //p' second.log | grep -vc 'replicas')" 0 "reports not naming the missing replicas"
lostre=" ($(IFS='|'; echo "${lost[*]}")) "
awk -v re="$lostre" '$0 ~ re { print $1 }' ids.txt | sort >on_lost.txt
awk -v re="$lostre" '$0 !~ re { print $1 }' ids.txt | sort >on_healthy.txt
assert_ge "$(wc -l <on_healthy.txt)" 1 "IDs on the healthy primaries"
assert_eq "$(comm -23 on_lost.txt failed.txt | wc -l)" 0 "lines on the lost primary not reported failed"
assert_eq "$(comm -12 on_healthy.txt failed.txt | wc -l)" 0 "lines on the healthy primaries reported failed"
assert_eq "$(awk -v re="$lostre" -v t="$far2" '$0 !~ re && $3 != t' ids.txt | wc -l)" 0 \
    "IDs on the healthy primaries without the second write's deadline"

[[ ${DEGRADED_PROBE:-1} == 1 ]] || exit 0
# probes once the window closed: no WAIT on the promoted primary
sed 's/retry_timeout_ms = 10000/retry_timeout_ms = 1000/' "$CONF" >probe.conf
seq -f "touch i%05g @$far2" 0 999 >chunk.txt
mkfifo feed
"$LAPSE_BIN/lapse-producer" -c probe.conf <feed 2>probe.log &
probe_pid=$!
exec 3>feed
closed_at=
end=$(($(local_ms) + 30000))
while (($(local_ms) < end)); do
    cat chunk.txt >&3 || break
    if [[ -z $closed_at ]] && grep -q '^line ' probe.log; then
        closed_at=$(local_ms)
        waits0=$(redis-cli -p "$promoted" INFO commandstats | tr -d '\r' |
            sed -n 's/^cmdstat_wait:calls=\([0-9]*\),.*/\1/p')
        end=$((closed_at + 2000))
    fi
done
exec 3>&-
rc=0
wait "$probe_pid" || rc=$?
assert_eq "$rc" 1 "the probing producer's exit status"
[[ -n $closed_at ]] || fail "the probing producer reported no line failed within 30 s"
waits=$(redis-cli -p "$promoted" INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_wait:calls=\([0-9]*\),.*/\1/p')
infos=$(redis-cli -p "$promoted" INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_info:calls=\([0-9]*\),.*/\1/p')
note "probing: $((waits - waits0)) WAITs, ${infos:-0} INFOs on the promoted primary in the 2 s after its window closed;" \
    "$(grep -c '^line ' probe.log) lines reported failed"
assert_eq "$((waits - waits0))" 0 "WAITs on the promoted primary once its window closed"
assert_eq "$(sed -n 's/^line [0-9]*: //p' probe.log | grep -vc "primary 127.0.0.1:$promoted has had fewer than 1 replicas")" 0 \
    "the probing producer's reports not naming the promoted primary's replicas"
