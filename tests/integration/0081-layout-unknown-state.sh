#!/usr/bin/env bash
# 0081-layout-unknown-state: a layout whose state this version does not
# know (one a later lapse-scale may write, e.g. during a merge) is refused
# with a line that names it, by the producer, a scanner and lapse-scale,
# never read as "stable" (routing by it could write an ID where its twin
# still fires); nothing is written, nothing crashes. Back to "stable", all
# work again.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
write_config
scale init 2 >/dev/null
rcli HSET "$NS:layout" state merging >/dev/null
before=$(ns_data_keys)

rc=0
echo "touch dev-1 +600000" | produce 2>producer.err || rc=$?
((rc != 0 && rc < 128)) || fail "the producer ran on an unknown state: exit $rc"
assert_file_match producer.err 'state "merging" is not one this lapse knows' "the producer's error"

rc=0
scale status >status.out 2>status.err || rc=$?
((rc != 0 && rc < 128)) || fail "status ran on an unknown state: exit $rc"
assert_file_match status.err 'state "merging" is not one this lapse knows' "status's error"

rc=0
timeout 20 "$LAPSE_BIN/lapse-scanner" -c "$CONF" --shard 0 >scanner.out 2>scanner.err || rc=$?
((rc != 0 && rc != 124 && rc < 128)) || fail "the scanner ran on an unknown state: exit $rc"
assert_file_match scanner.err 'state "merging" is not one this lapse knows' "the scanner's error"
assert_eq "$(ns_data_keys)" "$before" "data keys after the refusals"

rcli HSET "$NS:layout" state stable >/dev/null
echo "touch dev-1 +600000" | produce || fail "the producer after the state came back"
scale status >/dev/null || fail "status after the state came back"
