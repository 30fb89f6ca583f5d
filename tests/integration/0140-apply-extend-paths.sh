#!/usr/bin/env bash
# 0140-apply-extend-paths: apply.lua writes plain extends with ZADD GT,
# without reading scores (those the producer sends as plain pairs without
# even decoding them); only when fewer changed than were given and something
# is in flight does it read scores, for IDs in flight (a lease score, the
# dispatched deadline in the lease's record in f) whose new deadline beats
# the dispatched one but not the lease. Shards with repeating IDs take the
# comparing path. Each case is checked against what extend means: the
# pending deadline moves only later, and for an ID in flight the deadline
# that counts is the dispatched one, not the lease.
# One-zset form (scale_init_one_zset, also under LAPSE_TEST_SMALL_KEYS=1):
# it tests that form's internals (scores and records it crafts and reads
# in NS:z:I and its hashes).
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale_init_one_zset 1 >/dev/null
epoch=$(shard_epoch 0)
b=$(($(now_ms) + 3600000)) # far ahead: nothing is due
call() { lapse_lua apply 0 "$epoch" "$@"; } # K [MS ID]... [HEAD ID ...]...: on shard 0
apply() { call 0 "$@"; } # HEAD ID ...: no plain pairs
score() { rcli ZSCORE "$NS:z:0" "$1"; }

# 1. No ID in flight, no f key: ZADD GT, for plain pairs as they come and
# for plain extends among other ops.
rcli ZADD "$NS:z:0" $((b + 1000)) A >/dev/null
assert_eq "$(apply "e@$((b + 2000))" A "e@$((b + 500))" C "e@$((b + 1500))" A)" 2 "changed (A raised, C added, A not lowered)"
assert_eq "$(score A) $(score C)" "$((b + 2000)) $((b + 500))" "scores after plain extends"
assert_eq "$(rcli EXISTS "$NS:f:0")" 0 "f untouched"
assert_eq "$(call 2 $((b + 2500)) A $((b + 400)) C "t@$((b + 100))" H)" 2 "changed (pairs: A raised, C not lowered; H touched)"
assert_eq "$(score A) $(score C) $(score H)" "$((b + 2500)) $((b + 500)) $((b + 100))" "scores after plain pairs"
rcli ZADD "$NS:z:0" $((b + 1000)) A >/dev/null

# 2. B in flight: lease score, dispatched deadline b + 100 in f. An extend
# to b + 200 beats the dispatched deadline (though not the lease): it must
# become B's deadline, or the acknowledgement of the old fire removes B.
# An extend to b + 50 changes nothing. A, not in flight, still goes by GT.
rcli ZADD "$NS:z:0" "$((b + 90000)).5" B >/dev/null
inflight_set 0 "$((b + 90000)).5" B $((b + 100))
assert_eq "$(apply "e@$((b + 50))" B "e@$((b + 3000))" A)" 1 "changed (B kept, A raised)"
assert_eq "$(score B) $(score A)" "$((b + 90000)).5 $((b + 3000))" "an earlier extend leaves the lease"
assert_eq "$(call 2 $((b + 60)) B $((b + 3100)) A)" 1 "changed (pairs: B kept, A raised)"
assert_eq "$(score B) $(score A)" "$((b + 90000)).5 $((b + 3100))" "a plain pair leaves the lease"
assert_eq "$(call 1 $((b + 200)) B)" 1 "changed (B past its dispatched deadline)"
assert_eq "$(score B)" "$((b + 200))" "the in-flight ID's new deadline"
# Twice in one run (plain extends among other ops): the later of the two
# that beat the dispatched deadline, counted as two extends in a row would be.
rcli ZADD "$NS:z:0" "$((b + 90000)).5" B >/dev/null
assert_eq "$(apply "e@$((b + 150))" B "e@$((b + 120))" B "t@$((b + 10))" H)" 2 "changed (B raised once, H touched)"
assert_eq "$(score B)" "$((b + 150))" "the later of two extends of an ID in flight"
# Past the lease: ZADD GT alone; and an ID in flight without a record (its
# lease's whole value stands in for the deadline: only a later one beats it).
rcli ZADD "$NS:z:0" "$((b + 90000)).5" B "$((b + 80000)).5" J >/dev/null
assert_eq "$(call 2 $((b + 95000)) B $((b + 70000)) J)" 1 "changed (B past its lease; J without a record kept)"
assert_eq "$(score B) $(score J)" "$((b + 95000)) $((b + 80000)).5" "past the lease; no record"
rcli ZREM "$NS:z:0" J >/dev/null

# 3. Per-ID order inside one call across the paths: touch (staged), extend
# (GT), extend with payload (comparing), extend (GT), cancel, extend (GT).
assert_eq "$(apply "t@$((b + 7000))" D "e@$((b + 6000))" D "eP@$((b + 8000))" D pd \
    "e@$((b + 7500))" D c E "e@$((b + 10))" E)" 4 "changed (touch, payload extend, cancel, extend)"
assert_eq "$(score D) $(rcli HGET "$NS:p:0" D)" "$((b + 8000)) pd" "D after its run"
assert_eq "$(score E)" "$((b + 10))" "E set again after its cancel"

# 4. A repeating ID in the shard: extends compare (a winning one also makes
# the ID one-shot again), a losing one leaves the repeat.
apply "rR@$((b + 5000))" F 1000 >/dev/null
assert_eq "$(apply "e@$((b + 4000))" F)" 0 "changed (an earlier extend of F)"
assert_eq "$(rcli HGET "$NS:r:0" F)" "1000:0" "F still repeating"
assert_eq "$(call 1 $((b + 4500)) F)" 0 "changed (a plain pair earlier than F)"
assert_eq "$(rcli HGET "$NS:r:0" F)" "1000:0" "F still repeating after a plain pair"
assert_eq "$(call 1 $((b + 6000)) F "e@$((b + 9000))" A)" 2 "changed (F and A raised)"
assert_eq "$(rcli HEXISTS "$NS:r:0" F) $(score F) $(score A)" "0 $((b + 6000)) $((b + 9000))" "F one-shot, A raised"

# 5. Relative times are taken from Redis's clock.
apply "e+60000" G >/dev/null
s=$(score G)
t=$(rcli TIME | head -n 1)
assert_ge "$s" $((t * 1000 + 58000)) "a relative extend's deadline"
