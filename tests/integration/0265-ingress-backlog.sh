#!/usr/bin/env bash
# 0265-ingress-backlog: a backlog many times the consumer's queue is read on
# without librdkafka's pauses. librdkafka 2.0.2 stops fetching once its
# queue holds queued.min.messages and fetches again when its broker thread
# next wakes, up to a second later; the ingress wakes it (kick.h).
#
#  - 30 loads of 200 signals (6,000 IDs) wait on a 2-partition topic before
#    the ingress starts: lapse-kafka-dev answers a fetch with one load's
#    messages a partition, so reading them takes 30 fetches;
#  - the ingress, with queued.min.messages = 50 in ingress.properties (each
#    fetch fills its queue), applies all 6,000 within 12 s of its
#    assignment (without the kicks, 30 pauses: 2026-11-29, about 2,000
#    applied in those 12 s), and lapse_ingress_fetch_kicks_total counts
#    its kicks.
#
# Catches: the ingress no longer telling the kicker of its reads, a kicker
# that does not wake the fetcher, a queued.min.messages from
# ingress.properties not followed.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
LOADS=30 PER_LOAD=200
redis_start main
kafka_start
kafka_ctl "topic $IN 2"
free_port >/dev/null
mp=$FREE_PORT
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-backlog\"; metrics_port = $mp;
  properties = ( $INGRESS_PROPS, (\"queued.min.messages\", 50) );
  rules = ( { id_prefix = \"dev-\"; timeout_ms = 600000; } ); };"
scale init 4 >/dev/null
for ((l = 0; l < LOADS; l++)); do
    awk -v l="$l" -v n="$PER_LOAD" 'BEGIN { for (i = 0; i < n; i++) printf "dev-%d-%d\tup\n", l, i }' |
        kafka_put "$IN"
done

ingress_start
ingress_wait_assigned
metric() { # NAME: lapse_ingress_NAME's value, or 0
    curl -s -m 2 "http://127.0.0.1:$mp/metrics" |
        awk -v k="lapse_ingress_$1{ns=\"$NS\"}" '$1 == k { v = $2 } END { print v + 0 }'
}
want=$((LOADS * PER_LOAD))
wait_until 12000 "[[ \$(metric signals_extended_total) == $want ]]" ||
    fail "$(metric signals_extended_total) of $want signals applied within 12 s" \
        "($(metric fetch_kicks_total) kicks): the fetcher paused at each fill"
assert_eq "$(ns_count)" "$want" "IDs in Redis"
kicks=$(metric fetch_kicks_total)
assert_ge "$kicks" 1 "lapse_ingress_fetch_kicks_total"
note "$want signals in $LOADS fetches, $kicks kicks"
ingress_stop
