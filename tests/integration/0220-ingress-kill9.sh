#!/usr/bin/env bash
# 0220-ingress-kill9: the commit rule under a crash. Signals flow into a
# 4-partition topic; while the ingress holds messages it has consumed but
# could not apply yet (Redis writes paused), nothing of them is committed;
# it is killed with SIGKILL right then, with more signals flowing; a new
# ingress of the same group takes over. Afterwards every device's deadline
# is exactly its newest signal's ts + timeout (compared with what was
# produced: at least once, extend keeps the latest), and the group has
# committed every partition to its end.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
DEV=100
redis_start main
kafka_start "$IN"
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-k9\"; properties = ( $INGRESS_PROPS );
  rules = ( { time = \"field\"; time_field = \"ts\"; timeout_ms = 600000; } ); };"
scale init 4 >/dev/null

BASE=$(($(now_ms) + 1000000))
declare -A want # device -> newest ts
seq=0
# signals N > FILE: N signals round-robin over the devices, ts increasing
# (every 7th one older than the last: out of order), expectations in want[]
signals() {
    local i d ts
    for ((i = 0; i < $1; i++)); do
        seq=$((seq + 1))
        d=dev-$((seq % DEV))
        ts=$((BASE + seq * 10))
        ((seq % 7)) || ts=$((ts - 5000))
        ((ts > ${want[$d]:-0})) && want[$d]=$ts
        printf '%s\t{"ts":%d,"seq":%d}\n' "$d" "$ts" "$seq"
    done
}
# missing: devices whose deadline is not (yet) their newest ts + 600000
missing() {
    local d n=0
    declare -A got=()
    while read -r d s; do [[ -z $d ]] || got[$d]=$s; done < <(ns_dump)
    for d in "${!want[@]}"; do
        [[ ${got[$d]:-} == $((want[$d] + 600000)) ]] || n=$((n + 1))
    done
    echo "$n"
}

ingress_start
A=$INGRESS
ingress_wait_assigned "$A"

# round 1: applied and committed
signals 1000 >r1.in
kafka_put "$IN" <r1.in
wait_until 8000 '[[ $(missing) == 0 ]]' || fail "round 1: $(missing) devices without their deadline"
wait_until 5000 'kafka_all_committed "$IN" g-k9' || fail "round 1 not committed: $(kafka_committed "$IN" g-k9 | tr '\n' ';')"
kafka_committed "$IN" g-k9 | cut -d' ' -f1,2 >c1 # partition, committed

# round 2 while Redis holds every write: consumed, not applied, not committed
# (a long pause, ended by CLIENT UNPAUSE once the offsets are checked: it
# must not run out while a loaded machine gets there)
PAUSE_MS=30000
still_paused() { # (after reading the offsets)
    (($(local_ms) - paused < PAUSE_MS)) ||
        fail "machine too slow: the offsets were read $(($(local_ms) - paused)) ms after CLIENT PAUSE $PAUSE_MS, when Redis may have applied round 2"
}
rcli CLIENT PAUSE $PAUSE_MS WRITE >/dev/null
paused=$(local_ms)
signals 1000 >r2.in
kafka_put "$IN" <r2.in
wait_until 10000 '[[ $(rcli INFO clients | tr -d "\r" | sed -n "s/^blocked_clients://p") -ge 1 ]]' ||
    fail "the ingress did not try to apply round 2"
signals 1000 >r3.in # round 3 flows while the ingress dies
(kafka_put "$IN" <r3.in) &
flow=$!
kafka_committed "$IN" g-k9 | cut -d' ' -f1,2 >c2
still_paused
diff c1 c2 >c.diff || { cat c.diff >&2; fail "offsets committed for writes Redis has not applied"; }
proc_kill9 "$A"
note "killed the ingress with round 2 unapplied, round 3 flowing"
kafka_committed "$IN" g-k9 | cut -d' ' -f1,2 >c3
still_paused
diff c1 c3 >c.diff || { cat c.diff >&2; fail "offsets moved past unapplied writes"; }
rcli CLIENT UNPAUSE >/dev/null
wait "$flow" || fail "round 3 could not be produced"

# a new member of the group picks up from the committed offsets
ingress_start
ingress_wait_assigned "$INGRESS"
wait_until 10000 '[[ $(missing) == 0 ]]' || fail "$(missing) of $DEV devices lack their newest deadline after the restart"
assert_eq "$(ns_count)" "$DEV" "IDs in the namespace"
wait_until 5000 'kafka_all_committed "$IN" g-k9' ||
    fail "not all committed at the end: $(kafka_committed "$IN" g-k9 | tr '\n' ';')"
ingress_stop
# the new member read rounds 2 and 3 (and maybe a replay of 1, not more)
n=$(sed -n 's/.*ingress: \([0-9]*\) messages:.*/\1/p' "$T/$INGRESS.log" | tail -n 1)
assert_ge "$n" 2000 "messages the new member read"
assert_le "$n" 3000 "messages the new member read"
