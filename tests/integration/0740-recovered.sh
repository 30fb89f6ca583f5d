#!/usr/bin/env bash
# 0740-recovered: both edges of a watched ID, and who is offline now.
#
# IDs written with `watch` (recovery on) fire a timeout as any other; once
# Kafka took it they are offline (`lapse-scale offline`, status, the gauge
# lapse_scanner_offline), and their next touch/extend/watch sends one
# "recovered" event, after the timeout, with the same Kafka key:
#  - w-1 comes back by `extend`: recovered with deadline_ms and fired_ms of
#    its timeout, recovered_ms >= fired_ms, down_ms = recovered - deadline;
#  - w-2 never comes back: it stays in the offline list, with its deadline
#    (until it is cancelled at the end: the list then says nobody is);
#  - w-3 is cancelled while offline: it leaves the list, no recovered event;
#  - p-1, written with `extend` only: a timeout, never offline, never
#    recovered, even when written again;
#  - w-4 signals while its timeout is being dispatched (every broker down:
#    claimed, sent, not acknowledged): once the brokers are back, its
#    timeout and then its recovered event arrive, and it is not offline;
#  - w-5 comes back and is cancelled before its recovered event went out:
#    the event still goes out (it did come back), and it is not offline;
#  - w-6, written with `extend`, gets its first `watch` while its timeout
#    is being dispatched: watched when Kafka takes the timeout, so the pair
#    arrives as for w-4 (protocol.md: decided when Kafka took it).
# `lapse-scale offline` for people: a header, ISO times, "offline for",
# the longest offline first (w-2 before w-5), --limit keeping the longest,
# a line (exit 0) when nobody is; --json in the same order.
# Every event is checked for its fields, and each recovered event comes after
# its timeout on the topic; nothing arrives twice.
#
# Catches: a recovered event without a timeout before it, one lost when the
# signal races the dispatch (the consumer would think the device down for
# good), a cancel that still sends one, an offline list that misses or
# keeps IDs, watch records for IDs that never asked for recovery.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
# (a 15 s lease: Kafka gives a timeout up after 80 % of it, and the race
# below needs it still in flight after the brokers come back, under a
# sanitizer on a loaded machine too)
metrics_config "lease_ms = 15000;"
scale init 2 >/dev/null
events_follow events.json
scanners_start 2

printf 'watch w-1 +200\nwatch w-2 +200\nwatch w-3 +200 with payload\nextend p-1 +200\n' | produce ||
    fail "lapse-producer exited with $?"
events_wait_ids events.json 4 10000
wait_until 5000 '[[ $(scale_offline | wc -l) == 3 ]]' ||
    fail "not 3 IDs offline: $(scale_offline | tr '\n' ' ')"
scale_offline | sort >offline.tsv
assert_eq "$(cut -f1 offline.tsv | paste -sd,)" "w-1,w-2,w-3" "the IDs offline"
for id in w-1 w-2 w-3; do
    d=$(jq -r --arg id "$id" 'select(.id == $id) | .deadline_ms' events.json)
    assert_eq "$(awk -v id="$id" '$1 == id { print $3 }' offline.tsv)" "$d" "$id's deadline in the offline list"
    since=$(awk -v id="$id" '$1 == id { print $4 }' offline.tsv)
    ((since >= d)) || fail "$id offline since $since, before its deadline $d"
done
scale offline --json | jq -e '.offline | length == 3 and all(.[]; has("id") and has("shard") and has("since_ms"))' >/dev/null ||
    fail "offline --json: $(scale offline --json)"
assert_eq "$(scale_offline --prefix w-2)" "$(grep '^w-2' offline.tsv)" "offline --prefix w-2"
assert_eq "$(scale_offline --limit 2 | wc -l)" 2 "offline --limit 2"
wait_until 15000 '(( $(metric $mp offline) + $(metric $((mp + 1)) offline) == 3 ))' ||
    fail "the offline gauges: $(metric $mp offline) + $(metric $((mp + 1)) offline), not 3"
