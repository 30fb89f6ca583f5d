#!/usr/bin/env bash
# 0815-small-keys-readers: the read-only tools on shards in small keys
# (common/bucket.h, lib/bucket.lua) say what they say of one-key shards.
#
# Two namespaces on one Redis, 2 shards each, the same 3000 writes (500
# overdue, 500 due within a minute, 10 minutes, an hour, a day, 500 later;
# every third with a payload, the same absolute deadlines): "one" as lapse
# always wrote it, "small" with each shard's state key set before anything
# was written ("3 2": 10 buckets, two of them split by linear hashing; "2
# 1": 5), so the scripts wrote buckets (no zset NS:z:I, buckets NS:z:I:J).
#  - the bucket hash of the Lua (bk_hash, EVAL of lib/bucket.lua) gives
#    the vectors tests/unit/test_bucket.c pins for the C one;
#  - status --json: pending and due per shard the same as "one"'s (and
#    the known counts in total), overdue_ms within a few seconds of it;
#  - status --due --json: every shard's row (but its clock) and the total
#    the same as "one"'s, the total the known counts;
#  - get ID --json for IDs of each kind: deadline_ms and payload the same
#    as "one"'s and as written;
#  - check --json: the same problems (no scanners) on both;
#  - split 2 -> 4: status --json .to_move the same on both (every bucket
#    walked); finish --drain moves them (0 left) and pending stays 3000;
#  - a scanner of "small" shard 0 with the only broker down holds its
#    overdue IDs in flight (out of the buckets, in a claim's record):
#    status --json and status --due --json count them in flight, none due.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
SCANNER_CFG="poll_ms = 10; lease_ms = 3000;"
for ns in one small; do
    NS=$ns CONF=$T/$ns.conf write_config
done
use() { NS=$1 CONF=$T/$1.conf; }

# the Lua's bucket hash: test_bucket.c's vectors
lua_hash() { # ID...: bk_hash of each
    rcli EVAL "$(sh "$LAPSE_ROOT/scripts/lua-source" "$LAPSE_ROOT/common/lua/lib/bucket.lua")
local out = {}
for i = 1, #ARGV do out[i] = bk_hash(ARGV[i]) end
return out" 0 "$@" | tr '\n' ' '
}
assert_eq "$(lua_hash "" a dev-42 order:1234567 "$(printf 'x\377y')" "$(head -c 512 /dev/zero | tr '\0' z)")" \
    "0 470938373 2770676572 3105038160 1410198711 1190629869 " "bk_hash of test_bucket.c's vectors"

use small
scale init 2 >/dev/null
rcli SET "$NS:k:0" "3 2" >/dev/null
rcli SET "$NS:k:1" "2 1" >/dev/null
use one
scale init 2 --one-zset >/dev/null

names=(overdue next_1m next_10m next_1h next_1d later)
offsets=(-5000 30000 300000 1800000 18000000 259200000)
now=$(now_ms)
for b in 0 1 2 3 4 5; do
    for ((i = 0; i < 500; i++)); do
        if ((i % 3 == 0)); then
            echo "touch ${names[b]}-$i @$((now + offsets[b])) pay-${names[b]}-$i"
        else
            echo "touch ${names[b]}-$i @$((now + offsets[b]))"
        fi
    done
done >writes.txt
for ns in one small; do
    use $ns
    produce <writes.txt 2>/dev/null || fail "producer ($ns): exit status $?"
done

use small
assert_eq "$(rcli EXISTS "$NS:z:0" "$NS:z:1" "$NS:p:0" "$NS:p:1")" 0 "small: no one-key zset or payloads"
assert_eq "$(rcli --scan --pattern "$NS:z:0:*" | wc -l) $(rcli --scan --pattern "$NS:z:1:*" | wc -l)" "10 5" \
    "small: the buckets of each shard hold IDs"
n=0
for j in $(seq 0 9); do n=$((n + $(rcli ZCARD "$NS:z:0:$j"))); done
for j in $(seq 0 4); do n=$((n + $(rcli ZCARD "$NS:z:1:$j"))); done
assert_eq "$n" 3000 "small: the buckets hold every ID"

# status --json
for ns in one small; do
    use $ns
    scale status --json >status-$ns.json || fail "status --json ($ns): exit status $?"
done
row='[.shard_info[] | [.shard, .pending, .due, .inflight]]'
assert_eq "$(jq -c "$row" status-small.json)" "$(jq -c "$row" status-one.json)" "status --json: pending, due, inflight"
assert_eq "$(jq '[.shard_info[].pending] | add' status-small.json) $(jq '[.shard_info[].due] | add' status-small.json)" \
    "3000 500" "status --json: pending and due in total"
