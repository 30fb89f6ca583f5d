#!/usr/bin/env bash
# 0065-producer-sigterm: SIGTERM and SIGINT end a stdin producer cleanly in
# the middle of a stream. A long-running producer reads a FIFO; a writer
# streams lines of new IDs (each ID once: no coalescing) into it, and the
# signal comes while lines are still arriving. Checked, for each signal:
#  - exit status 0 within 10 s, and its closing line;
#  - what it says it took (its closing "N submitted") is exactly what Redis
#    holds: every line it read is applied, none half-way, none invented;
#  - the IDs applied are a prefix of the stream (the lines in the order sent).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
write_config
scale init 4 >/dev/null || fail "init: exit status $?"

pending_total() {
    echo $(($(shard_card 0) + $(shard_card 1) + $(shard_card 2) + $(shard_card 3)))
}

for sig in TERM INT; do
    rcli EVAL "for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':[zp]:*')) do redis.call('DEL', k) end" 0 "$NS" >/dev/null
    mkfifo "$T/in-$sig"
    SPAWN_STDIN=$T/in-$sig spawn "p-$sig" "$LAPSE_BIN/lapse-producer" -c "$CONF"
    # a bounded stream: 200000 lines at most, written as fast as the FIFO
    # takes them; the producer is its only reader, so once it is gone the
    # writer dies of SIGPIPE
    (seq -f "$sig-%06g" 0 199999 | awk '{ print "touch " $1 " +3600000" }' >"$T/in-$sig") 2>/dev/null &
    writer=$!
    wait_until 10000 '(($(pending_total) > 1000))' || fail "SIG$sig: the producer applied nothing within 10 s"
    proc_stop "p-$sig" 10 "$sig"
    assert_eq "$PROC_RC" 0 "SIG$sig: the producer's exit status"
    wait "$writer" 2>/dev/null || true
    closing=$(grep 'done:' "$T/p-$sig.log" | tail -n 1)
    [[ $closing =~ ([0-9]+)\ submitted ]] || fail "SIG$sig: no closing line: $(tail -n 3 "$T/p-$sig.log")"
    took=${BASH_REMATCH[1]}
    have=$(pending_total)
    note "SIG$sig: took $took lines, Redis holds $have IDs"
    assert_eq "$have" "$took" "SIG$sig: IDs in Redis vs lines the producer says it took"
    last=$(printf "$sig-%06d" $((took - 1)))
    assert_match "$(shard_get ZSCORE z "$(hash_shard "$last" 4)" "$last")" '^[0-9]+$' "SIG$sig: the last line it took ($last) applied"
    ! grep -q '^line ' "$T/p-$sig.log" || fail "SIG$sig: lines reported: $(grep -m3 '^line ' "$T/p-$sig.log")"
done
