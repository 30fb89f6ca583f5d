#!/usr/bin/env bash
# 0393-claim-ahead: while a backlog drains, a scanner sends its next claim
# on a second connection before handing the current one's events to Kafka
# (claim.c: scanner_claim_ahead), so Redis claims while the scanner sends.
# 3,000 overdue IDs, batch 100: claims come from two client connections of
# the scanner (Redis MONITOR), and every ID is delivered exactly once, never
# early, and leaves Redis. With scanner.catchup_rate set, the budget is
# charged claim by claim: one connection only. Then SIGTERM in the middle of
# a drain of 20,000: the scanner exits 0 after sending (not dropping) the
# claim it had out ahead, so the next scanner finds no leased ID of its
# predecessor to take back, and drains the rest: every ID once, never early.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
claim_sha=$(lua_source claim | sha1sum | cut -d' ' -f1)

for mode in ahead paced; do
    rcli FLUSHALL >/dev/null
    if [[ $mode == ahead ]]; then
        SCANNER_CFG="poll_ms = 10; batch = 100;" write_config
    else
        SCANNER_CFG="poll_ms = 10; batch = 100; catchup_rate = 20000;" write_config
    fi
    scale init 1 >/dev/null
    now=$(now_ms)
    for i in $(seq 1 3000); do echo "ZADD $NS:z:0 $((now - 1000 - i)) $mode-$i"; done | rcli >/dev/null
    SPAWN_OUT=$T/monitor-$mode.log spawn "monitor-$mode" redis-cli -h 127.0.0.1 -p "$REDIS_PORT" MONITOR
    wait_until 3000 '[[ -s $T/monitor-'"$mode"'.log ]]' || fail "redis-cli MONITOR did not start"
    events_follow "events-$mode.json"
    scanner_start 0
    wait_until 15000 '[[ $(shard_card 0) == 0 ]]' ||
        fail "$mode: $(shard_card 0) IDs left after 15 s"
    events_wait_ids "events-$mode.json" 3000 10000
    scanner_stop
    proc_stop "monitor-$mode" 5
    events_follow_stop
    assert_once "events-$mode.json"
    assert_never_early "events-$mode.json"
    assert_eq "$(events_ids "events-$mode.json" | grep -c "^$mode-")" 3000 "$mode: events"
    assert_eq "$(rcli HLEN "$NS:f:0")" 0 "$mode: f entries left"
    conns=$(grep -F "\"$claim_sha\"" "monitor-$mode.log" | grep -v '\[0 lua\]' |
        sed 's/.*\[0 \([0-9.:]*\)\].*/\1/' | sort -u | wc -l)
    if [[ $mode == ahead ]]; then
        assert_eq "$conns" 2 "ahead: connections the claims came from"
    else
        assert_eq "$conns" 1 "paced (catchup_rate): connections the claims came from"
    fi
done

# SIGTERM mid-drain: the claim out ahead is sent and settled, not left leased
rcli FLUSHALL >/dev/null
SCANNER_CFG="poll_ms = 10; batch = 100;" write_config
scale init 1 >/dev/null
now=$(now_ms)
for i in $(seq 1 20000); do echo "ZADD $NS:z:0 $((now - 1000 - i % 500)) stop-$i"; done | rcli >/dev/null
events_follow events-stop.json
scanner_start 0
A=$SCANNER
# (the topic still holds the first two parts' events: count this part's)
wait_until 15000 '(($(grep -c "\"stop-" events-stop.json) >= 3000))' || fail "the drain did not start"
proc_stop "$A" 15
assert_eq "$PROC_RC" 0 "the scanner's exit status after SIGTERM mid-drain"
left=$(shard_card 0)
((left > 0)) || note "the drain ended before the SIGTERM took effect (fast machine)"
leased=$(ns_leases)
assert_eq "$leased" 0 "IDs left leased by the stopped scanner (its claim ahead was sent)"
scanner_start 0
B=$SCANNER
wait_until 5000 '[[ -s $T/'"$B"'.log ]] && grep -q ": active" "$T/'"$B"'.log"' || fail "B did not become active"
assert_file_match "$T/$B.log" ": active \\(token .*\\); 0 in-flight IDs of a previous holder due again" "B's log"
wait_until 20000 '[[ $(shard_card 0) == 0 ]]' || fail "$(shard_card 0) IDs left after 20 s"
events_wait_ids events-stop.json 20000 15000
scanner_stop
events_follow_stop
assert_once events-stop.json
assert_never_early events-stop.json
