#!/usr/bin/env bash
# 0340-redis-restart-aof: Redis (appendonly yes, appendfsync always) restarts
# under a running scanner.
#
# 300 IDs: 100 due at once, 200 due between +600 and +6600 ms. While the
# later ones are being delivered (acks slowed to 100 ms, so some are in
# flight), Redis is stopped (SIGTERM) and started again on the same port from
# its AOF. Then:
#  - the scanner is still running (it waits out the outage, no exit) and
#    counts the reconnection (redis_reconnects_total >= 1);
#  - every ID is delivered at least once, never early (judged by the
#    deadlines the events carry, which the AOF kept), and Redis ends empty;
#  - the IDs that were not yet due at the restart fire with the deadlines
#    they were given before it.
#
# Catches: a scanner that exits (or hangs) when its Redis connection drops;
# one that never reconnects or never reloads its scripts into the restarted
# server (NOSCRIPT); an acknowledged ID whose ack is dropped in the outage
# while its event never arrived; deadlines lost or changed across the restart.
. "$(dirname "$0")/../lib.sh"

redis_start main --appendonly yes --appendfsync always
kafka_start
metrics_config "lease_ms = 2000;"
scale init 1 >/dev/null
events_follow events.json
scanner_start 0
echo "touch warm +0" | produce
events_wait_ids events.json 1 10000

kafka_ctl "rtt 1 100"
{
    for ((i = 0; i < 100; i++)); do printf 'touch now-%d +0\n' "$i"; done
    # (spread over 6 s: on a loaded machine, over 2 s they were all due and
    # claimed, out of the zset, by the time Redis restarted)
    for ((i = 0; i < 200; i++)); do printf 'touch later-%d +%d\n' "$i" $((600 + i * 30)); done
} | produce
shard_z 0 | tr ' ' '\t' | grep '^later-' | sort >deadlines.want
assert_eq "$(wc -l <deadlines.want)" 200 "later IDs pending before the restart"

wait_until 5000 '(($(events_unique events.json) > 120 && $(ns_leases) > 0))' ||
    fail "no point found where later IDs were being delivered with some in flight"
note "restarting Redis with $(events_unique events.json) delivered, $(ns_leases) claimed"
t0=$(local_ms)
redis_restart main
note "Redis was away $(($(local_ms) - t0)) ms"
proc_alive "$SCANNER" || fail "the scanner exited when Redis went away"
assert_ge "$(shard_card 0)" 1 "IDs pending after the AOF reload"
kafka_ctl "rtt 1 0"

events_wait_ids events.json 301 10000
ns_wait_empty 5000
proc_alive "$SCANNER" || fail "the scanner exited after Redis came back"
assert_ge "$(metric $mp redis_reconnects_total)" 1 "redis_reconnects_total"
assert_never_early events.json
jq -r 'select(.id | startswith("later-")) | "\(.id)\t\(.deadline_ms)"' events.json | sort -u >deadlines.got
diff deadlines.want deadlines.got >deadlines.diff ||
    fail "later IDs fired with other deadlines than given before the restart: $(head -6 deadlines.diff | tr '\n' ' ')"
scanner_stop