scale status --json | jq -e "[.shard_info[].offline] | add == 3" >/dev/null ||
    fail "status --json: offline per shard $(scale status --json | jq -c "[.shard_info[].offline]")"

# recovered: IDs' recovered events, read back
recovered() { jq -R -r 'fromjson? | select(.type == "recovered") | .id' events.json | sort | paste -sd,; }
printf 'extend w-1 +60000\ncancel w-3\nextend p-1 +60000\n' | produce || fail "lapse-producer exited with $?"
wait_until 10000 '[[ $(recovered) == w-1 ]]' || fail "recovered events: '$(recovered)', not w-1"
rec=$(jq -c 'select(.type == "recovered")' events.json)
assert_eq "$(jq -r .id <<<"$rec")" w-1 "the recovered ID"
t=$(jq -c 'select(.type == "timeout" and .id == "w-1")' events.json)
jq -e -n --argjson r "$rec" --argjson t "$t" '
    ($r | keys_unsorted) == ["type","ns","id","deadline_ms","fired_ms","recovered_ms","down_ms","shard"]
    and $r.deadline_ms == $t.deadline_ms and $r.fired_ms >= $t.deadline_ms
    and $r.recovered_ms >= $r.fired_ms and $r.down_ms == $r.recovered_ms - $r.deadline_ms
    and $r.shard == $t.shard and $r.ns == $t.ns' >/dev/null ||
    fail "recovered event $rec against its timeout $t"
wait_until 5000 '[[ $(scale_offline | cut -f1) == w-2 ]]' ||
    fail "offline after the recovery and the cancel: $(scale_offline | tr '\n' ' ')"

# the race: w-4 signals while its timeout is in flight
kafka_ctl "down 1"
printf 'watch w-4 +100\nextend w-6 +100\n' | produce
wait_until 10000 '(( $(metric $mp inflight) + $(metric $((mp + 1)) inflight) >= 2 ))' ||
    fail "w-4's and w-6's timeouts were never sent"
printf 'watch w-4 +60000\nwatch w-6 +60000\n' | produce
kafka_ctl "up 1"
wait_until 15000 '[[ $(recovered) == w-1,w-4,w-6 ]]' || fail "recovered events: '$(recovered)', not w-1,w-4,w-6"
for w in w-4 w-6; do
    assert_eq "$(jq -r --arg w $w 'select(.id == $w) | .type' events.json | paste -sd,)" "timeout,recovered" \
        "$w's events, in topic order"
    wt=$(jq -c --arg w $w 'select(.id == $w and .type == "timeout")' events.json)
    wr=$(jq -c --arg w $w 'select(.id == $w and .type == "recovered")' events.json)
    jq -e -n --argjson r "$wr" --argjson t "$wt" '$r.deadline_ms == $t.deadline_ms' >/dev/null ||
        fail "$w: recovered $wr against timeout $wt"
done
assert_eq "$(scale_offline | cut -f1 | paste -sd,)" w-2 "offline after the race"

# w-5 comes back, and is cancelled before its recovered event went out (all
# brokers down): it came back, so the queued event still goes out
echo "watch w-5 +100" | produce
wait_until 10000 '[[ $(scale_offline | cut -f1 | paste -sd,) == w-2,w-5 || $(scale_offline | cut -f1 | paste -sd,) == w-5,w-2 ]]' ||
    fail "w-5 not offline: $(scale_offline | tr '\n' ' ')"
