#!/usr/bin/env bash
# 0720 — the Prometheus alert rules, their unit tests, the sample scrape
# config and the Grafana dashboard (deploy/prometheus, deploy/grafana).
#
#  - promtool check rules / test rules / check config pass;
#  - the dashboard is valid JSON with a datasource variable and ns/shard
#    variables from label_values, unique panel ids, panels laid out on the
#    24-column grid without overlaps, and every panel (rows aside: they only
#    group) has a datasource and queries; every query parses as PromQL;
#  - every metric name in an alert expression, a dashboard query or a
#    template variable is one the programs export (the list below), and the
#    dashboard shows every one of them;
#  - prometheus.yml scrapes what deploy/lapse.conf.production sets up: its
#    namespace on every target, shard N's scanners on scanner.metrics_port +
#    N, the ingress on ingress.metrics_port, metrics_bind not loopback, and
#    target hosts that are not the config's Sentinel master names;
#  - the checks can fail: a rule file with a moved threshold fails its unit
#    tests, an unknown metric name in a rule or on the dashboard is found,
#    and so is a scrape config that disagrees with the production config.
#
# Needs no server: promtool evaluates the rules on the series in
# alerts.test.yml.
source "$(dirname "$0")/../lib.sh"

PROM=$LAPSE_ROOT/deploy/prometheus
DASH=$LAPSE_ROOT/deploy/grafana/lapse.json

command -v promtool >/dev/null || fail "promtool not found (Debian package prometheus; run scripts/install-deps)"
command -v jq >/dev/null || fail "jq not found (run scripts/install-deps)"

# The metrics the scanner and the ingress export, and `up`, which Prometheus
# writes per target. Histograms by their base name (_bucket, _sum and _count
# are stripped before the comparison).
KNOWN_METRICS="
up
lapse_scanner_claimed_total
lapse_scanner_events_produced_total
lapse_scanner_events_acked_total
lapse_scanner_events_failed_total
lapse_scanner_settled_total
lapse_scanner_takeovers_total
lapse_scanner_recovered_total
lapse_scanner_fenced_total
lapse_scanner_redis_errors_total
lapse_scanner_redis_reconnects_total
lapse_scanner_kafka_errors_total
lapse_scanner_inflight
lapse_scanner_due
lapse_scanner_oldest_overdue_seconds
lapse_scanner_busy_seconds_total
lapse_scanner_lease_held
lapse_scanner_redis_up
lapse_scanner_splitting
lapse_scanner_merging
lapse_scanner_layout_epoch
lapse_scanner_lateness_seconds
lapse_scanner_redis_memory_used_bytes
lapse_scanner_redis_memory_max_bytes
lapse_scanner_redis_evicting
lapse_scanner_redis_replicas
lapse_scanner_redis_replicas_missing
lapse_ingress_messages_total
lapse_ingress_commands_applied_total
lapse_ingress_signals_extended_total
lapse_ingress_absorbed_total
lapse_ingress_dead_lettered_total
lapse_ingress_rejected_total
lapse_ingress_redis_errors_total
lapse_ingress_redis_reconnects_total
lapse_ingress_consumer_lag
lapse_ingress_redis_up
lapse_ingress_batch_apply_seconds
lapse_ingress_stage_seconds_total
lapse_ingress_primary_replicas_missing
"
HISTOGRAMS="lapse_scanner_lateness_seconds lapse_ingress_batch_apply_seconds"

# rule_exprs RULES.yml: every `expr:` of the file on one line each (a block
# scalar's lines joined)
rule_exprs() {
    awk '
        function flush() { if (inexpr) print buf; inexpr = 0 }
        {
            if (inexpr) {
                i = match($0, /[^ ]/)
                if (i == 0 || i > ind) { buf = buf " " $0; next }
                flush()
            }
            if (match($0, /^[ ]*(- )?expr:/)) {
                ind = index($0, "expr:")
                buf = substr($0, ind + 5)
                sub(/^[ ]*[|>][-+]?[ ]*$/, "", buf)
                inexpr = 1
            }
        }
        END { flush() }' "$1"
}

# dash_exprs DASHBOARD.json: every panel query, and the series selector of
# every label_values() template query, one a line
dash_exprs() {
    jq -r '
        ([.panels[], (.panels[] | .panels[]?)] | .[] | .targets[]? | .expr),
        (.templating.list[] | select(.type == "query") | (.query | if type == "object" then .query else . end)
            | capture("^label_values\\((?<sel>.*),[ ]*[a-zA-Z_]+\\)$").sel)' "$1"
}

