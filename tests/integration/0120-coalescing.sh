#!/usr/bin/env bash
# 0120-coalescing: folding a batch's operations per ID gives exactly the Redis
# state of applying them one by one. The same random stream of touch, extend,
# repeat, cancel and watch (absolute times, with and without payloads, over a few
# IDs so most operations meet another of the same ID in their batch) goes to
# namespace "one" with producer.batch = 1 (every operation flushed alone, no
# folding), to "some" in batches of 7 and to "all" in big batches; the
# namespaces must end up identical: deadlines, payloads, repeat records and
# watch records (a cancel or repeat that forgets a watch, folded away by a
# touch after it, left recovery on: found by the nemesis).
. "$(dirname "$0")/../lib.sh"

redis_start main
RANDOM_OPS_WATCH=1 random_ops 12 4000 >ops.txt
# and surely: a watch, an op that stays beside it (a touch or an extend:
# recovery as it is), a repeat or a cancel (recovery off) that could fold
# into that op, then a touch or an extend that could stand for both; and
# two extends of a new ID with another ID's cancel between them (apply.lua
# compared the second with the score read before the first)
base=$(($(now_ms) + 3600000))
for i in $(seq 0 63); do # an ID in fy-1's shard, for the cancel between its two extends
    [[ $(hash_shard "fz-$i" 4) == $(hash_shard fy-1 4) ]] && { fz=fz-$i; break; }
done
cat >>ops.txt <<EOF
watch fx-1 @$base
touch fx-1 @$((base + 1000))
repeat fx-1 @$base 1000
touch fx-1 @$((base + 5000)) p1
watch fx-2 @$base
extend fx-2 @$((base + 1000))
cancel fx-2
touch fx-2 @$((base + 5000)) p2
watch fx-3 @$base
touch fx-3 @$((base + 1000))
repeat fx-3 @$base 1000
extend fx-3 @$((base + 5000))
watch fx-4 @$base
touch fx-4 @$((base + 1000))
cancel fx-4
extend fx-4 @$((base + 5000)) p4
repeat fy-0 @$base 1000
extend fy-1 @$((base + 8000))
cancel $fz
watch fy-1 @$((base + 5000)) p5
EOF

# "one" also sends each batch while the next is queued (a full batch does
# not wait for its replies); "some" mixes that with folding.
for ns in one some all; do
    case $ns in one) batch=1 ;; some) batch=7 ;; all) batch=100000 ;; esac
    write_config "$ns.conf" "producer = { batch = $batch; };"
    sed -i "s/^namespace = .*/namespace = \"$ns\";/" "$ns.conf"
    lapse_scale "$ns.conf" init 4 >/dev/null
    "$LAPSE_BIN/lapse-producer" -c "$ns.conf" <ops.txt || fail "producer for $ns failed"
    ns_records "$ns" >"$ns.dump"
done

[[ -s one.dump ]] || fail "nothing was written"
for ns in one some; do
    diff "$ns.dump" all.dump >d.diff || {
        head -n 40 d.diff >&2
        fail "batch = 100000 (>) and the batches of \"$ns\" (<) differ"
    }
done
assert_ge "$(grep -c ':z:' all.dump)" 5 "IDs pending at the end"
assert_ge "$(grep -c ':r:' all.dump)" 1 "repeating IDs at the end"
assert_ge "$(grep -c ':o:' all.dump)" 1 "watched IDs at the end"