# the text form, for people: a header, ISO times, how long, oldest first
# (w-2 went offline long before w-5); --json in the same order
scale offline >offline.txt || fail "offline: exit status $?"
assert_eq "$(sed -n 1p offline.txt)" "namespace $NS: 2 IDs offline, longest first" "offline's first line"
assert_match "$(sed -n 2p offline.txt)" '^id +shard +deadline +offline since +offline for$' "offline's header"
iso='20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z'
assert_match "$(sed -n 3p offline.txt)" "^w-2 +[01] +$iso +$iso +[0-9]+\.[0-9] s$" "offline's first row (the oldest)"
assert_match "$(sed -n 4p offline.txt)" "^w-5 +[01] +$iso +$iso +[0-9]+\.[0-9] s$" "offline's second row"
assert_eq "$(wc -l <offline.txt)" 4 "offline's lines"
assert_eq "$(scale offline --json | jq -r '[.offline[].id, .total, .truncated] | join(",")')" "w-2,w-5,2,false" \
    "offline --json: ids oldest first, total, truncated"
assert_eq "$(scale offline --limit 1 | sed -n '1p;3p' | awk '{ print $1, $NF }' | paste -sd' ')" "namespace --limit) w-2 s" \
    "offline --limit 1: the longest offline, and says it cut"
assert_eq "$(scale offline --json --limit 1 | jq -r '[.offline[].id, .total, .truncated] | join(",")')" "w-2,2,true" \
    "offline --json --limit 1"
kafka_ctl "down 1"
echo "extend w-5 +60000" | produce
echo "cancel w-5" | produce
kafka_ctl "up 1"
wait_until 15000 '[[ $(recovered) == w-1,w-4,w-5,w-6 ]]' || fail "recovered events: '$(recovered)', not w-1,w-4,w-5,w-6"
assert_eq "$(scale_offline | cut -f1 | paste -sd,)" w-2 "offline after w-5's cancel"
# nobody offline: a line that says so, exit 0
rc=0
scale offline --prefix w-5 >none.txt 2>none.err || rc=$?
assert_eq "$rc:$(cat none.txt):$(cat none.err)" "0:namespace $NS: no IDs offline whose ID starts with w-5:" "offline with none to list"
echo "cancel w-2" | produce
wait_until 5000 '[[ -z $(scale_offline) ]]' || fail "w-2 still offline after its cancel"
assert_eq "$(scale offline)" "namespace $NS: no IDs offline" "offline with nobody offline"
# the order is by offline-since, not by shard: one of shard 1 goes offline
# first, then one of shard 0
pick() { for i in $(seq 0 99); do [[ $(scale get "o$1-$i" --json | jq .shard) == "$1" ]] && echo "o$1-$i" && return; done; }
A=$(pick 1) B=$(pick 0)
[[ -n $A && -n $B ]] || fail "no IDs of shards 1 and 0 among o1-0..99, o0-0..99"
echo "watch $A +100" | produce
wait_until 5000 '[[ $(scale_offline | cut -f1) == "$A" ]]' || fail "$A not offline"
echo "watch $B +100" | produce
wait_until 5000 '[[ $(scale_offline | wc -l) == 2 ]]' || fail "$B not offline"
assert_eq "$(scale offline | awk 'NR > 2 { print $1, $2 }' | paste -sd,)" "$A 1,$B 0" "offline: the longest offline first"
assert_eq "$(scale offline --json | jq -r '[.offline[].id] | join(",")')" "$A,$B" "offline --json: the longest offline first"
printf 'cancel %s\ncancel %s\n' "$A" "$B" | produce

# ordering on the topic: each recovered event after its timeout
jq -r '"\(.id) \(.type)"' events.json | awk '
    $2 == "timeout" { t[$1] = 1 }
    $2 == "recovered" && !t[$1] { print "recovered before timeout: " $1; bad = 1 }
    END { exit bad }' || fail "order"
assert_eq "$(jq -r '"\(.id) \(.type) \(.deadline_ms)"' events.json | sort | uniq -d | wc -l)" 0 "events twice"
assert_eq "$(jq -r 'select(.type == "recovered") | .id' events.json | sort | paste -sd,)" "w-1,w-4,w-5,w-6" "recovered events"