# metric_names: reads PromQL expressions (one a line) and prints the metric
# names they use: strings, label matchers, ranges and label lists go, then
# what is left that is an identifier, not a function (followed by "("), not a
# keyword, is a metric; histogram suffixes are stripped
metric_names() {
    local h
    sed -E -e 's/"([^"\\]|\\.)*"//g' -e "s/'[^']*'//g" -e 's/\{[^}]*\}//g' -e 's/\[[^]]*\]//g' \
        -e 's/\b(by|without|on|ignoring|group_left|group_right)[[:space:]]*\([^)]*\)//g' |
        grep -oE '[a-zA-Z_:][a-zA-Z0-9_:]*[[:space:]]*\(?' |
        grep -vE '\($' | sed -E 's/[[:space:]]+$//' |
        grep -vxE 'and|or|unless|by|without|on|ignoring|group_left|group_right|bool|offset|inf|nan|Inf|NaN' |
        while read -r name; do
            for h in $HISTOGRAMS; do
                case $name in "${h}_bucket" | "${h}_sum" | "${h}_count") name=$h ;; esac
            done
            echo "$name"
        done | sort -u
}

unknown_metrics() { # reads names, prints the ones not in KNOWN_METRICS
    grep -vxFf <(tr -s ' \n' '\n' <<<"$KNOWN_METRICS" | sed '/^$/d') || true
}

# ---------------------------------------------------------------- promtool
out=$(cd "$PROM" && promtool check rules alerts.yml 2>&1) || { echo "$out" >&2; fail "promtool check rules alerts.yml"; }
nrules=$(grep -cE '^[ ]*- alert:' "$PROM/alerts.yml")
assert_match "$out" "SUCCESS: $nrules rules found" "promtool check rules"
note "alerts.yml: $nrules alerts"

out=$(cd "$PROM" && promtool test rules alerts.test.yml 2>&1) || { echo "$out" >&2; fail "promtool test rules alerts.test.yml"; }
assert_match "$out" "SUCCESS" "promtool test rules"

# every alert has a test that expects it to fire and one at which it must not
for a in $(sed -nE 's/^[ ]*- alert:[ ]*([A-Za-z0-9_]+).*/\1/p' "$PROM/alerts.yml"); do
    fires=$(awk -v a="$a" '$0 ~ "alertname: " a "$" { want = 1; next }
        want && /exp_alerts:/ { if ($0 ~ /\[\]/) none++; else fire++; want = 0 }
        END { print fire + 0, none + 0 }' "$PROM/alerts.test.yml")
    [[ $fires =~ ^[1-9][0-9]*\ [1-9][0-9]*$ ]] ||
        fail "alerts.test.yml: $a needs a case that fires it and one that must not (firing, silent: $fires)"
done

out=$(cd "$PROM" && promtool check config prometheus.yml 2>&1) || { echo "$out" >&2; fail "promtool check config prometheus.yml"; }
for job in lapse-scanner lapse-ingress; do
    assert_file_match "$PROM/prometheus.yml" "job_name: $job\$" "prometheus.yml: job $job"
done

# ---------------------------------------------------------------- deploy/ agrees with itself
# scrape_targets PROMETHEUS.yml: "job host port ns shard" for every target
# (shard "-" where there is none), from the static_configs as written there
scrape_targets() {
    awk '
        /^[ ]*- job_name:/ { job = $NF }
        /^[ ]*- targets:/ { t = $0; sub(/.*\[/, "", t); sub(/\].*/, "", t); gsub(/[" ]/, "", t) }
        /^[ ]*labels:/ {
            ns = "-"; shard = "-"
            if (match($0, /ns: *"?[^",} ]+/)) { ns = substr($0, RSTART, RLENGTH); sub(/ns: *"?/, "", ns) }
            if (match($0, /shard: *"?[0-9]+/)) { shard = substr($0, RSTART, RLENGTH); sub(/shard: *"?/, "", shard) }
            n = split(t, hp, ",")
            for (i = 1; i <= n; i++) { split(hp[i], a, ":"); print job, a[1], a[2], ns, shard }
        }' "$1"
}
# conf_value CONF PATH: a setting of a libconfig file written as
# deploy/lapse.conf.production is ("namespace", "scanner.metrics_port"...;
# groups may nest braces, comments are dropped)
conf_value() {
    perl -e '
        my ($path, $file) = @ARGV;
        open(my $fh, "<", $file) or exit 1;
        local $/;
        $_ = <$fh>;
        s/#[^\n]*//g;
        my ($g, $k) = $path =~ /^(?:(\w+)\.)?(\w+)$/;
        if (defined $g) {
            /\b\Q$g\E\s*=\s*(\{((?:[^{}]++|(?1))*)\})/ or exit;
            $_ = $2;
        }
        s/(\{(?:[^{}]++|(?1))*\})//g;    # the groups inside: not the ones asked for
        print "$1\n" if /(?:^|[;\s])\Q$k\E\s*=\s*"?([^";]*?)"?\s*;/;' "$2" "$1"
}
# deploy_disagreements PROMETHEUS.yml CONF: one line for every way they differ
deploy_disagreements() {
    local ns sport iport masters
    ns=$(conf_value "$2" namespace)
    sport=$(conf_value "$2" scanner.metrics_port)
    iport=$(conf_value "$2" ingress.metrics_port)
    masters=$(grep -oE 'master = "[^"]+"' "$2" | sed 's/.*"\(.*\)"/\1/' | sort -u)
    [[ -n $ns ]] || echo "no namespace in $2"
    [[ ${sport:-0} =~ ^[1-9][0-9]*$ ]] || echo "$2 sets no scanner.metrics_port"
    [[ ${iport:-0} =~ ^[1-9][0-9]*$ ]] || echo "$2 sets no ingress.metrics_port"
    for b in scanner.metrics_bind ingress.metrics_bind; do
        case $(conf_value "$2" "$b") in "" | 127.* | localhost | ::1)
            echo "$2: $b is loopback (or unset), Prometheus on another host cannot scrape it" ;;
        esac
    done
    scrape_targets "$1" | while read -r job host port tns shard; do
        [[ $tns == "$ns" ]] || echo "$job target $host:$port: ns $tns, but $2 has namespace $ns"
        ! grep -qxF "$host" <<<"$masters" || echo "$job target $host: a Redis master name in $2, not a host"
        case $job in
        lapse-scanner) ((port == sport + shard)) ||
            echo "lapse-scanner target $host:$port of shard $shard: scanner.metrics_port $sport + $shard is $((sport + shard))" ;;
        lapse-ingress) ((port == iport)) || echo "lapse-ingress target $host:$port: ingress.metrics_port is $iport" ;;
        esac
    done
    (($(scrape_targets "$1" | grep -c '^lapse-scanner ') > 0)) || echo "no lapse-scanner targets in $1"
    (($(scrape_targets "$1" | grep -c '^lapse-ingress ') > 0)) || echo "no lapse-ingress targets in $1"
}
PROD=$LAPSE_ROOT/deploy/lapse.conf.production
bad=$(deploy_disagreements "$PROM/prometheus.yml" "$PROD")
[[ -z $bad ]] || fail "deploy/prometheus/prometheus.yml and deploy/lapse.conf.production disagree: $bad"
note "prometheus.yml scrapes $(scrape_targets "$PROM/prometheus.yml" | wc -l) targets as lapse.conf.production sets them up"

