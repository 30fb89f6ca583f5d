#!/usr/bin/env bash
# 0130-slack: bounded-slack coalescing (producer.slack_ms). Three devices
# signal ("extend ID +1500") every 100, 200 and 400 ms for 3 s through one
# long-running producer with slack_ms = 1000, then fall silent. Redis must
# see far fewer writes than signals (about one per device per slack period),
# and each device's timeout must fire never early
# (deadline >= its last signal + 1500) and at most the slack late
# (deadline <= last signal + 1500 + 1000, plus scheduling tolerance).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
write_config "$CONF" "producer = { slack_ms = 1000; };"
scale init 2 >/dev/null
scanners_start 2
events_follow events.json

mkfifo in
"$LAPSE_BIN/lapse-producer" -c "$CONF" <in >producer.out 2>producer.err &
producer=$!
exec 3>in
declare -A last
signals=0
start=$(local_ms)
for ((tick = 0; tick <= 30; tick++)); do # 100 ms ticks for 3 s
    for dev in 1 2 4; do                  # period in ticks: 100, 200(ish), 400 ms
        ((tick % dev == 0)) || continue
        last[$dev]=$(local_ms) # (before the line: the producer reads it later)
        echo "extend dev-$dev +1500" >&3
        signals=$((signals + 1))
    done
    sleep_until_ms $((start + (tick + 1) * 100))
done
elapsed=$(($(local_ms) - start))
closed=$(local_ms)
exec 3>&-
wait "$producer" || fail "producer failed: $(cat producer.err)"
# how long it took to apply its last lines and exit: how far behind the
# lines a loaded machine lets it run, added to the tolerance below
lag=$(($(local_ms) - closed))
# the operations it sent, from its closing counters (ZADD calls would also
# count the scanners' leases)
writes=$(sed -n 's/.* \([0-9]*\) written in .*/\1/p' producer.err)
note "$signals signals over $elapsed ms, $writes writes"
assert_ge "$writes" 3 "Redis writes (each device's first signal writes)"
# about one write per device per slack period (+ its first); a slow machine
# stretches the 3 s, so the bound follows the time it really took
assert_le "$writes" $((3 * (elapsed / 1000 + 2))) "Redis writes for $signals signals with slack 1000 ms over $elapsed ms"

events_wait_ids events.json 3 6000
sleep 0.3
events_follow_stop
tol=$((150 + lag))
note "deadlines after last signal + 1500 + slack 1000: $(for dev in 1 2 4; do
    jq -r --arg id "dev-$dev" --argjson l "${last[$dev]}" 'select(.id == $id) | "dev-'"$dev"' \(.deadline_ms - $l - 2500) ms"' events.json
done | paste -sd' ') (tolerance $tol ms: 150 + the producer's lag $lag ms)"
for dev in 1 2 4; do
    d=$(jq -r --arg id "dev-$dev" 'select(.id == $id) | .deadline_ms' events.json)
    assert_eq "$(wc -l <<<"$d")" 1 "events of dev-$dev"
    assert_ge "$d" $((last[$dev] + 1500)) "dev-$dev's deadline (never early: last signal + 1500)"
    assert_le "$d" $((last[$dev] + 1500 + 1000 + tol)) "dev-$dev's deadline (at most slack late, + $tol ms for the producer's lag)"
done
assert_never_early events.json
