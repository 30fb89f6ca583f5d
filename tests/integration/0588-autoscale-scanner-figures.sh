#!/usr/bin/env bash
# 0588-autoscale-scanner-figures: with scale.scanner_hosts the scaler reads
# each shard's scanner /metrics (scanner.metrics_port + N) and splits on the
# scanners' lateness p99, which Redis does not show; without it, the same
# load changes nothing.
#
# 2 shards, each with a scanner serving metrics on 127.0.0.1. Kafka answers
# every request 300 ms late and max_inflight = 1, so each scanner fires one
# event per 300 ms: 30 IDs due together (about 15 a shard) are handed over
# up to seconds after their deadline (lateness p99 > up_lateness_ms 1000).
# The Redis figures stay far below their thresholds (a few IDs, due/s near
# 0, the oldest overdue a few seconds against up_overdue_ms 60000).
#
#  - without scanner_hosts: autoscale --dry-run reads through the whole
#    load (at least 5 readings while the events fire) and says no split;
#  - with scanner_hosts = ("127.0.0.1"): once it has a first page of both
#    scanners, the same load makes it say "would split 2 -> 4: lateness p99
#    N ms > up_lateness_ms 1000"; its readings name the scanner figures (2
#    scanners read, a busy fraction known), and so do its own metrics
#    (lapse_autoscale_scanner_busy_ratio, scanners_unread 0);
#  - the first host listed, 127.0.0.2, has a standby scanner for shard 0
#    (lease_held 0, busy_seconds_total staying 0: a standby is not busy)
#    and nothing for shard 1 (a refused connection): both shards are read
#    on 127.0.0.1, where their active scanners are, and the log says so;
#  - scanner_hosts without scanner.metrics_port is refused (status 2).
#
# Catches: a scaler that ignores the scanners (no split in the second part),
# one that splits on the Redis figures alone (a split in the first), a
# parser that misses the histogram behind its labels.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
free_port >/dev/null
mp=$FREE_PORT
printf -v hex ':%04X ' $((mp + 1))
grep -qF -- "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null && fail "port $((mp + 1)) (shard 1's) is taken"
SCANNER_CFG="poll_ms = 10; max_inflight = 1; metrics_port = $mp;"
SCALE_KEYS="interval_ms = 300; up_due_per_shard = 1000; down_due_per_shard = 400;
  up_pending_per_shard = 100000; down_pending_per_shard = 40000; up_overdue_ms = 60000;
  up_busy_pct = 95; down_busy_pct = 40; up_lateness_ms = 1000;
  up_window_ms = 0; down_window_ms = 3600000; cooldown_ms = 0; min_shards = 1; max_shards = 8;"
LOG_LEVEL=debug write_config "$CONF"
scale init 2 >/dev/null
events_follow events.json
scanners_start 2
wait_until 10000 '[[ -n $(lock_pid 0) && -n $(lock_pid 1) ]]' || fail "the scanners did not take their shards"
wait_until 5000 'metrics_get "$mp" >/dev/null && metrics_get $((mp + 1)) >/dev/null' ||
    fail "the scanners' metrics endpoints did not answer"
kafka_ctl "rtt 1 300"

sent=0
load() { # 30 IDs due 1.5 s from now; waits until their events arrived
    local t0 i
    t0=$(now_ms)
    for ((i = 0; i < 30; i++)); do printf 'touch %s-%02d @%d\n' "$1" "$i" $((t0 + 1500)); done | produce ||
        fail "producer: exit status $?"
    sent=$((sent + 30))
    events_wait_ids events.json "$sent" 30000
}

# ---- without scanner_hosts: the Redis figures alone, no split
LOG_LEVEL=debug write_config plain.conf "scale = { $SCALE_KEYS };"
SPAWN_OUT=$T/plain.out spawn plain "$LAPSE_SCRIPTS/lapse-scale" -c plain.conf autoscale --dry-run
wait_until 10000 'grep -q "autoscale: reading: 2 shards" plain.log' || fail "no reading within 10 s: $(tail -n 5 plain.log)"
assert_file_match plain.log "scanners' figures not read \\(no scale.scanner_hosts\\)" "the start line says the scanners are not read"
before=$(grep -c 'autoscale: reading: 2 shards' plain.log)
load plain
after=$(grep -c 'autoscale: reading: 2 shards' plain.log)
note "without scanner_hosts: $((after - before)) readings during the load"
assert_ge $((after - before)) 5 "readings taken while the events fired"
if grep -q 'would split' plain.out; then fail "split on the Redis figures alone: $(grep -m1 'would split' plain.out)"; fi
assert_file_match plain.log 'reading: 2 shards, .*scanner busy -1 %, lateness p99 -1 ms .*0 scanners read, 0 not' "no scanner figure read"
proc_stop plain 10
assert_eq "$PROC_RC" 0 "exit status after SIGTERM (without scanner_hosts)"

# ---- with scanner_hosts: the lateness p99 calls for a split
# a standby for shard 0 on 127.0.0.2, same port: the scaler, which tries
# 127.0.0.2 first, must read shard 0 on 127.0.0.1, where the active one is
SCANNER_CFG="poll_ms = 10; max_inflight = 1; metrics_port = $mp; metrics_bind = \"127.0.0.2\";" \
    write_config standby.conf
spawn scanner-0 "$LAPSE_BIN/lapse-scanner" -c standby.conf --shard 0
printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.2\r\n\r\n' >standby.req # (one write: metrics_get's way)
standby_get() { # the standby's /metrics body
    timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.2/$1" && cat "$2" >&3 && cat <&3' _ "$mp" "$T/standby.req" 2>/dev/null |
        sed '1,/^\r$/d'
}
standby_val() { standby_get | awk -v n="lapse_scanner_$1" '{ split($1, a, "{") } a[1] == n { print $2; exit }'; }
wait_until 10000 '[[ $(standby_val lease_held) == 0 ]]' || fail "the standby's metrics did not answer on 127.0.0.2:$mp"
free_port >/dev/null
sp=$FREE_PORT # the scaler's own metrics
LOG_LEVEL=debug write_config hosts.conf "scale = { $SCALE_KEYS metrics_port = $sp;
  scanner_hosts = ( \"127.0.0.2\", \"127.0.0.1\" ); };"
SPAWN_OUT=$T/hosts.out spawn hosts "$LAPSE_SCRIPTS/lapse-scale" -c hosts.conf autoscale --dry-run
# two readings: the second has a busy fraction between the first page and it
wait_until 10000 'grep -Eq "reading: 2 shards, .*scanner busy [0-9]+ %, .*2 scanners read, 0 not" hosts.log' ||
    fail "the scanners were not read within 10 s: $(tail -n 5 hosts.log)"
if grep -q 'would split' hosts.out; then fail "split before the load: $(grep -m1 'would split' hosts.out)"; fi
load hosts
wait_until 10000 'grep -q "would split" hosts.out' || fail "no split on the scanners' lateness: $(grep 'reading:' hosts.log | tail -n 5)"
line=$(grep -m1 'would split' hosts.out)
note "$line"
assert_match "$line" '^autoscale: would split 2 -> 4: lateness p99 ([0-9]+ ms|above the last bucket) > up_lateness_ms 1000 for ' "the decision names the lateness p99"
assert_match "$line" 'scanner busy [0-9]+ % \(up 95, down 40\), lateness p99 [^(]+\(up 1000 ms\)' "the figures behind it"
assert_file_match hosts.log "autoscale: shard 0: scanner read on 127\\.0\\.0\\.1 port $mp( |$)" "shard 0 read where its active scanner is"
assert_file_match hosts.log "autoscale: shard 1: scanner read on 127\\.0\\.0\\.1 port $((mp + 1))( |$)" "shard 1 read past the host that refuses"
if grep -q 'scanner read on 127.0.0.2' hosts.log; then fail "a standby's page was read: $(grep -m1 'scanner read on 127.0.0.2' hosts.log)"; fi
assert_eq "$(standby_val busy_seconds_total)" 0.000000 "the standby's busy_seconds_total (a standby is not busy)"
assert_eq "$(standby_val lease_held)" 0 "the standby still stands by"
body=$(metrics_get "$sp")
assert_match "$(awk '$1 == "lapse_autoscale_scanner_busy_ratio{ns=\"demo\"}" { print $2 }' <<<"$body")" '^[0-9.e-]+$' "scaler metric: scanner busy ratio"
assert_eq "$(awk '$1 == "lapse_autoscale_scanners_unread{ns=\"demo\"}" { print $2 }' <<<"$body")" 0 "scaler metric: scanners unread"
proc_stop hosts 10
assert_eq "$PROC_RC" 0 "exit status after SIGTERM (with scanner_hosts)"
assert_eq "$(scale status --json | jq -r '[.state, .shards] | @tsv' | tr '\t' ' ')" "stable 2" "the layout after dry runs"
assert_never_early events.json

# ---- scanner_hosts without scanner.metrics_port
SCANNER_CFG="poll_ms = 10;" write_config bad.conf "scale = { scanner_hosts = ( \"127.0.0.1\" ); };"
rc=0
timeout 20 "$LAPSE_SCRIPTS/lapse-scale" -c bad.conf autoscale --dry-run >bad.out 2>bad.err || rc=$?
assert_eq "$rc" 2 "exit status: scanner_hosts without scanner.metrics_port"
assert_file_match bad.err "^bad.conf: scale.scanner_hosts is set but scanner.metrics_port is 0" "why"
scanner_stop
