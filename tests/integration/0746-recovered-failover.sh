#!/usr/bin/env bash
# 0746-recovered-failover: the timeout/recovered pair survives a Sentinel
# failover (kill -9 of the primary) with writes confirmed by a replica.
#
# One node "lapse-a" (primary a, replicas b and c, three sentinels),
# redis.wait_replicas = 1, two shards, every broker down around the kill:
#  - f-01..f-20 went offline before; they signal with the brokers down, so
#    their recovered events are queued and in flight when a dies;
#  - f-21..f-40 went offline before and signal after the failover;
#  - g-01..g-20 time out with the brokers down (their timeouts in flight
#    when a dies).
# Then the brokers come back: f-01..f-40 are online again and exactly
# g-01..g-20 offline (their timeouts sent from the claim records the new
# primary holds). Then g-01..g-20 signal. Every one of the 60 IDs gets its
# timeout and then its recovered event, for the same deadline, on the topic;
# copies of a recovered event (an ack that died with a) are the same, byte
# for byte; nobody is offline at the end.
#
# Catches: watch records or queued recovered events that live only on the
# primary (lost with it), a pair split by the failover, copies that disagree.
. "$(dirname "$0")/../lib.sh"

sentinel_node
kafka_start --brokers 1
metrics_config "lease_ms = 2000;"
sentinel_config "wait_replicas = 1;"
scale init 2 >/dev/null || fail "init through Sentinel: exit status $?"
events_follow events.json
scanner_start 0
scanner_start 1

ids() { seq -f "$1-%02g" "$2" "$3"; }
inflight() { echo $(($(metric $mp inflight) + $(metric $((mp + 1)) inflight))); }
ids f 1 40 | awk '{ print "watch " $1 " +100" }' | produce || fail "producer: exit status $?"
wait_until 15000 '[[ $(scale_offline | wc -l) == 40 ]]' || fail "not 40 offline: $(scale_offline | wc -l)"

kafka_ctl "down 1"
ids g 1 20 | awk '{ print "watch " $1 " +100" }' | produce || fail "producer: exit status $?"
ids f 1 20 | awk '{ print "extend " $1 " +60000" }' | produce || fail "producer: exit status $?"
wait_until 15000 '(( $(inflight) >= 40 ))' || fail "in flight before the kill: $(inflight), not 40"
redis_kill9 a
pa=$(redis_port a)
wait_until 20000 '[[ $(sentinel_primary lapse-a) != "$pa" ]]' || fail "no new primary 20 s after the kill"
ids f 21 40 | awk '{ print "extend " $1 " +60000" }' | produce || fail "producer after the failover: exit status $?"
kafka_ctl "up 1"
REDIS_PORT=$(sentinel_primary lapse-a)
offline() { scale_offline | cut -f1 | sort | paste -sd,; }
want=$(ids g 1 20 | paste -sd,)
wait_until 20000 '[[ $(offline) == "$want" ]]' || fail "offline after the failover: $(offline), not g-01..g-20"
ids g 1 20 | awk '{ print "extend " $1 " +60000" }' | produce || fail "producer: exit status $?"

recovered() { jq -r 'select(.type == "recovered") | .id' events.json | sort -u | wc -l; }
missing() { comm -23 <({ ids f 1 40; ids g 1 20; } | sort) <(jq -r 'select(.type == "recovered") | .id' events.json | sort -u) | paste -sd' '; }
wait_until 30000 '(( $(recovered) == 60 ))' || fail "recovered events for $(recovered) IDs, not 60; none for $(missing)"
wait_until 10000 '[[ -z $(scale_offline) ]]' || fail "offline at the end: $(scale_offline | cut -f1 | paste -sd' ')"
sleep 0.3 # a wrong extra event shows
events_follow_stop

# each ID: a timeout, then recovered events for its deadline, all the same
jq -r '"\(.id)\t\(.type)\t\(.deadline_ms)"' events.json | awk -F'\t' '
    $2 == "timeout" { t[$1] = t[$1] " " $3 }
    $2 == "recovered" && index(t[$1] " ", " " $3 " ") == 0 { print $1 ": recovered for " $3 " before its timeout"; bad = 1 }
    END { exit bad }' || fail "recovered before timeout"
for id in $(ids f 1 40) $(ids g 1 20); do
    n=$(jq -c --arg id "$id" 'select(.id == $id and .type == "recovered")' events.json | sort -u | wc -l)
    [[ $n == 1 ]] || fail "$id: $n different recovered events: $(grep "\"$id\"" events.json | grep recovered)"
done
note "recovered events sent: $(grep -c '"recovered"' events.json) for 60 IDs"
assert_eq "$(jq -r 'select(.type == "timeout") | .id' events.json | sort -u | wc -l)" 60 "IDs with a timeout"
