#!/usr/bin/env bash
# 0335-produce-fatal: one Produce answer with OUT_OF_ORDER_SEQUENCE_NUMBER
# (45) — librdkafka's idempotent producer raises a *fatal* error on it
# ("sequence desynchronization"); its documentation says to create a new
# producer instance — must not stop the shard for good.
#
# 50 IDs fall due right after the error is injected (lease_ms = 2000). The
# shard must keep being served: either the scanner survives (it recreates its
# Kafka producer; the IDs of the dead producer come back when their leases
# run out), or it exits with a status the shipped unit restarts
# (deploy/systemd/lapse-scanner@.service.in has RestartPreventExitStatus=2 3, so not 2
# or 3) — then this test starts it again, as systemd would after
# RestartSec — and either way all 50 IDs are delivered within 8 s, never
# early, and Redis ends empty.
#
# When it survives, its books must balance afterwards: the inflight gauge
# returns to 0, and SIGTERM ends it with status 0 within 3 s and "0
# unanswered" (events of the dead producer that were never answered would
# hold back claims and make every shutdown wait its full 10 s).
#
# Catches: a broker's sequence error turning into an exit status that the
# unit never restarts (the shard is left unserved until an operator acts),
# IDs lost with the dead producer, or in-flight accounting that leaks them.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
metrics_config "lease_ms = 2000;"
scale init 1 >/dev/null
events_follow events.json
SPAWN_WATCH=0 scanner_start 0
first=$SCANNER
echo "touch warm +0" | produce
events_wait_ids events.json 1 10000

kafka_ctl "error 0 45 1"
for ((i = 0; i < 50; i++)); do printf 'touch oos-%d +%d\n' "$i" $((50 + i * 5)); done | produce
restarted=0
end=$(($(local_ms) + 8000))
while (($(events_unique events.json) < 51)); do
    (($(local_ms) < end)) || fail "only $(events_unique events.json) of 51 IDs delivered within 8 s"
    if ((!restarted)) && ! proc_alive "$first"; then
        proc_stop "$first" 1
        note "the scanner exited with status $PROC_RC: $(grep -m1 -i 'fatal' "$T/$first.log" | cut -c1-200)"
        [[ $PROC_RC != 2 && $PROC_RC != 3 ]] ||
            fail "the scanner exited with status $PROC_RC after one OUT_OF_ORDER_SEQUENCE_NUMBER answer; deploy/systemd/lapse-scanner@.service.in (RestartPreventExitStatus=2 3) never restarts it, so the shard stays unserved"
        sleep 1 # RestartSec
        scanner_start 0
        restarted=1
    fi
    sleep 0.05
done
ns_wait_empty 5000
assert_never_early events.json
if ((!restarted)); then
    proc_alive "$first" || fail "the scanner exited after delivering everything"
    note "survived: $(grep -m1 'starting a new' "$T/$first.log" | cut -c1-160)"
    # the purged events of the old producer are all accounted for: nothing
    # is left "unanswered" to hold back claims or the shutdown
    assert_eq "$(metric $mp inflight)" 0 "inflight gauge after the producer restart"
    proc_stop "$first" 10
    assert_eq "$PROC_RC" 0 "exit status after SIGTERM"
    assert_le "$PROC_MS" 3000 "ms to exit after SIGTERM"
    assert_file_match "$T/$first.log" 'stopped \(.*, 0 unanswered\)' "the scanner's last line"
fi
scanner_stop
