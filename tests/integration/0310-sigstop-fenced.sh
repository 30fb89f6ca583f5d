#!/usr/bin/env bash
# 0310-sigstop-fenced: a scanner paused past its lease is fenced off.
#
# A (active) and B (standby) serve shard 0 with lease_ms = 1000. A sends to a
# topic of its own (lapse.a), B to the usual one, so every event tells which
# scanner produced it; together they must hold every ID.
#  1. A gets SIGSTOP while events are in flight (acks slowed to 200 ms).
#  2. B takes the lock after the lease, takes back the IDs A had claimed, and
#     delivers them and a second stream produced meanwhile.
#  3. The IDs A had in flight are reset by the test (touch +60 s) once B has
#     delivered them; then A gets SIGCONT, and a third stream falls due.
#  4. A must not claim or send anything more: every event on lapse.a was
#     fired before the SIGSTOP; A's log says it lost the lease and went back
#     to standby (metrics: lease_held 0, fenced_total >= 1); the lock names B
#     all along (`lapse-scale status --json`); the resets survive the late
#     delivery reports A gets for those IDs after it resumes; every ID of the
#     three streams is delivered, never early.
#
# Catches: a claim that does not check the lock (A would claim part of the
# third stream: events on lapse.a fired after the pause — checked by
# removing the check from claim.lua); a resumed scanner that does not notice
# it lost the lease (no "lost the lease", lease_held 1) or takes the lock
# back from B; IDs of the paused scanner that nobody delivers; a resumed
# scanner that settles its stale acknowledgements over the resets. (In
# practice A's delivery reports come in after its first claim following
# SIGCONT; that claim is fenced and drops A's queued acks, so ack.lua's own
# lock check is not what this test observes.)
. "$(dirname "$0")/../lib.sh"

TOPIC_A=lapse.a
redis_start main
kafka_start "$TOPIC_A"
free_port >/dev/null
pa=$FREE_PORT
free_port >/dev/null
pb=$FREE_PORT
TOPIC=$TOPIC_A SCANNER_CFG="poll_ms = 10; lease_ms = 1000; metrics_port = $pa;" write_config "$T/a.conf"
SCANNER_CFG="poll_ms = 10; lease_ms = 1000; metrics_port = $pb;" write_config "$T/b.conf"
write_config
scale init 1 >/dev/null
events_follow events.json
TOPIC=$TOPIC_A events_follow events-a.json

CONF=$T/a.conf scanner_start 0
A=$SCANNER
wait_until 5000 '[[ $(holder_pid) == $(proc_pid $A) ]]' || fail "A did not take the lock within 5 s"
CONF=$T/b.conf scanner_start 0
B=$SCANNER
wait_until 5000 'grep -q "standby; held by" "$T/$B.log"' || fail "B does not say it is on standby"
apid=$(proc_pid "$A")
bpid=$(proc_pid "$B")

all() { cat events.json events-a.json; }
unique_all() { local n; n=$(all | jq -R -r 'fromjson? | .id' | sort -u | wc -l); echo $((n)); }

# ---- 1. pause A with events in flight
kafka_ctl "rtt 1 200"
for ((i = 0; i < 200; i++)); do printf 'touch s1-%d +%d\n' "$i" $((100 + i * 5)); done | produce
wait_until 10000 '[[ -s events-a.json ]] && (($(ns_leases) > 0))' ||
    fail "no point found where A had delivered some IDs and had others in flight"
kill -STOP "$apid"
stop_ms=$(local_ms)
mapfile -t inflight < <(inflight_ids 0)
note "A stopped with ${#inflight[@]} IDs in flight, $(events_unique events-a.json) delivered"
((${#inflight[@]} > 0)) || fail "A had nothing in flight when stopped"
kafka_ctl "rtt 1 0"

# ---- 2. B takes over and delivers
wait_until 3000 '[[ $(lock_pid 0) == "$bpid" ]]' || fail "B did not take the lock within 3 s of A's SIGSTOP"
note "B took over $(($(local_ms) - stop_ms)) ms after A's SIGSTOP"
assert_eq "$(holder_pid)" "$bpid" "pid in the lock (lapse-scale status) after the takeover"
for ((i = 0; i < 100; i++)); do printf 'touch s2-%d +%d\n' "$i" $((50 + i * 3)); done | produce
wait_until 5000 '(($(unique_all) >= 300))' || fail "only $(unique_all) of 300 IDs delivered while A is stopped"

# ---- 3. reset what A had in flight, resume A, a third stream
far=$(($(now_ms) + 60000))
for id in "${inflight[@]}"; do printf 'touch %s @%d\n' "$id" "$far"; done | produce
kill -CONT "$apid"
cont_ms=$(local_ms)
for ((i = 0; i < 200; i++)); do printf 'touch s3-%d +%d\n' "$i" $((20 + i * 4)); done | produce
wait_until 3000 'grep -q "lost the lease" "$T/$A.log"' || fail "A does not say it lost the lease after SIGCONT"
note "A noticed the lost lease $(($(local_ms) - cont_ms)) ms after SIGCONT"
holders=
while (($(local_ms) < cont_ms + 1500)); do
    holders+="$(holder_pid) "
    sleep 0.05
done
[[ $holders =~ ^($bpid )+$ ]] || fail "the lock left B after A resumed: holder pids $holders"
wait_until 5000 '(($(unique_all) >= 500))' || fail "only $(unique_all) of 500 IDs delivered"
sleep 0.3 # late events of A, if any, reach lapse.a

# ---- 4. A was fenced
assert_eq "$(metric $pa lease_held)" 0 "A's lease_held"
assert_ge "$(metric $pa fenced_total)" 1 "A's fenced_total"
assert_eq "$(metric $pb lease_held)" 1 "B's lease_held"
assert_eq "$(holder_pid)" "$bpid" "pid in the lock at the end"
assert_file_match "$T/$A.log" "standby; held by .*:$bpid:" "A's log after it resumed"
late=$(jq -R -c --argjson t "$stop_ms" 'fromjson? | select(.fired_ms >= $t) | {id, fired_ms}' events-a.json | head -5)
[[ -z $late ]] || fail "A sent events after its SIGSTOP (stopped at $stop_ms, resumed at $cont_ms): $late"
for id in "${inflight[@]}"; do
    assert_eq "$(id_score "$id")" "$far" "score of $id (in flight at A's pause, then reset)"
done
for ((i = 0; i < 200; i++)); do echo "s1-$i"; done >want
for ((i = 0; i < 100; i++)); do echo "s2-$i"; done >>want
for ((i = 0; i < 200; i++)); do echo "s3-$i"; done >>want
all | jq -R -r 'fromjson? | .id' | sort -u >got
missing=$(sort want | comm -23 - got | head -5)
[[ -z $missing ]] || fail "never delivered: $missing"
all >all.json
assert_never_early all.json
note "A sent $(events_unique events-a.json) IDs, B $(events_unique events.json)"

# clean up the resets; nothing else may be left
for id in "${inflight[@]}"; do echo "cancel $id"; done | produce
ns_wait_empty 3000
scanner_stop
