#!/usr/bin/env bash
# 0255-ingress-restart: what a start and a restart of the ingress cost, with
# lapse's own consumer settings (no ingress.properties). The first start
# gets its partitions after the group's initial delay (3 s on
# lapse-kafka-dev); three restarts after SIGTERM each get them back within
# RESTART_MAX_MS (lapse-kafka-dev holds a group whose last member left for
# session.timeout.ms - 1 s: 9 s with lapse's 10 s, 44 s with librdkafka's
# 45 s), and a restart after SIGKILL within KILL9_MAX_MS (the dead member
# is dropped after its session: 19 s here). A SIGTERM that did not leave
# the group would cost as much as a SIGKILL, so the restarts' bound also
# checks that the stop leaves. Each new member applies a signal sent while
# no member ran, and the group commits every partition.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
FIRST_MAX_MS=8000
RESTART_MAX_MS=14000
KILL9_MAX_MS=26000
redis_start main
kafka_start "$IN"
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-rs\";
  rules = ( { time = \"field\"; timeout_ms = 600000; } ); };"
scale init 4 >/dev/null

BASE=$(($(now_ms) + 1000000))
# start_timed MAX_MS WHAT: starts the ingress and waits until it is assigned
# partitions, at most MAX_MS; its signal dev-WHAT (sent before the start)
# must then be applied
start_timed() {
    local t0 took
    t0=$(local_ms)
    ingress_start
    wait_until "$1" "! proc_alive $INGRESS || grep -qs 'partitions assigned' '$T/$INGRESS.log'" ||
        fail "$2: no partitions within $1 ms of the start"
    proc_alive "$INGRESS" || fail "$2: the ingress exited"
    took=$(($(local_ms) - t0))
    note "$2: partitions after $took ms"
    assert_file_match "$T/$INGRESS.log" 'ingress: 4 partitions assigned' "$2: the member holds all 4"
    wait_until 5000 "ns_dump | grep -q '^dev-$2 '" ||
        fail "$2: the signal sent before the start was not applied"
}
signal() { # WHAT: one signal for device dev-WHAT
    printf 'dev-%s\t{"ts":%d}\n' "$1" "$BASE" | kafka_put "$IN"
}

signal first
start_timed "$FIRST_MAX_MS" first
for r in 1 2 3; do
    ingress_stop # SIGTERM: commits, leaves the group, exits 0
    signal "restart$r"
    start_timed "$RESTART_MAX_MS" "restart$r"
done
wait_until 5000 'kafka_all_committed "$IN" g-rs' ||
    fail "not all committed: $(kafka_committed "$IN" g-rs | tr '\n' ';')"

proc_kill9 "$INGRESS" # no leave: the group waits for its session to end
signal kill9
start_timed "$KILL9_MAX_MS" kill9
assert_eq "$(ns_count)" 5 "IDs in the namespace"
ingress_stop
