#!/usr/bin/env bash
# 0081-layout-unknown-state: a layout whose state this version does not
# know (one a later lapse-scale may write) is refused
# with a line that names it, by the producer, a scanner and lapse-scale,
# never read as "stable" (routing by it could write an ID where its twin
# still fires), and so is a known one whose shard counts do not fit it
# (merging from as many shards as it has); nothing is written, nothing
# crashes. Back to "stable", all
# work again.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
write_config
scale init 2 >/dev/null
rcli HSET "$NS:layout" state shrinking >/dev/null
before=$(ns_data_keys)

rc=0
echo "touch dev-1 +600000" | produce 2>producer.err || rc=$?
((rc != 0 && rc < 128)) || fail "the producer ran on an unknown state: exit $rc"
assert_file_match producer.err 'state "shrinking" is not one this lapse knows' "the producer's error"

rc=0
scale status >status.out 2>status.err || rc=$?
((rc != 0 && rc < 128)) || fail "status ran on an unknown state: exit $rc"
assert_file_match status.err 'state "shrinking" is not one this lapse knows' "status's error"

rc=0
timeout 20 "$LAPSE_BIN/lapse-scanner" -c "$CONF" --shard 0 >scanner.out 2>scanner.err || rc=$?
((rc != 0 && rc != 124 && rc < 128)) || fail "the scanner ran on an unknown state: exit $rc"
assert_file_match scanner.err 'state "shrinking" is not one this lapse knows' "the scanner's error"
assert_eq "$(ns_data_keys)" "$before" "data keys after the refusals"

# a known state whose counts do not fit it: refused too, naming both
rcli HSET "$NS:layout" state merging >/dev/null
rc=0
echo "touch dev-1 +600000" | produce 2>producer2.err || rc=$?
((rc != 0 && rc < 128)) || fail "the producer ran on a merging layout of 2 shards from 2: exit $rc"
assert_file_match producer2.err 'state "merging" with 2 shards, 2 before' "the producer's error"
assert_eq "$(ns_data_keys)" "$before" "data keys after the refusals"

rcli HSET "$NS:layout" state stable >/dev/null
echo "touch dev-1 +600000" | produce || fail "the producer after the state came back"
scale status >/dev/null || fail "status after the state came back"
