#!/usr/bin/env bash
# 0598-autoscale-sawtooth: a load that swings faster than the scaler's
# windows changes the shard count at most once (here: not at all).
#
# 2 shards (min 1, max 4), readings every 300 ms, up window 3 s, down
# window 8 s; due/s per shard up 10, down 4. Five times: 1440 IDs due within
# the minute (12 due/s per shard: hot) for 1.5 s, then cancelled (0 due/s:
# cold) for 1.5 s. No hot or cold spell lasts a window, so the scaler
# splits and merges nothing: the layout's epoch is the same at the end, its
# log holds no split or merge, and its debug lines show both spells seen.
. "$(dirname "$0")/../lib.sh"

redis_start main
SCALE="scale = { interval_ms = 300; up_due_per_shard = 10; down_due_per_shard = 4;
  up_window_ms = 3000; down_window_ms = 8000; cooldown_ms = 1000; min_shards = 1; max_shards = 4; };"
LOG_LEVEL=debug write_config "$CONF" "$SCALE"
scale init 2 >/dev/null
epoch0=$(scale status --json | jq .epoch)

spawn auto "$LAPSE_SCRIPTS/lapse-scale" -c "$CONF" autoscale
wait_until 5000 'grep -q "autoscale: started" auto.log' || fail "the scaler did not start"

until_ms() { # MS: waits until the local clock reads MS
    _until=$1
    wait_until $((_until - $(local_ms) + 1000)) '(($(local_ms) >= _until))'
}
start=$(local_ms)
for ((k = 0; k < 5; k++)); do
    t=$(now_ms)
    awk -v t="$t" 'BEGIN { for (i = 0; i < 1440; i++) printf "touch x%04d @%.0f\n", i, t + 30000 + int(i * 28000 / 1440) }' |
        produce || fail "producer (high): exit status $?"
    until_ms $((start + k * 3000 + 1500))
    awk 'BEGIN { for (i = 0; i < 1440; i++) printf "cancel x%04d\n", i }' | produce || fail "producer (low): exit status $?"
    until_ms $((start + (k + 1) * 3000))
done
proc_stop auto 10
assert_eq "$PROC_RC" 0 "the scaler's exit status"

assert_file_match auto.log 'debug lapse-scale: autoscale: no change: due/s per shard 12\.0 > up_due_per_shard 10 for [0-9.]+ s of up_window_ms 3000' "a hot spell seen"
assert_file_match auto.log 'debug lapse-scale: autoscale: no change: below every down threshold for [0-9.]+ s of down_window_ms 8000' "a cold spell seen"
changes=$(grep -cE 'autoscale: (split|merge) [0-9]+ -> [0-9]+: ' auto.log || true)
assert_le "$changes" 1 "changes under the sawtooth"
assert_eq "$changes" 0 "changes under the sawtooth"
assert_eq "$(scale status --json | jq -r '"\(.state) \(.shards) \(.epoch)"')" "stable 2 $epoch0" "the layout after the sawtooth"