for s in 0 1; do
    o1=$(jq ".shard_info[$s].overdue_ms" status-one.json)
    o2=$(jq ".shard_info[$s].overdue_ms" status-small.json)
    _int "$o1" "one: shard $s overdue_ms"
    _int "$o2" "small: shard $s overdue_ms"
    d=$((o2 - o1))
    assert_le "${d#-}" 5000 "shard $s overdue_ms, small ($o2) against one ($o1)"
    assert_ge "$o2" 5000 "small: shard $s overdue_ms"
done

# status --due --json
for ns in one small; do
    use $ns
    scale status --due --json >due-$ns.json || fail "status --due --json ($ns): exit status $?"
done
assert_eq "$(jq -c '[.shard_info[] | del(.now_ms, .node)]' due-small.json)" \
    "$(jq -c '[.shard_info[] | del(.now_ms, .node)]' due-one.json)" "status --due --json: every shard's row"
assert_eq "$(jq -c '[.total | .overdue, .next_1m, .next_10m, .next_1h, .next_1d, .later, .inflight, .pending]' due-small.json)" \
    "[500,500,500,500,500,500,0,3000]" "status --due --json: the total"

# get ID --json
for b in 0 2 5; do
    for i in 0 1 3 299 499; do
        id=${names[b]}-$i
        use one
        scale get "$id" --json >get-one.json || fail "get $id (one): exit status $?"
        use small
        scale get "$id" --json >get-small.json || fail "get $id (small): exit status $?"
        want=$(jq -c '[.deadline_ms, .payload, .shard]' get-one.json)
        assert_eq "$(jq -c '[.deadline_ms, .payload, .shard]' get-small.json)" "$want" "get $id --json"
        pay=null
        ((i % 3 == 0)) && pay="\"pay-$id\""
        assert_eq "$want" "[$((now + offsets[b])),$pay,$(jq .shard get-one.json)]" "get $id --json (as written)"
    done
done

# check --json: no scanners on either, IDs 5 s overdue
for ns in one small; do
    use $ns
    scale check --max-overdue 1 --json >check-$ns.json && fail "check ($ns) found no problem"
done
probs='[.problems[] | [.shard, .problem]]'
assert_eq "$(jq -c "$probs" check-small.json)" "$(jq -c "$probs" check-one.json)" "check --json's problems"
assert_match "$(jq -c "$probs" check-small.json)" '\[0,"overdue"\]' "check --json: shard 0's overdue IDs"

# a split: the IDs to move, walked in every bucket
for ns in one small; do
    use $ns
    scale split >/dev/null || fail "split ($ns): exit status $?"
    scale status --json >split-$ns.json || fail "status --json during the split ($ns): exit status $?"
done
mv=$(jq .to_move split-one.json)
_int "$mv" "one: to_move"
assert_ge "$mv" 1 "one: to_move"
assert_eq "$(jq .to_move split-small.json)" "$mv" "status --json .to_move during the split"
use small
scale finish --drain >/dev/null || fail "finish --drain (small): exit status $?"
scale status --json >after.json || fail "status --json after the split: exit status $?"
assert_eq "$(jq -c '[.state, .shards, ([.shard_info[].pending] | add)]' after.json)" '["stable",4,3000]' \
    "small after finish --drain: state, shards, pending"

# in flight: shard 0's overdue IDs, held by its scanner while Kafka is down
use small
kafka_ctl "down 1"
scale status --due --json >due0.json || fail "status --due --json: exit status $?"
o0=$(jq '.shard_info[0].overdue' due0.json)
_int "$o0" "small: shard 0 overdue"
assert_ge "$o0" 1 "small: shard 0 overdue"
scanner_start 0
held() { scale status --due --json >due2.json && [[ $(jq '.shard_info[0].inflight' due2.json) == "$o0" ]]; }
wait_until 10000 held || fail "shard 0 never showed $o0 in flight: $(jq -c '.shard_info[0]' due2.json)"
assert_eq "$(jq -c '.shard_info[0] | [.overdue, .inflight, .pending]' due2.json)" \
    "$(jq -c "[0, $o0, .shard_info[0].pending]" due0.json)" "status --due --json: shard 0 with its overdue IDs in flight"
scale status --json >st2.json || fail "status --json: exit status $?"
# (status's pending: the IDs in the zset; --due's: with those in flight)
assert_eq "$(jq -c '.shard_info[0] | [.due, .inflight, .pending]' st2.json)" \
    "$(jq -c '.shard_info[0] | [0, .inflight, .pending - .inflight]' due2.json)" \
    "status --json: shard 0 with its overdue IDs in flight"
assert_eq "$(jq '.shard_info[0].oldest_inflight_ms != null' st2.json)" true "status --json: oldest_inflight_ms"