# ---------------------------------------------------------------- dashboard
jq empty "$DASH" || fail "lapse.json is not valid JSON"
assert_ge "$(jq '.schemaVersion' "$DASH")" 37 "schemaVersion"

assert_eq "$(jq -r '[.templating.list[] | select(.type == "datasource" and .query == "prometheus")] | length' "$DASH")" 1 \
    "datasource template variables"
ds_var=$(jq -r '.templating.list[] | select(.type == "datasource") | .name' "$DASH")
for v in ns shard; do
    q=$(jq -r --arg v "$v" '.templating.list[] | select(.name == $v) | (.query | if type == "object" then .query else . end)' "$DASH")
    assert_match "$q" "^label_values\\(.*, *$v\\)\$" "template variable $v"
done

panels=$(jq -c '[.panels[], (.panels[] | .panels[]?)]' "$DASH")
npanels=$(jq 'length' <<<"$panels")
assert_eq "$(jq '[.[].id] | unique | length' <<<"$panels")" "$npanels" "unique panel ids"
assert_eq "$(jq '[.[] | select((.id | type) != "number")] | length' <<<"$panels")" 0 "panels without a numeric id"
note "lapse.json: $npanels panels"

bad=$(jq -r --arg ds "\${$ds_var}" '.[] | select(.type != "row") |
    select((.datasource.uid // .datasource) != $ds or (.targets | length) == 0
           or any(.targets[]; (.expr // "") == "" or (.datasource.uid // .datasource) != $ds))
    | "\(.id) \(.title)"' <<<"$panels")
[[ -z $bad ]] || fail "panels without the \${$ds_var} datasource or without queries: $bad"

# layout: on the 24-column grid, no two panels share a cell
jq -r '.[] | "\(.id) \(.gridPos.x) \(.gridPos.y) \(.gridPos.w) \(.gridPos.h)"' <<<"$panels" >grid.txt
bad=$(awk '{
        id = $1; x = $2; y = $3; w = $4; h = $5
        if (x !~ /^[0-9]+$/ || y !~ /^[0-9]+$/ || w < 1 || h < 1 || x + w > 24) { print "panel " id ": bad gridPos " x "," y "," w "," h; next }
        for (i = x; i < x + w; i++) for (j = y; j < y + h; j++) {
            if ((i, j) in cell) { print "panel " id " overlaps panel " cell[i, j] " at " i "," j; next }
            cell[i, j] = id
        }
    }' grid.txt)
[[ -z $bad ]] || fail "dashboard layout: $bad"

# every query parses: as recording rules for promtool, variables replaced
jq '{groups: [{name: "dashboard", rules: [ [.[] | .targets[]? | .expr] | to_entries[]
        | {record: "dashboard:query_\(.key)", expr: (.value | gsub("\\$__rate_interval|\\$__interval"; "5m")
        | gsub("\\$(ns|shard)"; ".*"))} ]}]}' <<<"$panels" >dash-rules.yml
out=$(promtool check rules dash-rules.yml 2>&1) || { echo "$out" >&2; fail "dashboard queries that are not PromQL"; }

# ---------------------------------------------------------------- metric names
rule_exprs "$PROM/alerts.yml" >alert-exprs.txt
assert_eq "$(wc -l <alert-exprs.txt)" "$nrules" "expressions found in alerts.yml"
dash_exprs "$DASH" >dash-exprs.txt
assert_ge "$(wc -l <dash-exprs.txt)" "$npanels" "queries found in lapse.json"

metric_names <alert-exprs.txt >alert-metrics.txt
metric_names <dash-exprs.txt >dash-metrics.txt
assert_ge "$(wc -l <alert-metrics.txt)" 10 "metric names found in alerts.yml"
bad=$(cat alert-metrics.txt dash-metrics.txt | sort -u | unknown_metrics)
[[ -z $bad ]] || fail "metric names no lapse program exports: $(echo $bad)"

missing=$(tr -s ' \n' '\n' <<<"$KNOWN_METRICS" | sed '/^$/d' | grep -vxFf dash-metrics.txt || true)
[[ -z $missing ]] || fail "metrics the dashboard does not show: $(echo $missing)"

# ---------------------------------------------------------------- the checks can fail
mkdir broken
cp "$PROM/alerts.yml" "$PROM/alerts.test.yml" broken/
sed -i 's/) > 30$/) > 28/' broken/alerts.yml
! cmp -s broken/alerts.yml "$PROM/alerts.yml" || fail "self-check: could not move the overdue threshold"
if (cd broken && promtool test rules alerts.test.yml >out.txt 2>&1); then
    fail "self-check: alert tests still pass with the overdue threshold at 28 s"
fi
assert_file_match broken/out.txt 'LapseScannerOverdue' "self-check: the failing alert is named"

bad=$(sed 's/lapse_scanner_splitting/lapse_scanner_split_active/' alert-exprs.txt | metric_names | unknown_metrics)
assert_eq "$bad" lapse_scanner_split_active "self-check: unknown metric in a rule"
bad=$(jq '.panels[-1].targets[0].expr |= "rate(lapse_ingress_bogus_total{ns=~\"$ns\"}[5m]) + node_load1"' "$DASH" |
    dash_exprs /dev/stdin | metric_names | unknown_metrics | tr '\n' ' ')
assert_eq "$bad" "lapse_ingress_bogus_total node_load1 " "self-check: unknown metrics on the dashboard"

sed 's/ns: devices/ns: demo/' "$PROM/prometheus.yml" >broken/prometheus.yml
assert_match "$(deploy_disagreements broken/prometheus.yml "$PROD")" 'ns demo, but .* has namespace devices' \
    "self-check: another namespace in prometheus.yml"
sed 's/app-1.internal:9401/app-1.internal:9400/' "$PROM/prometheus.yml" >broken/prometheus.yml
assert_match "$(deploy_disagreements broken/prometheus.yml "$PROD")" 'app-1.internal:9400 of shard 1: scanner.metrics_port 9400 \+ 1 is 9401' \
    "self-check: a scanner port that is not metrics_port + shard"
sed 's/app-2.internal:/lapse-b:/' "$PROM/prometheus.yml" >broken/prometheus.yml
assert_match "$(deploy_disagreements broken/prometheus.yml "$PROD")" 'target lapse-b: a Redis master name' \
    "self-check: a master name as a host"
sed '/metrics_port = 9480/s/9480/9481/; /^scanner = /s/ metrics_port = 9400;//' "$PROD" >broken/prod.conf
assert_match "$(deploy_disagreements "$PROM/prometheus.yml" broken/prod.conf)" 'sets no scanner.metrics_port' \
    "self-check: no scanner.metrics_port"
assert_match "$(deploy_disagreements "$PROM/prometheus.yml" broken/prod.conf)" 'app-1.internal:9480: ingress.metrics_port is 9481' \
    "self-check: another ingress port"

note "alerts, their tests, the scrape config and the dashboard check out"
