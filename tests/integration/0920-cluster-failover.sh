#!/usr/bin/env bash
# 0920-cluster-failover: 3 primaries with a replica each, 8 shards,
# redis.wait_replicas = 1. While a producer streams 40,000 touches (half
# of them while the cluster fails over) and scanners fire IDs falling due
# every 20 ms, the primary serving the most shards is killed (kill -9); the
# cluster promotes its replica by itself.
# Once the old primary is back (a replica of the promoted one: until then
# the new primary has no replica for WAIT to count, and writes to its
# shards wait), the producer gets through its input and exits 0, and every
# write it reported applied is on the new primaries; firing resumes by
# itself: every ID fires, none early.
. "$(dirname "$0")/../lib.sh"

cluster_start 3 1
CLUSTER_REDIS_EXTRA="wait_replicas = 1; wait_timeout_ms = 1000;"
cluster_serve 8

t0=$(now_ms)
for ((i = 0; i < 300; i++)); do printf 'touch f%03d @%d\n' "$i" $((t0 + 3000 + i * 20)); done >fires.txt
produce <fires.txt || fail "writing the IDs to fire: exit status $?"

far=$((t0 + 3600000))
# chunk K: 2000 touches of new IDs, all due in an hour
chunk() { seq -f "touch w$1-%04g @$far" 0 1999; }
sp_producer stream
fd=${SP_FD[stream]}

# stream_count: the streamed IDs the primaries hold now
stream_count() {
    local p n sum=0
    for p in $(cluster_primaries); do
        n=$(redis-cli -p "$p" EVAL "local c = 0
            for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
                c = c + redis.call('ZCOUNT', k, ARGV[2], ARGV[2]) end return c" 0 "$NS" "$far")
        [[ $n =~ ^[0-9]+$ ]] && sum=$((sum + n))
    done
    echo "$sum"
}

# the victim: the primary serving the most shards, once the stream is under way
victim=$(cluster_busiest_primary 8)
for k in 0 1 2 3 4; do chunk "$k" >&"$fd"; done
wait_until 20000 '(($(stream_count) >= 4000))' || fail "the stream did not get under way within 20 s"
before=$(stream_count)
tkill=$(now_ms)
proc_kill9 "${_REDIS_PROC[$(cluster_node_of "$victim")]}"
note "killed the primary on $victim with $before streamed IDs stored"
# more writes while the cluster fails over (from the background: the FIFO
# fills while the producer waits for the cluster)
( for ((k = 5; k < 20; k++)); do chunk "$k"; done >&"$fd" ) &
writer=$!

cluster_wait_ok 30000
note "the cluster promoted a replica $(($(now_ms) - tkill)) ms after the kill"
# its new primary has no replica left for WAIT to count until the old
# primary comes back, as a replica of it (what an operator does)
redis_restart "$(cluster_node_of "$victim")"
cluster_wait_ok 30000
wait "$writer" || fail "writing the stream failed"
printf 'touch end-marker @%d\n' "$far" >&"$fd"
wait_until 90000 '[[ -n $(sp_where end-marker) ]]' || fail "the producer did not get through its input within 90 s of the failover"
proc_stop stream 10
assert_eq "$PROC_RC" 0 "the streaming producer's exit status"
assert_eq "$(stream_count)" 40001 "streamed IDs (and the marker) on the primaries after the failover"

# firing resumed: every ID fired, none early
wait_until 30000 '[[ $(events_unique events.json) -ge 300 ]]' ||
    fail "$(events_unique events.json) of 300 IDs fired within 30 s of the failover"
events_follow_stop
assert_never_early events.json
assert_eq "$(events_ids events.json | grep -c -v '^f')" 0 "events of other IDs"
