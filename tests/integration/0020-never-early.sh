#!/usr/bin/env bash
# 0020-never-early: 300 IDs with absolute deadlines spread over the next 2 s,
# scanners already running: every event has fired_ms >= deadline_ms, and
# deadline_ms is exactly the @<ms> that was set.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
write_config
scale init 4 >/dev/null
scanners_start 4
events_follow events.json

t0=$(now_ms)
: >input
: >want.tsv
for ((i = 0; i < 300; i++)); do
    at=$((t0 + 300 + i * 2000 / 300))
    printf 'touch ne-%d @%d\n' "$i" "$at" >>input
    printf 'ne-%d\t%d\n' "$i" "$at" >>want.tsv
done
produce <input || fail "lapse-producer exited with $?"

events_wait_ids events.json 300 15000
events_follow_stop

assert_never_early events.json
assert_once events.json
jq -r '"\(.id)\t\(.deadline_ms)"' events.json | sort >got.tsv
sort want.tsv | diff - got.tsv >d.diff || { head -10 d.diff >&2; fail "deadline_ms differs from the @ms set"; }
note "lateness ms: max $(jq -s 'map(.fired_ms - .deadline_ms) | max' events.json)," \
    "mean $(jq -s 'map(.fired_ms - .deadline_ms) | add / length | floor' events.json)"
ns_wait_empty 5000
