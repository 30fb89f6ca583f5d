#!/usr/bin/env bash
# 0830-plan: lapse-scale plan, with --calibrate on the test's own Redis.
#
#  - plan --calibrate --json on a Redis that also holds a namespace of the
#    user's (demo, 2 shards, a few IDs): exit 0, costs.source "calibrated",
#    every per-op cost a sane figure (Redis CPU per op above 0 and below
#    2 ms, bytes per ID of one zset above its 16-byte ID and below 1 kB,
#    small keys fewer than one zset), shards a power of two, nodes >= 1,
#    the limits named; the scratch namespace left no key behind (DBSIZE
#    and the user's keys the same before and after) and the user's IDs are
#    untouched;
#  - the saved output read back with --costs gives the same plan;
#  - the default costs (no Redis needed), the text names each limit;
#  - more IDs never plan fewer shards (a power of two, set by IDs per
#    shard), a load beyond one node's CPU plans several nodes, the
#    busiest under the limit;
#  - bad flags: a one-line error, exit 2 (no --ids, a bad number, --shards
#    not a power of two, --calibrate with --costs, an option plan does not
#    take, --nodes without --shards or above them); a calibration against
#    a Redis nobody runs: exit 1, one line;
#  - the writes fitted over the node's IDs (size_ids, slopes >= 0, spreads),
#    per_op_us; a costs file from before the fit loads, flat; --nodes 1
#    answers for one node over the limits.
. "$(dirname "$0")/../lib.sh"

redis_start main --appendonly yes --appendfsync everysec
write_config
scale init 2 >/dev/null
for i in $(seq 1 20); do echo "touch user-$i +3600000 p$i"; done | produce
before=$(rcli DBSIZE)
keys_before=$(rcli KEYS '*' | sort | md5sum)
ids_before=$(for i in $(seq 1 20); do id_score "user-$i"; done | md5sum)

rc=0
scale plan --ids 10M --signals 50k --fires 2k --calibrate --json >cal.json 2>cal.err || rc=$?
assert_eq "$rc" 0 "plan --calibrate --json ($(cat cal.err))"
assert_eq "$(rcli DBSIZE)" "$before" "DBSIZE after the calibration"
assert_eq "$(rcli KEYS '*' | sort | md5sum)" "$keys_before" "the keys after the calibration"
assert_eq "$(for i in $(seq 1 20); do id_score "user-$i"; done | md5sum)" "$ids_before" \
    "the user's deadlines after the calibration"
assert_eq "$(rcli --scan --pattern "$NS.plan.*" | wc -l)" 0 "scratch keys left"
assert_eq "$(jq -r .costs.source cal.json)" calibrated "costs.source"
assert_match "$(jq -r .costs.origin cal.json)" "calibrated on 127\.0\.0\.1:$REDIS_PORT" "costs.origin"
for form in one_zset small_keys; do
    for f in new_us reset_us extend_us fire_us zadd_us; do
        v=$(jq ".costs.$form.$f" cal.json)
        jq -e ".costs.$form.$f > 0 and .costs.$form.$f < 2000" cal.json >/dev/null ||
            fail "costs.$form.$f is $v: not a Redis CPU per op in 0..2000 µs"
    done
    jq -e ".costs.$form.claim_us >= 0 and .costs.$form.claim_us < 20000" cal.json >/dev/null ||
        fail "costs.$form.claim_us: $(jq ".costs.$form.claim_us" cal.json)"
    jq -e ".costs.$form.payload_extra_bytes >= 0" cal.json >/dev/null ||
        fail "costs.$form.payload_extra_bytes: $(jq ".costs.$form.payload_extra_bytes" cal.json)"
done
# the writes fitted over the node's IDs (one zset at 100,000 and 800,000; small
# keys at one size, flat), each with how far its repeats fell from the fit
jq -e '.costs.one_zset.size_ids == 100000 and .costs.small_keys.size_ids == 20000 and
    ([.costs.one_zset | .new_us_per_doubling, .reset_us_per_doubling, .extend_us_per_doubling,
      .new_spread_pct, .reset_spread_pct, .extend_spread_pct] | all(. >= 0)) and
    ([.costs.small_keys | .new_us_per_doubling, .reset_us_per_doubling, .extend_us_per_doubling]
      | all(. == 0))' cal.json >/dev/null ||
    fail "the fit's fields: $(jq -c .costs cal.json)"
