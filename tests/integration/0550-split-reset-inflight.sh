#!/usr/bin/env bash
# 0550-split-reset-inflight: writes that land during a split while a moving
# ID's old deadline is being dispatched from its old shard (0030 during a
# split). Kafka's round trip is 2 s, so the old shards' claimed IDs stay in
# flight; meanwhile a producer that knows the split writes them (into their
# new shard, the twin being busy):
#   touch  A +3000 pa2  -> both fire: the old deadline (pa), the new (pa2)
#   extend B +3000      -> both fire; B's payload pb is kept (none given)
#   touch  D +3000      -> both fire; D's payload pd is kept (none given)
#   cancel C            -> C's in-flight fire only, nothing more
#   extend E earlier    -> E was claimed out of its old shard: nothing is
#                          pending, so the extend sets the earlier deadline
#                          (as one landing after the ack would) and E fires
#                          again with it, with its payload pe kept
#   cancel R            -> R repeats; its fire in flight may arrive, then
#                          nothing more, although the old shard re-arms it
#                          when that fire is acknowledged (the old scanner
#                          must drop the re-armed twin: R is in the moved set)
#   touch  T +3000      -> T repeats; its fire in flight, then one one-shot
#                          fire of the new deadline (no seq), nothing more
#   touch  N +3000      -> N stays in its shard (control, no split path):
#                          both fire, N's payload pn kept
. "$(dirname "$0")/../lib.sh"

sp_start
echo "touch warm +0" | produce
events_wait_ids events.json 1 10000

seq -f 'i%02g' 0 59 >ids.txt
sp_hashes ids.txt >hashes.txt
read -r iA iB iC iD iE iR iT _ < <(awk '$2 % 4 >= 2 { printf "%s ", $1 } END { print "" }' hashes.txt)
iN=$(awk '$2 % 4 < 2 { print $1; exit }' hashes.txt)
[[ -n $iT && -n $iN ]] || fail "not enough moving IDs among i00..i59"
note "A=$iA B=$iB C=$iC D=$iD E=$iE R=$iR T=$iT N=$iN"

printf '%s\n' "touch $iA +800 pa" "touch $iB +800 pb" "touch $iC +800 pc" "touch $iD +800 pd" \
    "touch $iE +800 pe" "repeat $iR +800 600 pr" "repeat $iT +800 600 pt" "touch $iN +800 pn" | produce
