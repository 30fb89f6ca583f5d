#!/usr/bin/env bash
# 0552-split-batch-one-id: during a split, several ops of one moving ID in
# one batch end as they would one by one: the ID's twin in its old shard
# (pending, or in flight: its deadline being dispatched, its payload kept)
# counts only until an op of the batch overrides it.
#
# IDs that move to new shard 3 in a 2 -> 4 split (SP_TWO_NODES=1, test
# 0553: the new shards on a second Redis) are pending an hour away; A's
# timeouts (every broker down) are in flight instead, with a payload. Then
# one batch each: a touch then a later extend, a cancel then an extend, an
# extend, a cancel and another extend, a touch then a later watch, a watch,
# a touch and an extend. Each ID ends pending at the last extend's
# deadline, in shard 3; the busy ones too, without the twin's payload after
# a cancel.
#
# Catches: the second op of a moving ID compared with its twin's deadline
# though the first had replaced it (take.lua answers a second occurrence
# "busy" with the deadline it took): the extend lost, the ID cancelled or
# left at the touch's earlier deadline (found by the nemesis, seed 10).
. "$(dirname "$0")/../lib.sh"

command -v xxhsum >/dev/null || fail "xxhsum is needed (scripts/install-deps)"
sp_start
p=() b=()
for i in $(seq 1 400); do
    if [[ $(hash_shard "m-$i" 4) == 3 ]]; then
        if ((${#p[@]} < 5)); then p+=("m-$i"); elif ((${#b[@]} < 2)); then b+=("m-$i"); fi
    fi
    ((${#p[@]} == 5 && ${#b[@]} == 2)) && break
done
inflight() { scale status --json | jq '[.shard_info[].inflight] | add'; }
payload3() { # ID: its payload in shard 3, on whichever node holds it
    local port
    for port in "${SP_PORTS[@]:-$(redis_port main)}"; do
        redis-cli -p "$port" EVAL "$_SK_LUA
            return _sk_get('HGET', KEYS[1], ARGV[1])" 1 "$NS:p:3" "$1"
    done | grep -v '^$' | head -n 1
}
printf 'touch %s +3600000\n' "${p[@]}" | produce 2>/dev/null || fail "producer: $?"
kafka_ctl "down 1"
printf 'touch %s +50 twin-payload\n' "${b[@]}" | produce 2>/dev/null || fail "producer: $?"
wait_until 10000 '(( $(inflight) >= 2 ))' || fail "in flight: $(inflight), not 2"
sp_split >split.out || fail "split: exit status $?"
scanner_start 2
scanner_start 3

t0=$(now_ms)
{
    echo "touch ${p[0]} @$((t0 + 5000))"; echo "extend ${p[0]} +9000"
    echo "cancel ${p[1]}"; echo "extend ${p[1]} +9000"
    echo "extend ${p[2]} +4000"; echo "cancel ${p[2]}"; echo "extend ${p[2]} +9000"
    echo "touch ${p[3]} @$((t0 + 5000))"; echo "watch ${p[3]} +9000"
    echo "watch ${p[4]} +9000"; echo "touch ${p[4]} @$((t0 + 5000))"; echo "extend ${p[4]} +9000"
    echo "touch ${b[0]} @$((t0 + 5000))"; echo "extend ${b[0]} +9000"
    echo "cancel ${b[1]}"; echo "extend ${b[1]} +9000"
} | produce 2>/dev/null || fail "producer: $?"
t1=$(now_ms)
for id in "${p[@]}" "${b[@]}"; do
    where=$(sp_where "$id" | grep -v '\.' | paste -sd' ') # (a twin's lease aside)
    read -r shard score <<<"$where"
    [[ $shard == 3 ]] || fail "$id: pending in '$where', not in shard 3"
    ((score >= t0 + 9000 && score <= t1 + 9000)) ||
        fail "$id: deadline $((score - t0)) ms after the batch began, not its last extend's (+9000)"
done
assert_eq "$(payload3 "${b[1]}")" "" "${b[1]}'s payload after its cancel (the twin's is gone with it)"
assert_eq "$(payload3 "${b[0]}")" "twin-payload" "${b[0]}'s payload (the touch kept the twin's)"
kafka_ctl "up 1"