assert_match "$(jq -r .costs.origin cal.json)" "at sets of 100000 and 800000 \\(one zset\\)" "the sizes in costs.origin"
jq -e '.per_op_us.node_ids > 0 and .per_op_us.extend >= .costs.one_zset.extend_us' cal.json >/dev/null ||
    fail "per_op_us: $(jq -c .per_op_us cal.json)"
jq -e '.costs.one_zset.bytes_per_id > 16 and .costs.one_zset.bytes_per_id < 1000' cal.json >/dev/null ||
    fail "bytes per ID in one zset: $(jq .costs.one_zset.bytes_per_id cal.json)"
jq -e '.costs.small_keys.bytes_per_id > 16 and .costs.small_keys.bytes_per_id < .costs.one_zset.bytes_per_id' \
    cal.json >/dev/null || fail "bytes per ID in small keys: $(jq .costs.small_keys.bytes_per_id cal.json)"
shards=$(jq .shards cal.json)
assert_ge "$shards" 1 "shards"
assert_eq "$((shards & (shards - 1)))" 0 "shards ($shards) a power of two"
assert_ge "$(jq .nodes cal.json)" 1 "nodes"
assert_match "$(jq -r '[.shards_set_by, .nodes_set_by] | join(" ")' cal.json)" \
    '^(minimum|ids_per_shard|fires_per_shard|shard_share) (minimum|redis_cpu|memory|balance)$' \
    "what set shards and nodes"
assert_eq "$(jq -c '[.load.ids, .load.signals_per_s, .load.resets_per_s, .load.fires_per_s, .load.new_per_s, .load.form, .load.id_bytes]' cal.json)" \
    '[10000000,50000,0,2000,2000,"one_zset",16]' "load"
assert_eq "$(jq -c '[.redis_cpu, .per_node, .limits] | map(keys | length)' cal.json)" '[7,4,7]' \
    "the fields of redis_cpu, per_node, limits"
jq -e '.redis_cpu.cores > 0 and .memory.gb > 1 and .memory.gb < 10' cal.json >/dev/null ||
    fail "cores and memory for 10M IDs: $(jq -c '[.redis_cpu, .memory]' cal.json)"

# the saved calibration read back: the same plan
scale plan --ids 10M --signals 50k --fires 2k --costs cal.json --json >again.json ||
    fail "plan --costs: exit status $?"
assert_eq "$(jq -r .costs.source again.json)" file "costs.source with --costs"
for f in shards nodes; do
    assert_eq "$(jq ".$f" again.json)" "$(jq ".$f" cal.json)" "$f with --costs"
done
# (the saved costs are rounded: the figures made of them agree to 0.1 %)
for f in redis_cpu.cores memory.bytes; do
    jq -n -e --argjson a "$(jq ".$f" again.json)" --argjson b "$(jq ".$f" cal.json)" \
        '($a - $b | fabs) <= 0.001 * ([$a, $b] | max)' >/dev/null ||
        fail "$f with --costs: $(jq ".$f" again.json), without: $(jq ".$f" cal.json)"
done

# a costs file from before the fit (no slopes, sizes, spreads): loads,
# its writes flat whatever the node holds
jq '.costs | del(.one_zset.new_us_per_doubling, .one_zset.reset_us_per_doubling,
    .one_zset.extend_us_per_doubling, .one_zset.size_ids, .one_zset.new_spread_pct,
    .one_zset.reset_spread_pct, .one_zset.extend_spread_pct, .small_keys.new_us_per_doubling,
    .small_keys.reset_us_per_doubling, .small_keys.extend_us_per_doubling, .small_keys.size_ids,
    .small_keys.new_spread_pct, .small_keys.reset_spread_pct, .small_keys.extend_spread_pct)' \
    cal.json >old.json
