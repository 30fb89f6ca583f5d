#!/usr/bin/env bash
# 0750-recovered-convert: watch records survive `init --small-keys` on a
# namespace in one zset a shard (they follow their IDs from the one-zset
# form's watch hashes into buckets).
#
# One shard in one zset: w-off (watch) times out and is offline; w-pend
# (watch) waits 3 s ahead; 200 far IDs keep the old keys busy. The scanner
# stops, the namespace is converted, and before any scanner drains the old
# keys a producer extends w-off: its recovered event must follow (the write
# finds its watch record in the old hash). Then a scanner runs: w-off's
# recovered event goes out, w-pend fires and goes offline; the offline
# list holds w-pend alone; later w-pend signals and recovers too.
# Catches: a converted shard whose flags omit its watch records (every
# watch record ignored until the drain happens to move it: recovered events
# lost, IDs never offline).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
write_config
scale init 1 --one-zset >/dev/null
events_follow events.json
scanner_start 0
S=$SCANNER

echo "watch w-off +50" | produce
wait_until 10000 '[[ $(scale_offline | cut -f1) == w-off ]]' || fail "w-off never offline: $(scale_offline)"
{
    echo "watch w-pend +4000"
    for i in $(seq 1 200); do echo "touch far-$i +3600000"; done
} | produce || fail "producer: $?"
proc_stop "$S" 10
assert_eq "$(rcli EXISTS "$NS:v:0" "$NS:o:0:w0")" 2 "the watch records in the one-zset form's watch hashes before"

scale init 1 --small-keys >convert.out || fail "init --small-keys: exit status $?"
assert_match "$(rcli GET "$NS:k:0")" ' [a-z]*o' "the state key's flags name the watch records"
echo "extend w-off +600000" | produce || fail "producer: $?"

recovered() { jq -R -r 'fromjson? | select(.type == "recovered") | .id' events.json | sort | paste -sd,; }
scanner_start 0
wait_until 10000 '[[ $(recovered) == w-off ]]' || fail "recovered events: '$(recovered)', not w-off"
wait_until 15000 '[[ $(scale_offline | cut -f1) == w-pend ]]' ||
    fail "offline after w-pend's timeout: '$(scale_offline | cut -f1 | paste -sd,)', not w-pend"
echo "extend w-pend +600000" | produce || fail "producer: $?"
wait_until 10000 '[[ $(recovered) == w-off,w-pend ]]' || fail "recovered events: '$(recovered)'"
assert_eq "$(scale_offline)" "" "offline at the end"
old_keys() { rcli EXISTS "$NS:z:0" "$NS:v:0" "$NS:o:0:w0" "$NS:o:0:w1"; }
wait_until 30000 '[[ $(old_keys) == 0 ]]' || fail "old keys left: $(old_keys) of z, v and the watch hashes"
