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
base=$(($(now_ms) + 3600000)) # far ahead: nothing fires, no scanner anyway
awk -v seed="$RANDOM" -v base="$base" 'BEGIN {
    srand(seed)
    split("touch extend extend extend repeat cancel", ops, " ")
    for (i = 0; i < 4000; i++) {
        op = ops[int(rand() * 6) + 1]; id = "id-" int(rand() * 12)
        t = sprintf("@%.0f", base + int(rand() * 50) * 1000)
        pl = rand() < 0.4 ? " pl-" i : ""
        if (op == "cancel") print "cancel " id
        else if (op == "repeat") print "repeat " id " " t " " (1000 + int(rand() * 3) * 1000) pl
        else print op " " id " " t pl
    }
    print "repeat id-0 @" base " 1000" # so that some ID surely ends repeating
}' >ops.txt

dump() { # NS: every shard record of the namespace, sorted
    local k
    for k in $(rcli --scan --pattern "$1:[zpr]:*" | sort); do
        case $k in
        *:z:*) rcli ZRANGE "$k" 0 -1 WITHSCORES | paste - - | sed "s|^|${k#"$1"} |" ;;
        *) rcli HGETALL "$k" | paste - - | sed "s|^|${k#"$1"} |" ;;
        esac
    done | sort
}

# "one" also sends each batch while the next is queued (a full batch does
# not wait for its replies); "some" mixes that with folding.
for ns in one some all; do
    case $ns in one) batch=1 ;; some) batch=7 ;; all) batch=100000 ;; esac
    write_config "$ns.conf" "producer = { batch = $batch; };"
    sed -i "s/^namespace = .*/namespace = \"$ns\";/" "$ns.conf"
    "$LAPSE_SCRIPTS/lapse-scale" -c "$ns.conf" init 4 >/dev/null
    "$LAPSE_BIN/lapse-producer" -c "$ns.conf" <ops.txt || fail "producer for $ns failed"
    dump "$ns" >"$ns.dump"
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
