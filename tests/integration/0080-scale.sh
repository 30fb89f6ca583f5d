#!/usr/bin/env bash
# 0080-scale: lapse-scale init/status, and what is refused: a shard count
# that is not a power of two, re-init with another count, and a producer
# on a namespace not initialised; finish without a split changes nothing
# and says so (exit 0, as init with the same count).
# status --json agrees with the layout hash in Redis.
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config

# before init: the producer refuses, with a clear message, and writes nothing
rc=0
echo "touch early +600000" | produce 2>producer.err || rc=$?
((rc != 0)) || fail "the producer accepted input before init"
assert_file_match producer.err 'init|layout' "producer's error before init"
assert_eq "$(rcli EXISTS "$NS:layout")" 0 "layout after a producer ran before init"
assert_eq "$(ns_data_keys)" 0 "data keys after a producer ran before init"

# bad shard counts change nothing
for n in 3 0 -4 abc 6 1.5 8192 ''; do
    rc=0
    scale init $n >init.out 2>init.err || rc=$?
    ((rc != 0 && rc < 128)) || fail "init '$n': exit status $rc"
    [[ -s init.err ]] || fail "init '$n': nothing on stderr"
    assert_eq "$(rcli EXISTS "$NS:layout")" 0 "layout after init '$n'"
done

scale init 4 >/dev/null || fail "init 4: exit status $?"
scale status --json >status.json || fail "status --json: exit status $?"
jq -e 'type == "object"' status.json >/dev/null || fail "status --json is not one JSON object: $(head -c 300 status.json)"
assert_eq "$(jq -s length status.json)" 1 "JSON values printed by status --json"
assert_eq "$(jq .shards status.json)" 4 "status .shards"
assert_match "$(jq .prev_shards status.json)" '^(0|4)$' "status .prev_shards"
assert_eq "$(jq -r .state status.json)" stable "status .state"
assert_eq "$(jq -r '.epoch | type' status.json)" number "type of status .epoch"
epoch=$(jq .epoch status.json)
assert_eq "$(rcli HGET "$NS:layout" shards)" 4 "layout shards in Redis"
assert_eq "$(rcli HGET "$NS:layout" state)" stable "layout state in Redis"
assert_eq "$(rcli HGET "$NS:layout" epoch)" "$epoch" "layout epoch in Redis"
scale status >status.txt || fail "status: exit status $?"
[[ -s status.txt ]] || fail "status printed nothing"
layout=$(rcli HGETALL "$NS:layout" | paste -sd' ')

scale init 4 >/dev/null 2>&1 || fail "init 4 again (idempotent): exit status $?"
assert_eq "$(rcli HGETALL "$NS:layout" | paste -sd' ')" "$layout" "layout after init 4 again"

for cmd in "init 8" "init 2"; do
    rc=0
    scale $cmd >cmd.out 2>cmd.err || rc=$?
    ((rc != 0 && rc < 128)) || fail "'$cmd' on a stable 4-shard layout: exit status $rc"
    [[ -s cmd.err ]] || fail "'$cmd': nothing on stderr"
    assert_eq "$(rcli HGETALL "$NS:layout" | paste -sd' ')" "$layout" "layout after '$cmd'"
done
scale finish >cmd.out || fail "finish on a stable layout (nothing to do): exit status $?"
assert_file_match cmd.out 'no split or merge to finish' "finish on a stable layout"
assert_eq "$(rcli HGETALL "$NS:layout" | paste -sd' ')" "$layout" "layout after finish"

# after init the producer works and puts IDs where the hash says
for id in a b c d e f g h; do echo "touch $id +600000"; done | produce || fail "producer after init: $?"
for id in a b c d e f g h; do
    s=$(id_shard $id)
    [[ -n $s ]] || fail "$id not stored"
    h=$(hash_shard $id 4)
    [[ -z $h ]] || assert_eq "$s" "$h" "shard of $id"
done
scale status --json >status2.json
assert_eq "$(jq .shards status2.json)" 4 "status .shards with IDs stored"