sp_split >split.out || fail "split: exit status $?"
scanner_start 2
scanner_start 3
kafka_ctl "rtt 1 2000"
all="$iA $iB $iC $iD $iE $iR $iT $iN"
# (one query for all IDs each time: Kafka's 2 s round trip is the time the
# checks and writes below have, also on a loaded machine)
# (the old shards, 0 and 1, are on the first node in both variants)
claimed() { # "ID DEADLINE" for each ID of $all in flight in shard 0 or 1
    rcli EVAL "$(lua_source lib/inflight)$_CLAIM_OF_LUA
        local out = {}
        for i = 1, #ARGV do
            for s = 0, 1 do
                local l = _claim_of(KEYS[2 * s + 1], KEYS[2 * s + 2], ARGV[i])
                local d = l and inflight_deadline(KEYS[2 * s + 2], l, ARGV[i])
                if d then out[#out + 1] = ARGV[i] .. ' ' .. string.format('%d', d); break end
            end
        end
        return out" 4 "$NS:z:0" "$NS:f:0" "$NS:z:1" "$NS:f:1" $all
}
inflight() { (($(claimed | wc -l) == 8)); }
wait_until 5000 inflight || fail "not all claimed within 5 s: $(claimed | paste -sd' ') ($(sp_where_all $all | paste -sd' '))"
declare -A dl
while read -r id d; do dl[$id]=$d; done < <(claimed)

t1=$(now_ms)
printf '%s\n' "touch $iA +3000 pa2" "extend $iB +3000" "touch $iD +3000" "cancel $iC" \
    "extend $iE @$((dl[$iE] - 100))" "cancel $iR" "touch $iT +3000" "touch $iN +3000" | produce ||
    fail "producer: exit status $?"
t2=$(now_ms)
[[ $(rcli HLEN "$NS:f:0") != 0 || $(rcli HLEN "$NS:f:1") != 0 ]] ||
    fail "the dispatch completed before the writes landed (test too slow?)"

wait_until 10000 '[[ $(rcli HLEN "$NS:f:0") == 0 && $(rcli HLEN "$NS:f:1") == 0 ]]' ||
    fail "in-flight IDs not acknowledged within 10 s"
kafka_ctl "rtt 1 0"
got() { jq -r --arg id "$1" 'select(.id == $id) | "\(.deadline_ms)/\(.payload // "-")/\(.seq // 0)"' events.json | paste -sd' '; }
# the new deadlines fire (3 s after the writes), and R/T's twins fall due again
wait_until 6000 '(($(jq -c "select(.deadline_ms >= $t1 + 3000)" events.json | wc -l) >= 5))' ||
    fail "the new deadlines did not all fire: A: $(got $iA) B: $(got $iB) D: $(got $iD) T: $(got $iT) N: $(got $iN)"
sleep 1.5 # > R and T's period: a wrongly fired twin shows
ds() { got "$1" | sed 's|/[^/ ]*/|/|g'; }
assert_eq "$(ds "$iR")" "${dl[$iR]}/1" "R's fires (cancelled while in flight: the re-armed old twin must not fire)"
assert_eq "$(got "$iT" | wc -w)" 2 "T's fire count (touched while in flight: the re-armed old twin must not fire)"
wait_until 3000 '[[ $(sp_status .to_move) == 0 ]]' || fail "moving IDs still in old shards: $(scale status)"
scale finish >/dev/null || fail "finish: exit status $?"
sp_wait_no_data 3000
sleep 0.3
events_follow_stop

new() { jq -r --arg id "$1" 'select(.id == $id and .deadline_ms != '"${dl[$1]}"') | .deadline_ms' events.json; }
for id in $iA $iB $iD $iT $iN; do
    d=$(new "$id")
    [[ $(wc -w <<<"$d") == 1 ]] || fail "$id: new deadlines fired: '$d' ($(got "$id"))"
    assert_ge "$d" $((t1 + 3000)) "$id's new deadline"
    assert_le "$d" $((t2 + 3000)) "$id's new deadline"
done
nA=$(new "$iA") nB=$(new "$iB") nD=$(new "$iD") nT=$(new "$iT") nN=$(new "$iN")
# what fired: deadline/seq (reset wins, cancel, no stale twin) ...
assert_eq "$(ds "$iN")" "${dl[$iN]}/0 $nN/0" "N's fires (control: no split)"
assert_eq "$(ds "$iA")" "${dl[$iA]}/0 $nA/0" "A's fires"
assert_eq "$(ds "$iB")" "${dl[$iB]}/0 $nB/0" "B's fires"
assert_eq "$(ds "$iD")" "${dl[$iD]}/0 $nD/0" "D's fires"
assert_eq "$(ds "$iC")" "${dl[$iC]}/0" "C's fires"
assert_eq "$(ds "$iE" | tr ' ' '\n' | sort | paste -sd' ')" "$((dl[$iE] - 100))/0 ${dl[$iE]}/0" "E's fires"
assert_eq "$(ds "$iR")" "${dl[$iR]}/1" "R's fires"
assert_eq "$(ds "$iT")" "${dl[$iT]}/1 $nT/0" "T's fires"
assert_never_early events.json
# ... and with which payload: one given replaces, none keeps the stored one
assert_eq "$(got "$iN")" "${dl[$iN]}/pn/0 $nN/pn/0" "N's fires (control: no split)"
assert_eq "$(got "$iA")" "${dl[$iA]}/pa/0 $nA/pa2/0" "A's fires"
assert_eq "$(got "$iB")" "${dl[$iB]}/pb/0 $nB/pb/0" "B's fires (extend without payload keeps pb)"
assert_eq "$(got "$iD")" "${dl[$iD]}/pd/0 $nD/pd/0" "D's fires (touch without payload keeps pd)"
assert_eq "$(got "$iT")" "${dl[$iT]}/pt/1 $nT/pt/0" "T's fires (touch without payload keeps pt)"
assert_eq "$(got "$iE" | tr ' ' '\n' | sort | paste -sd' ')" "$((dl[$iE] - 100))/pe/0 ${dl[$iE]}/pe/0" \
    "E's fires (an extend without payload, its twin claimed: keeps pe)"
