#!/usr/bin/env bash
# 0599-autoscale-dry-run: `lapse-scale autoscale --dry-run` says what it
# would do and why, and changes nothing.
#
# 2 shards, 1800 IDs due 20-50 s ahead: 15 due/s per shard over the next
# minute, above up_due_per_shard 10. With a 1.5 s up window the dry run
# prints "autoscale: would split 2 -> 4: due/s per shard 15.0 >
# up_due_per_shard 10 for ..." naming the window and its readings; its
# metrics say dry_run 1, 2 shards, the split decision counted; SIGTERM ends
# it with status 0; the layout is what it was (stable, 2 shards, the same
# epoch) and no ID moved. Then bad scale keys: an unknown key, a wrong
# type, a flapping down threshold, each refused with FILE:LINE: key:
# reason and exit status 2 before Redis is touched.
. "$(dirname "$0")/../lib.sh"

redis_start main
free_port >/dev/null
mp=$FREE_PORT
SCALE="scale = { interval_ms = 300; up_due_per_shard = 10; down_due_per_shard = 4;
  up_window_ms = 1500; down_window_ms = 3000; cooldown_ms = 0; min_shards = 1; max_shards = 8;
  metrics_port = $mp; };"
LOG_LEVEL=debug write_config "$CONF" "$SCALE"
scale init 2 >/dev/null

t0=$(now_ms)
awk -v t0="$t0" 'BEGIN { for (i = 0; i < 1800; i++) printf "touch d%04d @%.0f\n", i, t0 + 20000 + int(i * 30000 / 1800) }' |
    produce || fail "producer: exit status $?"
epoch0=$(scale status --json | jq .epoch)
keys0=$(rcli DBSIZE)

SPAWN_OUT=$T/dry.out spawn dry "$LAPSE_SCRIPTS/lapse-scale" -c "$CONF" autoscale --dry-run
wait_until 15000 'grep -q "would split" dry.out' || fail "no split decision within 15 s: $(tail -n 5 dry.log)"
line=$(grep -m1 'would split' dry.out)
assert_match "$line" '^autoscale: would split 2 -> 4: due/s per shard 15\.[0-9] > up_due_per_shard 10 for [0-9.]+ s \(every reading of up_window_ms 1500, [0-9]+ readings\); ' "the decision and its reason"
assert_match "$line" 'pending per shard 900 \(up 2000000, down 800000\)' "the figures behind it"
assert_file_match dry.log 'autoscale: started \(dry run: changes nothing\)' "the log says dry run"
assert_file_match dry.log '^debug lapse-scale: autoscale: reading: 2 shards, due/s per shard 15\.' "a reading at debug"

body=$(metrics_get "$mp")
assert_eq "$(awk '$1 == "lapse_autoscale_dry_run{ns=\"demo\"}" { print $2 }' <<<"$body")" 1 "metric dry_run"
assert_eq "$(awk '$1 == "lapse_autoscale_shards{ns=\"demo\"}" { print $2 }' <<<"$body")" 2 "metric shards"
assert_ge "$(awk '$1 == "lapse_autoscale_decisions_total{ns=\"demo\",action=\"split\"}" { print $2 }' <<<"$body")" 1 "metric split decisions"
assert_eq "$(awk '$1 == "lapse_autoscale_decisions_total{ns=\"demo\",action=\"merge\"}" { print $2 }' <<<"$body")" 0 "metric merge decisions"
assert_match "$(awk '$1 == "lapse_autoscale_due_per_second_per_shard{ns=\"demo\"}" { print $2 }' <<<"$body")" '^15(\.[0-9]+)?$' "metric due per shard"

proc_stop dry 10
assert_eq "$PROC_RC" 0 "exit status after SIGTERM"
assert_eq "$(scale status --json | jq -r '[.state, .shards, .epoch] | @tsv' | tr '\t' ' ')" "stable 2 $epoch0" "the layout after a dry run"
assert_eq "$(rcli DBSIZE)" "$keys0" "keys after a dry run"
assert_eq "$(rcli EXISTS "$NS:layout:next")" 0 "no next layout"

# ---------------------------------------------------------------- bad keys
bad() { # EXTRA ERE...: the config with EXTRA is refused, each ERE a line of stderr
    local extra=$1 rc=0 re
    shift
    write_config bad.conf "$extra"
    timeout 20 "$LAPSE_SCRIPTS/lapse-scale" -c bad.conf autoscale --dry-run >bad.out 2>bad.err || rc=$?
    assert_eq "$rc" 2 "exit status for: $extra"
    for re in "$@"; do assert_file_match bad.err "$re"; done
}
line=$(write_config bad.conf && wc -l <bad.conf) # the line EXTRA starts on (the last)
bad "scale = { bogus_window_ms = 5; up_window_ms = \"3s\"; };" \
    "^bad.conf:$line: scale.bogus_window_ms: unknown key" \
    "^bad.conf:$line: scale.up_window_ms: "
bad "scale = { up_due_per_shard = 100;
  down_due_per_shard = 50; };" \
    "^bad.conf:$((line + 1)): scale.down_due_per_shard: 50 is more than up_due_per_shard / 2 \\* \\(1 - tolerance_pct / 100\\) = 45: after a merge"
bad "scale = { max_shards = 6; };" "^bad.conf:$line: scale.max_shards: 6 is not a power of two"
bad "scale = { cooldown_ms = -1; };" "^bad.conf:$line: scale.cooldown_ms: must be 0\\.\\.86400000"
