#!/usr/bin/env bash
# 0120-coalescing: folding a batch's operations per ID gives exactly the Redis
# state of applying them one by one. The same random stream of touch, extend,
# repeat and cancel (absolute times, with and without payloads, over a few
# IDs so most operations meet another of the same ID in their batch) goes to
# namespace "one" with producer.batch = 1 (every operation flushed alone, no
# folding), to "some" in batches of 7 and to "all" in big batches; the
# namespaces must end up identical: deadlines, payloads and repeat records.
. "$(dirname "$0")/../lib.sh"

redis_start main
random_ops 12 4000 >ops.txt

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
