#!/usr/bin/env bash
# 0560-split-producer-crash: a producer that dies half-way through writing a
# moving ID during a split (producer/lib/send.c: 1. take the twin in the old
# shard, 2. seed + apply in the new shard, 3. drop the twin) loses nothing,
# fires nothing twice and nothing early.
#
# The steps are run by hand with redis-cli and the very scripts lapse uses
# (common/lua/*.lua), as a producer with the split layout would, then left
# unfinished. Three moving IDs, pending in their old shard, due at t0 + 8 s
# (the steps by hand took 4.7 s on a loaded machine: they must end before
# the deadlines, or W's twin fires from its new shard before its extend):
#   X: dies after 1 (taken, leased for scanner.lease_ms = 1 s): when the
#      lease runs out, the old shard's scanner must fire X, once, at its
#      deadline, not earlier
#   Y: dies after 2 with a touch to t0 + 6 s: Y fires once, from its new
#      shard, at t0 + 6 s; the old twin is dropped, never fired
#   W: dies after 2 with an extend to an earlier time (no effect): W fires
#      once from its new shard at its old deadline, with its payload
. "$(dirname "$0")/../lib.sh"

SCANNER_CFG="poll_ms = 10; lease_ms = 1000;"
SP_LATE_MS=2000 # the lease + 1 s (lib.sh)
sp_start

seq -f 'i%02g' 0 39 >ids.txt
sp_hashes ids.txt >hashes.txt
read -r iX iY iW _ < <(awk '$2 % 4 >= 2 { printf "%s ", $1 } END { print "" }' hashes.txt)
[[ -n $iW ]] || fail "not enough moving IDs among i00..i39"
h() { awk -v id="$1" '$1 == id { print $2 }' hashes.txt; }

t0=$(now_ms)
printf 'touch %s @%d px\ntouch %s @%d py\ntouch %s @%d pw\n' \
    "$iX" $((t0 + 8000)) "$iY" $((t0 + 8000)) "$iW" $((t0 + 8000)) | produce
printf '%s\tonce\t%d\tpx\t0\t0\n%s\tonce\t%d\tpy\t0\t1\n%s\tonce\t%d\tpw\t0\t1\n' \
    "$iX" $((t0 + 8000)) "$iY" $((t0 + 6000)) "$iW" $((t0 + 8000)) >expect.tsv
scale split >split.out || fail "split: exit status $?"
scanner_start 2
scanner_start 3
epoch=$(sp_status .epoch)

take() { # ID: take.lua in its old shard; checks it was taken, prints the deadline
    local out
    mapfile -t out < <(lapse_lua take $(($(h "$1") % 2)) "$epoch" 1000 "$1")
    [[ ${out[1]:-} == t ]] || fail "take $1: ${out[*]}"
    echo "${out[2]}"
}

dX=$(take "$iX")
dY=$(take "$iY")
lapse_lua seed $(($(h "$iY") % 4)) "$epoch" "$iY" "$dY" 1 py "" >/dev/null
lapse_lua apply $(($(h "$iY") % 4)) "$epoch" 0 "tM@$((t0 + 6000))" "$iY" "" >/dev/null
dW=$(take "$iW")
lapse_lua seed $(($(h "$iW") % 4)) "$epoch" "$iW" "$dW" 1 pw "" >/dev/null
lapse_lua apply $(($(h "$iW") % 4)) "$epoch" 0 "eM@$((t0 + 7000))" "$iW" "" >/dev/null
assert_eq "$dX $dY $dW" "$((t0 + 8000)) $((t0 + 8000)) $((t0 + 8000))" "deadlines the takes found"
took=$(($(now_ms) - t0))
note "X=$iX Y=$iY W=$iW, taken $took ms after t0 with 1 s leases"
((took < 6000)) || fail "the steps took $took ms: past Y's new deadline (machine too slow)"

sp_wait_delivered events.json expect.tsv
wait_until 3000 '[[ $(sp_status .to_move) == 0 ]]' || fail "moving IDs still in old shards: $(scale status)"
scale finish >/dev/null || fail "finish: exit status $?"
sp_wait_no_data 3000
sleep 0.3
events_follow_stop
sp_check events.json expect.tsv hashes.txt 2 4
assert_never_early events.json
