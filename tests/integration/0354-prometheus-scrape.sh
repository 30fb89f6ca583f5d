#!/usr/bin/env bash
# 0354-prometheus-scrape: a real Prometheus scrapes a scanner and an
# ingress, and PromQL sees what they did.
#
# Prometheus (Debian's binary) runs on 127.0.0.1 with a 1 s scrape interval
# and its TSDB in the test's dir. The scanner fires 20 IDs; the ingress
# takes 15 signals. Through /api/v1/query: up is 1 for both targets,
# lapse_scanner_events_acked_total is 20, lapse_scanner_lateness_seconds
# counts 20 events, lapse_ingress_messages_total and
# lapse_ingress_signals_extended_total are 15, and
# sum(lapse_ingress_consumer_lag) falls to 0.
#
# Catches: an exposition Prometheus cannot ingest (a format, content-type
# or HTTP detail a hand-rolled client would let pass), or values that are
# right in the text but labelled so a query cannot reach them.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
redis_start main
kafka_start
kafka_ctl "topic $IN 2"
sp=$(free_port)
ip=$(free_port)
pp=$(free_port)
SCANNER_CFG="poll_ms = 10; metrics_port = $sp;"
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-p\"; metrics_port = $ip;
  properties = ( $INGRESS_PROPS ); rules = ( { id_prefix = \"dev-\"; timeout_ms = 600000; } ); };"
scale init 1 >/dev/null
events_follow events.json
scanner_start 0
ingress_start

cat >prometheus.yml <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: lapse
    static_configs:
      - targets: ["127.0.0.1:$sp", "127.0.0.1:$ip"]
YML
spawn prometheus prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
    --web.listen-address="127.0.0.1:$pp" --log.level=warn
papi=http://127.0.0.1:$pp
wait_until 20000 '[[ $(curl -s -o /dev/null -w "%{http_code}" -m 1 "$papi/-/ready") == 200 ]]' ||
    fail "prometheus not ready within 20 s"

# q PROMQL: the value of the query's first result (empty when none)
q() {
    curl -s -m 2 "$papi/api/v1/query" --data-urlencode "query=$1" |
        jq -r 'if .status == "success" then (.data.result[0].value[1] // "") else "error: \(.error)" end'
}

for ((i = 0; i < 20; i++)); do printf 'touch f-%d +%d\n' "$i" $((50 + i * 5)); done | produce
ingress_wait_assigned
for ((i = 0; i < 15; i++)); do printf 'dev-%d\tup\n' "$i"; done | kafka_put "$IN"
events_wait_ids events.json 20 10000

want() { # PROMQL VALUE WHAT: waits up to 10 s for the query to return VALUE
    local got _query=$1 _want=$2
    wait_until 10000 'got=$(q "$_query"); [[ $got == "$_want" ]]' || fail "$3: $1 = '$got', want $2"
    note "$1 = $got"
}
want 'count(up{job="lapse"} == 1)' 2 "both targets up"
want 'sum(lapse_scanner_events_acked_total{ns="demo",shard="0"})' 20 "events acked"
want 'sum(lapse_scanner_lateness_seconds_count{ns="demo"})' 20 "lateness histogram count"
want 'sum(lapse_ingress_messages_total{ns="demo"})' 15 "ingress messages"
want 'sum(lapse_ingress_signals_extended_total{ns="demo"})' 15 "ingress signals extended"
want "count(lapse_ingress_consumer_lag{topic=\"$IN\"})" 2 "lag series, one per partition"
want "sum(lapse_ingress_consumer_lag{topic=\"$IN\"})" 0 "lag after the commit"
want 'lapse_scanner_redis_up' 1 "scanner redis_up"
want 'lapse_ingress_redis_up' 1 "ingress redis_up"
ingress_stop
scanner_stop
