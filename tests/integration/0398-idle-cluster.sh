#!/usr/bin/env bash
# 0398-idle-cluster: idle scanners on a Redis Cluster (3 primaries, 4
# shards) nap and are woken as on a plain node: the mark NS:s:{NS:I} and
# the bell NS:b:{NS:I} carry the shard's hash tag, so the producer's Lua
# call finds them in its own slot and the scanner's BLPOP goes to the
# primary that owns it.
#
#  1. Every scanner naps: its mark ("inf": nothing pending) stands on the
#     primary of its shard's slot, tagged like the shard's zset.
#  2. Three rounds of 8 IDs written 50 ms ahead (spread over the shards by
#     their hash) fire within 900 ms of being written, once each, never
#     early: the writes woke the scanners (idle_ms 3000: they would
#     otherwise sleep up to 3 s).
#
# Catches: a mark or bell named without the shard's tag (CROSSSLOT, or a
# key on another primary: nobody is woken), a BLPOP sent to the wrong
# primary.
. "$(dirname "$0")/../lib.sh"

cluster_start 3
kafka_start --brokers 1
SCANNER_CFG="lease_ms = 10000; idle_ms = 3000;" cluster_config
scale init 4 >/dev/null || fail "init: exit status $?"
for s in 0 1 2 3; do scanner_start "$s"; done
events_follow events.json

# ---- 1. napping, the marks on their shards' primaries
marks_stand() {
    local s
    for s in 0 1 2 3; do
        [[ $(redis-cli -p "$(cluster_shard_port "$s")" GET "$NS:s:{$NS:$s}") == inf ]] || return 1
    done
}
wait_until 10000 marks_stand || fail "not every scanner set its mark on its shard's primary"

# ---- 2. writes wake them
n=0
for r in 1 2 3; do
    w0=$(local_ms)
    for i in 1 2 3 4 5 6 7 8; do echo "touch cw-$r-$i +50"; done | produce || fail "producer: exit status $?"
    n=$((n + 8))
    events_wait_ids events.json "$n" 900 || fail "round $r: IDs due 50 ms after they were written did not all fire within 900 ms"
    note "round $r fired within $(($(local_ms) - w0)) ms of being written"
    wait_until 5000 marks_stand || fail "not every scanner napped again after round $r"
done
assert_once events.json
assert_never_early events.json
scanner_stop