scale plan --ids 1G --signals 50k --costs old.json --json >old-plan.json ||
    fail "plan --costs with a file from before the fit: exit status $?"
jq -e '.per_op_us.extend == .costs.one_zset.extend_us and .per_op_us.new == .costs.one_zset.new_us and
    .costs.one_zset.extend_us_per_doubling == 0' old-plan.json >/dev/null ||
    fail "a costs file from before the fit: $(jq -c '[.per_op_us, .costs.one_zset]' old-plan.json)"

# --nodes: the figures for the nodes given, over the limits or not
scale plan --ids 1M --signals 2M --shards 4 --nodes 1 --json >one.json || fail "plan --nodes 1: exit status $?"
jq -e '.nodes == 1 and .nodes_set_by == "given" and .per_node.shards == 4 and
    .per_node.redis_cores > .limits.node_cores and .per_op_us.node_ids == 1000000' one.json >/dev/null ||
    fail "plan --nodes 1: $(jq -c '[.nodes, .nodes_set_by, .per_node, .per_op_us]' one.json)"

# the defaults: no Redis needed; the text names the limits
plan_shards() { scale plan --ids "$1" --json | jq .shards; }
cat >nowhere.conf <<EOF
namespace = "$NS";
redis = { nodes = ( { host = "127.0.0.1"; port = 1; } ); };
kafka = { brokers = "127.0.0.1:1"; topic = "t"; };
EOF
lapse_scale nowhere.conf plan --ids 30M >text.out || fail "plan with the defaults: exit status $?"
assert_file_match text.out '^costs: defaults: docs/benchmarks.md' "the costs named"
assert_file_match text.out '^shards +4, set by IDs per shard' "the shards' limit named"
assert_file_match text.out '^nodes +1, set by' "the nodes' limit named"
prev=0
for ids in 1k 1M 10M 30M 100M 1G; do
    s=$(plan_shards "$ids")
    assert_ge "$s" "$prev" "shards for $ids IDs"
    prev=$s
done
scale plan --ids 1M --signals 2M --json >cpu.json || fail "plan --signals 2M: exit status $?"
jq -e '.nodes > 1 and (.nodes_set_by == "redis_cpu" or .nodes_set_by == "balance") and
    .nodes >= (.redis_cpu.cores / .limits.node_cores) and .per_node.redis_cores <= .limits.node_cores' \
    cpu.json >/dev/null || fail "2M signals/s: nodes by Redis CPU: $(jq -c '[.nodes, .nodes_set_by, .redis_cpu.cores, .per_node]' cpu.json)"

# bad flags: one line, exit 2
bad() { # WHAT ARGS...: exit 2, one line on stderr, nothing on stdout
    local what=$1 rc=0
    shift
    scale plan "$@" >bad.out 2>bad.err || rc=$?
    assert_eq "$rc" 2 "plan $what: exit status"
    assert_eq "$(wc -l <bad.err)" 1 "plan $what: lines on stderr ($(cat bad.err))"
    assert_eq "$(wc -c <bad.out)" 0 "plan $what: stdout"
}
bad "without --ids" --signals 5
bad "--ids abc" --ids abc
bad "--ids 0" --ids 0
bad "--fires -1" --ids 5 --fires -1
bad "--shards 12" --ids 5 --shards 12
bad "--calibrate --costs" --ids 5 --calibrate --costs cal.json
bad "--nodes without --shards" --ids 5 --nodes 2
bad "--nodes above --shards" --ids 5 --shards 2 --nodes 4
bad "--max-overdue" --ids 5 --max-overdue 3
bad "an operand" --ids 5 extra
assert_match "$(cat bad.err)" '^lapse-scale: plan: unexpected argument' "the last one's line"

# a calibration with no Redis: exit 1, one line
rc=0
lapse_scale nowhere.conf plan --ids 5 --calibrate >/dev/null 2>nr.err || rc=$?
assert_eq "$rc" 1 "plan --calibrate with no Redis: exit status"
assert_eq "$(wc -l <nr.err)" 1 "plan --calibrate with no Redis: lines on stderr ($(cat nr.err))"
