#!/usr/bin/env bash
# 0320-brokers-down: every broker down while 500 IDs fall due.
#
# scanner.max_inflight = 50, lease_ms = 2000 (so librdkafka gives up on an
# event after 1000 ms and the outage spans several give-up/re-claim rounds).
# For 3 s of the outage:
#  - the scanner keeps running and does not busy-loop: its CPU time (all
#    threads, /proc/PID/stat) stays under 30% of the wall time, and it runs
#    at most 250 Redis scripts a second (INFO commandstats; poll_ms = 10
#    means ~100: a loop that spins on Redis is mostly waiting for Redis, so
#    its own CPU time alone would not show it);
#  - at most max_inflight events are unanswered at any time (metrics gauge
#    `inflight`, sampled); the rest of the backlog stays in Redis (status
#    --json .due); live leases in Redis (claimed IDs whose lease has not run
#    out) stay under 2 x max_inflight: an event Kafka gave up on after
#    1000 ms keeps its 2000 ms lease, so at most two rounds are leased;
#  - events Kafka gave up on are counted (events_failed_total > 0).
# Then the brokers come back: the backlog starts draining within 2 s and all
# 500 IDs are delivered within 8 s, never early; Redis ends empty.
#
# Catches: a scanner that exits or spins while Kafka is away; claiming without
# the max_inflight bound (the whole backlog pulled into memory); an event
# librdkafka gave up on that is lost instead of claimed again; a reconnect
# back-off that leaves the backlog parked long after the brokers returned.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
metrics_config "lease_ms = 2000; max_inflight = 50;"
scale init 1 >/dev/null
events_follow events.json
scanner_start 0
pid=$(proc_pid "$SCANNER")
echo "touch warm +0" | produce
events_wait_ids events.json 1 10000

kafka_ctl "down 1"
down_ms=$(local_ms)
N=500
for ((i = 0; i < N; i++)); do printf 'touch d-%d +%d\n' "$i" $((i / 2)); done | produce
sleep 0.5 # all due now

evalsha_calls() { # scripts run by Redis so far (only the scanner uses EVALSHA here)
    local n
    n=$(rcli INFO commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
    echo "${n:-0}"
}
cpu0=$(proc_cpu_ms "$pid")
calls0=$(evalsha_calls)
t0=$(local_ms)
live_leases() { # claimed IDs of shard 0 whose lease has not run out (in the claims' records)
    rcli EVAL "$_CLAIM_OF_LUA
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local c = 0
        for _, l in ipairs(redis.call('HKEYS', KEYS[1])) do
            if string.sub(l, -3) == '.25' and tonumber(l) > now then
                c = c + #_claim_list(redis.call('HGET', KEYS[1], l)) / 2
            end
        end
        return c" 1 "$NS:f:0"
}
max_inflight=0 max_leases=0
while (($(local_ms) < t0 + 3000)); do
    v=$(metric "$mp" inflight)
    ((v > max_inflight)) && max_inflight=$v
    v=$(live_leases)
    ((v > max_leases)) && max_leases=$v
    sleep 0.1
done
cpu1=$(proc_cpu_ms "$pid")
calls1=$(evalsha_calls)
t1=$(local_ms)
proc_alive "$SCANNER" || fail "the scanner exited while the brokers were down"
cpu_pct=$(((cpu1 - cpu0) * 100 / (t1 - t0)))
calls_per_s=$(((calls1 - calls0) * 1000 / (t1 - t0)))
due=$(scale status --json | jq '.shard_info[0].due')
failed=$(metric "$mp" events_failed_total)
note "brokers down: cpu ${cpu_pct}% of $((t1 - t0)) ms, $calls_per_s Redis calls/s; max inflight $max_inflight; max live leases in Redis $max_leases; due $due; failed $failed"
assert_le "$cpu_pct" 30 "scanner CPU % while the brokers are down"
assert_le "$calls_per_s" 250 "scanner's Redis calls per second while the brokers are down (poll_ms 10)"
assert_le "$max_inflight" 50 "unanswered events (max_inflight 50)"
assert_ge "$max_inflight" 1 "unanswered events (the scanner must still try)"
assert_le "$max_leases" 100 "live leases in Redis (2 x max_inflight)"
assert_ge "$due" $((N - 100)) "due IDs parked in Redis"
assert_ge "$failed" 1 "events Kafka gave up on"
assert_eq "$(events_unique events.json)" 1 "IDs delivered while the brokers are down"

kafka_ctl "up 1"
up_ms=$(local_ms)
wait_until 2000 '(($(events_unique events.json) > 1))' || fail "nothing delivered within 2 s of the brokers' return"
note "first event $(($(local_ms) - up_ms)) ms after the brokers' return (down $((up_ms - down_ms)) ms)"
events_wait_ids events.json $((N + 1)) 8000
note "all $N delivered $(($(local_ms) - up_ms)) ms after the brokers' return"
ns_wait_empty 3000
assert_never_early events.json
scanner_stop
