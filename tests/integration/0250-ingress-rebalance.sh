#!/usr/bin/env bash
# 0250-ingress-rebalance: two ingress processes in one group share the
# topic's partitions; signals keep flowing while the second joins and while
# the first leaves (SIGTERM: it applies and commits what it read, gives its
# partitions back, exits 0). No signal is lost across the rebalances: every
# device ends at its newest ts + timeout, both members did work, and the
# group has committed every partition to its end.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
DEV=40
redis_start main
kafka_start "$IN"
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-rb\"; properties = ( $INGRESS_PROPS );
  rules = ( { time = \"field\"; timeout_ms = 600000; } ); };"
scale init 4 >/dev/null

BASE=$(($(now_ms) + 1000000))
seq=0
# signals N > FILE: N signals round-robin over the devices, ts = BASE + 10 *
# seq (not in a pipeline: seq must advance in this shell)
signals() {
    local i
    for ((i = 0; i < $1; i++)); do
        seq=$((seq + 1))
        printf 'dev-%d\t{"ts":%d}\n' $((seq % DEV)) $((BASE + seq * 10))
    done
}
missing() { # devices not at their newest ts (the last DEV signals) + timeout
    local d n=0
    declare -A got=()
    while read -r d s; do [[ -z $d ]] || got[$d]=$s; done < <(ns_dump)
    for ((d = seq - DEV + 1; d <= seq; d++)); do
        [[ ${got[dev-$((d % DEV))]:-} == $((BASE + d * 10 + 600000)) ]] || n=$((n + 1))
    done
    echo "$n"
}

ingress_start
A=$INGRESS
ingress_wait_assigned "$A"
signals 400 >r1.in
kafka_put "$IN" <r1.in
wait_until 5000 '[[ $(missing) == 0 ]]' || fail "round 1: $(missing) devices behind"

ingress_start # B joins while signals flow
B=$INGRESS
for r in 1 2 3 4 5; do
    signals 100 >r2.in
    kafka_put "$IN" <r2.in
    sleep 0.2
done
ingress_wait_assigned "$B"
wait_until 5000 "grep -q 'partitions revoked' '$T/$A.log'" || fail "$A gave nothing back when $B joined"
signals 400 >r3.in
kafka_put "$IN" <r3.in
wait_until 8000 '[[ $(missing) == 0 ]]' || fail "with two members: $(missing) devices behind"

for r in 1 2 3 4 5; do signals 100 >"r4.$r.in"; done
(for r in 1 2 3 4 5; do kafka_put "$IN" <"r4.$r.in"; sleep 0.2; done) &
flow=$!
ingress_stop "$A" # leaves while signals flow
wait "$flow" || fail "could not produce while $A left"
signals 200 >r5.in
kafka_put "$IN" <r5.in
wait_until 10000 '[[ $(missing) == 0 ]]' || fail "after $A left: $(missing) devices behind"
assert_eq "$(ns_count)" "$DEV" "IDs in the namespace"
wait_until 5000 'kafka_all_committed "$IN" g-rb' ||
    fail "not all committed: $(kafka_committed "$IN" g-rb | tr '\n' ';')"
ingress_stop "$B"

for n in "$A" "$B"; do
    m=$(sed -n 's/.*ingress: \([0-9]*\) messages:.*/\1/p' "$T/$n.log" | tail -n 1)
    assert_ge "${m:-0}" 1 "messages $n applied"
    assert_file_match "$T/$n.log" 'partitions revoked'
done
