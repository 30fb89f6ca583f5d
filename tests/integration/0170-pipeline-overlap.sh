#!/usr/bin/env bash
# 0170-pipeline-overlap: a full batch goes out behind the batches in flight
# only when that is safe if they all have to be sent again (after a lost
# connection they are, in order, on top of what Redis already applied): no
# ID in common, or only bare extends (no payload) of it on both sides. A
# batch with, say, a cancel of an ID that a batch in flight touches waits
# for that batch's answer first; otherwise the touch sent again could bring
# the ID back for a moment, and a scanner could fire it.
#
# Seen from Redis: while scripts are held back (CLIENT PAUSE WRITE), a
# pipelined batch waits, unread, in the producer's query buffer (qbuf > 0 in
# CLIENT LIST); a batch that waits for an answer is not sent at all. With
# producer.batch = 2, four lines make two full batches:
#   disjoint IDs                 -> pipelined
#   the same ID, extends only    -> pipelined
#   touch x, then cancel x       -> waits
#   extend x, then touch x       -> waits
# and in every case Redis ends with exactly the effect of the four lines.
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config "$CONF" "producer = { batch = 2; };"
scale init 1 >/dev/null
base=$(($(now_ms) + 3600000))

# queued: the producer's query buffer while its scripts are held back
queued() {
    rcli CLIENT LIST | tr -d '\r' | awk '/cmd=evalsha/ { for (i = 1; i <= NF; i++) if ($i ~ /^qbuf=/) { sub(/^qbuf=/, "", $i); q += $i } } END { print q + 0 }'
}

# held: clients whose script Redis holds back (the first batch has arrived)
held() {
    rcli CLIENT LIST | tr -d '\r' | awk '/cmd=evalsha/ { for (i = 1; i <= NF; i++) if ($i ~ /^flags=.*b/) c++ } END { print c + 0 }'
}

PAUSE_MS=20000 # ended by CLIENT UNPAUSE as soon as the query buffer is read
n=0
case_run() { # NAME WANT(pipelined|waits) LINES... (4 of them)
    local name=$1 want=$2 q got paused
    shift 2
    n=$((n + 1))
    sp_producer "P$n"
    sp_feed "P$n" /dev/null # started, connected, scripts loaded
    rcli CLIENT PAUSE $PAUSE_MS WRITE >/dev/null
    paused=$(local_ms)
    printf '%s\n' "$@" >lines.txt
    cat lines.txt >&"${SP_FD[P$n]}" # one write: the producer reads all four at once
    wait_until 10000 '(($(held) >= 1))' || fail "$name: the first batch did not reach Redis within 10 s"
    if [[ $want == pipelined ]]; then
        wait_until 5000 '(($(queued) > 0))' || true # (the assertion below says what came)
    else
        sleep 0.5 # time for a second batch that should wait to show up anyway
    fi
    q=$(queued)
    (($(local_ms) - paused < PAUSE_MS)) ||
        fail "machine too slow: $name: the query buffer was read $(($(local_ms) - paused)) ms after CLIENT PAUSE $PAUSE_MS"
    rcli CLIENT UNPAUSE >/dev/null
    if ((q > 0)); then got=pipelined; else got=waits; fi
    assert_eq "$got" "$want" "$name: the second batch (query buffer $q bytes while paused)"
    sp_feed "P$n" /dev/null # everything before the marker is applied
}

case_run "disjoint IDs" pipelined "touch a1 @$((base + 1))" "touch a2 @$((base + 2))" \
    "touch a3 @$((base + 3))" "cancel a1x"
case_run "extends of one ID" pipelined "extend b @$((base + 10))" "extend b2 @$((base + 1))" \
    "extend b @$((base + 20))" "extend b3 @$((base + 1))"
case_run "touch, then cancel" waits "touch c @$((base + 1)) pc" "touch c2 @$((base + 1))" \
    "cancel c" "touch c3 @$((base + 1))"
case_run "extend, then touch" waits "extend d @$((base + 50))" "touch d2 @$((base + 1))" \
    "touch d @$((base + 5))" "touch d3 @$((base + 1))"

zs() { shard_get ZSCORE z 0 "$1"; } # (shard 0's zset or buckets)
assert_eq "$(zs a1) $(zs a3)" "$((base + 1)) $((base + 3))" "a1, a3"
assert_eq "$(zs b)" $((base + 20)) "b after its extends"
assert_eq "$(zs c)$(shard_get HEXISTS p 0 c)" 0 "c after its cancel (score, payload)"
assert_eq "$(zs d)" $((base + 5)) "d after the touch"
