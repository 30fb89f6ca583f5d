#!/usr/bin/env bash
# 0135-slack-failed-write: with bounded slack, an extend absorbed because an
# earlier write of its ID covers it is reported as failed when that write
# fails, whether the write is still queued with it or already in flight
# (producer.batch = 1: every op a batch of its own, up to four in flight).
# Shard 0's zset is made a string, so Redis refuses every write to it
# (WRONGTYPE); shard 1 works. Lines: 1 extend A (shard 0), 2 extend A
# (absorbed by 1), 3 extend B (shard 1), 4 extend B (absorbed by 3), 5 extend
# A (absorbed by 1). Lines 1, 2 and 5 are reported, 3 and 4 are not (B is
# applied), the exit status says lines were rejected, and the counters add up.
. "$(dirname "$0")/../lib.sh"

redis_start main
seq -f 'id%02g' 0 39 >ids.txt
sp_hashes ids.txt >hashes.txt
A=$(awk '$2 % 2 == 0 { print $1; exit }' hashes.txt)
B=$(awk '$2 % 2 == 1 { print $1; exit }' hashes.txt)
note "A=$A B=$B"

for batch in 1000 1; do
    write_config "$CONF" "producer = { slack_ms = 1000; batch = $batch; };"
    rcli FLUSHALL >/dev/null
    scale init 2 >/dev/null
    # (in small keys shard 0 has one bucket after init: NS:z:0:0)
    broken=$NS:z:0
    ! small_keys_on || broken=$NS:z:0:0
    rcli SET "$broken" broken >/dev/null
    rc=0
    printf 'extend %s +60000\nextend %s +59000\nextend %s +60000\nextend %s +59000\nextend %s +59500\n' \
        "$A" "$A" "$B" "$B" "$A" | produce >out.txt 2>err.txt || rc=$?
    ((rc != 0)) || fail "batch $batch: exit status 0 with a refused write"
    assert_eq "$(grep -o '^line [0-9]*' err.txt | sort -u | paste -sd' ')" "line 1 line 2 line 5" \
        "batch $batch: the lines reported"
    assert_file_match err.txt '^line 2: .*WRONGTYPE' "batch $batch: line 2's reason"
    assert_file_match err.txt '5 submitted, .* 3 absorbed by slack, 2 written .* 3 failed' \
        "batch $batch: the counters"
    [[ -n $(shard_get ZSCORE z 1 "$B") ]] || fail "batch $batch: B was not applied"
done
