#!/usr/bin/env bash
# 0595-merge-crash: a merge whose steps die half-way loses nothing, fires
# nothing twice and nothing early; each step run again completes it.
#
# The states each crash leaves are made by hand with redis-cli and the very
# scripts lapse uses (common/lua/*.lua), on 4 shards merging into 2:
#  - `merge` died after its fence (tools/scale/split.c: layout:next written,
#    every shard's epoch raised, nothing published): the layout is
#    unchanged; `split` is refused ("an interrupted merge is pending"),
#    `merge` again completes it (merging 4 -> 2, epoch + 1);
#  - a producer died half-way through moving three IDs of retiring shards
#    (take in the retiring shard, seed + apply in the remaining one, drop),
#    due at t0 + 8 s, with scanner.lease_ms = 1 s:
#      X after take: the retiring shard's scanner fires X once, at its
#        deadline, when the take's lease runs out;
#      Y after apply with a touch to t0 + 6 s: Y fires once, from shard 0
#        or 1, at t0 + 6 s; its twin is dropped, never fired;
#      W after apply with an extend to an earlier time: W fires once from
#        its new shard at its old deadline, with its payload;
#  - `finish` died before its publish (layout:next = the stable layout):
#    `finish` again retires the shards and publishes it; their scanners
#    exit 0, their keys go.
. "$(dirname "$0")/../lib.sh"

SCANNER_CFG="poll_ms = 10; lease_ms = 1000;"
SP_LATE_MS=2000 # the lease + 1 s (lib.sh)
sp_merge_start

seq -f 'i%02g' 0 39 >ids.txt
sp_hashes ids.txt >hashes.txt
read -r iX iY iW _ < <(awk '$2 % 4 >= 2 { printf "%s ", $1 } END { print "" }' hashes.txt)
[[ -n $iW ]] || fail "not enough IDs of retiring shards among i00..i39"
h() { awk -v id="$1" '$1 == id { print $2 }' hashes.txt; }

t0=$(now_ms)
printf 'touch %s @%d px\ntouch %s @%d py\ntouch %s @%d pw\n' \
    "$iX" $((t0 + 8000)) "$iY" $((t0 + 8000)) "$iW" $((t0 + 8000)) | produce
printf '%s\tonce\t%d\tpx\t0\t0\n%s\tonce\t%d\tpy\t0\t1\n%s\tonce\t%d\tpw\t0\t1\n' \
    "$iX" $((t0 + 8000)) "$iY" $((t0 + 6000)) "$iW" $((t0 + 8000)) >expect.tsv

# what a merge that died after its fence leaves behind
epoch0=$(rcli HGET "$NS:layout" epoch)
n0=$(rcli HGET "$NS:layout" nodes | cut -d, -f1)
rcli HSET "$NS:layout:next" shards 2 prev_shards 4 epoch $((epoch0 + 1)) state merging retired 0 \
    nodes "$n0,$n0,$n0,$n0" >/dev/null
for s in 0 1 2 3; do rcli SET "$NS:e:$s" $((epoch0 + 1)) >/dev/null; done
assert_eq "$(sp_status '[.state, .shards, .epoch] | @tsv' | tr '\t' ' ')" "stable 4 $epoch0" "layout while fenced"
rc=0
scale split >split.out 2>split.err || rc=$?
assert_eq "$rc" 1 "split over an interrupted merge: exit status"
assert_file_match split.err 'an interrupted merge is pending: run merge again' "split's refusal"
scale merge >merge.out 2>merge.err || fail "merge (resumed): exit status $?: $(cat merge.err)"
epoch=$(sp_status .epoch)
assert_eq "$(sp_status '[.state, .shards, .prev_shards] | @tsv' | tr '\t' ' ') $epoch" \
    "merging 2 4 $((epoch0 + 1))" "state, shards, prev_shards, epoch after the resumed merge"
assert_eq "$(rcli EXISTS "$NS:layout:next")" 0 "layout:next after the resumed merge"

take() { # ID: take.lua in its retiring shard; checks it was taken, prints the deadline
    local out
    mapfile -t out < <(lapse_lua take $(($(h "$1") % 4)) "$epoch" 1000 "$1")
    [[ ${out[1]:-} == t ]] || fail "take $1: ${out[*]}"
    echo "${out[2]}"
}
dX=$(take "$iX")
dY=$(take "$iY")
lapse_lua seed $(($(h "$iY") % 2)) "$epoch" "$iY" "$dY" 1 py "" >/dev/null
lapse_lua apply $(($(h "$iY") % 2)) "$epoch" 0 "tM@$((t0 + 6000))" "$iY" "" >/dev/null
dW=$(take "$iW")
lapse_lua seed $(($(h "$iW") % 2)) "$epoch" "$iW" "$dW" 1 pw "" >/dev/null
lapse_lua apply $(($(h "$iW") % 2)) "$epoch" 0 "eM@$((t0 + 7000))" "$iW" "" >/dev/null
assert_eq "$dX $dY $dW" "$((t0 + 8000)) $((t0 + 8000)) $((t0 + 8000))" "deadlines the takes found"
took=$(($(now_ms) - t0))
note "X=$iX Y=$iY W=$iW, taken $took ms after t0 with 1 s leases"
((took < 6000)) || fail "the steps took $took ms: past Y's new deadline (machine too slow)"

sp_wait_delivered events.json expect.tsv
wait_until 3000 '[[ $(sp_status .to_move) == 0 ]]' || fail "IDs still in retiring shards: $(scale status)"

# what a finish that died before its publish leaves behind
rcli HSET "$NS:layout:next" shards 2 prev_shards 2 epoch $((epoch + 1)) state stable retired 4 \
    nodes "$n0,$n0" >/dev/null
wait_until 10000 'scale finish >finish.out 2>finish.err' || fail "finish (resumed): $(cat finish.err)"
assert_eq "$(sp_status '[.state, .shards, .prev_shards, .epoch] | @tsv' | tr '\t' ' ')" \
    "stable 2 2 $((epoch + 1))" "layout after the resumed finish"
assert_eq "$(rcli EXISTS "$NS:layout:next")" 0 "layout:next after the resumed finish"
sp_wait_retired 2 3
for s in 2 3; do assert_eq "$(sp_retired_keys $s | paste -sd' ')" "$NS:e:$s" "keys of retired shard $s"; done
sp_wait_no_data 3000
sleep 0.3
events_follow_stop
sp_check events.json expect.tsv hashes.txt 4 2
assert_never_early events.json
