#!/usr/bin/env bash
# 0570-split-moved-cache: the producer's moved-ID cache (producer/lib/send_split.c).
# Once a moving ID settled in its new shard, a producer writes it there
# directly: its twin is looked for on its first write of the split, not on
# every write (counted with Redis MONITOR on the old shards' node). On one
# node apply.lua does it (an op with "M ?" and the old shard's keys); with
# SP_TWO_NODES=1 (0571: new shards on a second node) take.lua and drop.lua
# do. Moving IDs:
#   X: pending in its old shard before the split (its twin is taken, copied,
#      dropped), then reset 40 times (extends, touches) and a final touch
#   Y: new during the split (no twin), 40 touches and a final touch
#   R: repeating in its old shard, its first fire in flight (Kafka's round
#      trip is 25 s until A's first write is applied) when A touches it: the
#      busy twin is not taken; the touch puts R in the new shard's moved set,
#      then 40 resets and a final touch. When the fire is acknowledged, the
#      old shard re-arms R, and its scanner must drop that twin (R is in the
#      moved set), never fire it
# and a staying ID Z as a control. Producer O starts before the split and
# keeps the 2-shard layout: after A cached X, O writes X with that layout;
# the old shard refuses it (STALE), O reloads and writes X in its new shard.
# A hand-run apply.lua / take.lua with the old epoch on X's old shard is
# refused and leaves nothing there. With the scanners of the old and the new
# shards running, X, Y and R fire once each (R: besides the fire that was in
# flight), from their new shard, at their final deadline (never early,
# within a second); X's twin is gone (its old deadline never fires).
# Every deadline but R's first and the final ones is a minute ahead, so
# nothing falls due while the test looks, however slow the machine.
. "$(dirname "$0")/../lib.sh"

SCANNER_CFG="poll_ms = 10; lease_ms = 30000;" # R's fire stays in flight for the round trip

sp_start

seq -f 'i%02g' 0 39 >ids.txt
sp_hashes ids.txt >hashes.txt
read -r iX iY iR _ < <(awk '$2 % 4 >= 2 { printf "%s ", $1 } END { print "" }' hashes.txt)
iZ=$(awk '$2 % 4 < 2 { print $1; exit }' hashes.txt)
[[ -n $iR && -n $iZ ]] || fail "not enough moving IDs among i00..i39"
h() { awk -v id="$1" '$1 == id { print $2 }' hashes.txt; }
note "X=$iX Y=$iY R=$iR Z=$iZ"
take_sha=$(lua_source take | sha1sum | cut -d' ' -f1)
apply_sha=$(lua_source apply | sha1sum | cut -d' ' -f1)
drop_sha=$(lua_source drop | sha1sum | cut -d' ' -f1)

lease_ms=30000 rtt=25000 # (Kafka gives up on an event after lease_ms - 1 s, on a request after 30 s)
t0=$(now_ms)
far=$((t0 + 60000)) # the deadlines the test writes before the final ones
dX0=$far            # X's deadline before the split
dR0=$((t0 + 3000)) # (on a fast machine the split is done by then)
# (the event reader's requests would time out in the long round trip: a
# new one reads the topic from its start once the round trip is back to 0)
events_follow_stop
kafka_ctl "rtt 1 $rtt"
printf 'touch %s @%d px0\ntouch %s @%d pz0\nrepeat %s @%d 700 pr\n' "$iX" "$dX0" "$iZ" "$far" \
    "$iR" "$dR0" >pre.txt
tO=$(local_ms)
sp_producer O
sp_feed O pre.txt
epoch0=$(sp_status .epoch)
assert_eq "$(sp_where "$iX")" "$(($(h "$iX") % 2)) $dX0" "X before the split"

SPAWN_OUT=$T/monitor.log spawn monitor redis-cli -h 127.0.0.1 -p "$REDIS_PORT" MONITOR
wait_until 3000 '[[ -s $T/monitor.log ]]' || fail "redis-cli MONITOR did not start"
sp_split >split.out || fail "split: exit status $?"
scanner_start 2
scanner_start 3
epoch=$(sp_status .epoch)
stale0=$(rcli INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_STALE:count=//p')

# A (the split layout) writes X, Y and R once: they settle in their new shard
iold=$(($(h "$iX") % 2)) iRold=$(($(h "$iR") % 2))
sp_producer A
wait_until 5000 'lease1=$(shard_get ZSCORE z "$iRold" "$iR"); is_lease "$lease1"' ||
    fail "R not claimed within 5 s"
# a later claim of R comes after the first one's acknowledgement, rtt ms after it
((${lease1%.*} < dR0 + rtt + lease_ms)) ||
    fail "R's first fire was acknowledged before the test saw it in flight (machine too slow?)"
tA1=$(local_ms)
printf 'extend %s @%d\ntouch %s @%d py1\ntouch %s @%d\n' "$iX" $((far - 1000)) "$iY" $((far - 1000)) \
    "$iR" $((far - 1000)) >a1.txt
sp_feed A a1.txt
[[ $(shard_get ZSCORE z "$iRold" "$iR") == "$lease1" ]] ||
    fail "R's first fire was acknowledged before A touched R ($(($(local_ms) - tA1)) ms: machine too slow?)"
kafka_ctl "rtt 1 0"
rm -f events.json
events_follow events.json
# the extend, earlier than the twin's deadline, changed nothing
assert_eq "$(sp_where "$iX")" "$(($(h "$iX") % 4)) $dX0" "X after A's first write"
# O, with the old layout, writes X: refused by X's old shard, then applied
# in its new shard after a take (O's own first write of X)
printf 'touch %s @%d po\n' "$iX" $((far - 500)) >o1.txt
tO1=$(local_ms)
sp_feed O o1.txt
stale1=$(rcli INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_STALE:count=//p')
if ((tO1 - tO < 900)); then
    assert_ge "${stale1:-0}" $((${stale0:-0} + 1)) "STALE replies to producer O after the split"
else
    note "O's write came $((tO1 - tO)) ms after its start: it may have re-read the layout by itself"
fi
assert_eq "$(sp_where "$iX")" "$(($(h "$iX") % 4)) $((far - 500))" "X after O's write"

# a writer with the old layout is refused by X's old shard, which stays empty
assert_match "$(lapse_lua apply "$iold" "$epoch0" 0 "t@$((far - 400))" "$iX" 2>&1)" "^STALE $epoch" \
    "apply.lua with the old epoch"
assert_match "$(lapse_lua take "$iold" "$epoch0" 1000 "$iX" 2>&1)" "^STALE $epoch" "take.lua with the old epoch"
assert_eq "$(shard_get ZSCORE z "$iold" "$iX")" "" "X in its old shard after the refused writes"

# 40 more resets each, one or two a batch; then the final deadlines
for ((k = 1; k <= 40; k++)); do
    if ((k % 2)); then
        printf 'extend %s @%d\ntouch %s @%d\n' "$iX" $((far + k)) "$iY" $((far + k))
    else
        printf 'touch %s @%d px%d\ntouch %s @%d\n' "$iX" $((far + k)) "$k" "$iY" $((far + k))
    fi >&"${SP_FD[A]}"
    printf 'extend %s @%d\n' "$iR" $((far + k)) >&"${SP_FD[A]}"
    sleep 0.02
done
# where the resets landed, while X's and Y's deadlines are far ahead (after
# the final touches below a slow machine may already have fired them)
sp_feed A /dev/null
for id in $iX $iY; do
    assert_eq "$(sp_where "$id")" "$(($(h "$id") % 4)) $((far + 40))" "$id after the writes"
done
tf=$(now_ms)
dX=$((tf + 1500)) dY=$((tf + 1700)) dR=$((tf + 1900))
printf 'touch %s @%d pxf\ntouch %s @%d pyf\ntouch %s @%d prf\n' "$iX" "$dX" "$iY" "$dY" "$iR" "$dR" >a2.txt
sp_feed A a2.txt
proc_stop monitor 5

# the twin was looked for once per producer that wrote X (A's first write,
# O's), once for Y and R; two nodes: drop once for X (the twin A copied),
# never for R (busy); one node: no take or drop at all
count() { grep -F "\"$1\"" monitor.log | grep -F "\"$2\"" | wc -l; }
# (an op's head with the flag M, then the ID: a batch of cached IDs may
# carry another ID's "M ?" too)
local_moves() {
    grep -F "\"$apply_sha\"" monitor.log | grep -F '"?"' |
        grep -oE "\"[trec][A-Z]*M[A-Z]*([@+][0-9]+)?\" \"$1\"" | wc -l
}
note "MONITOR: take X $(count "$take_sha" "$iX"), Y $(count "$take_sha" "$iY"), R $(count "$take_sha" "$iR"); drop X $(count "$drop_sha" "$iX"); apply with \"?\": X $(local_moves "$iX"), Y $(local_moves "$iY"), R $(local_moves "$iR"); lines with X $(grep -cF "\"$iX\"" monitor.log)"
if [[ ${SP_TWO_NODES:-0} == 1 ]]; then
    assert_eq "$(count "$take_sha" "$iX")" 2 "take.lua calls with X (A's first write, O's)"
    assert_eq "$(count "$take_sha" "$iY")" 1 "take.lua calls with Y"
    assert_eq "$(count "$take_sha" "$iR")" 1 "take.lua calls with R"
    # (R's one may be its old scanner's, dropping the re-armed twin once the
    # fire in flight is acknowledged: on a slow machine before MONITOR stops)
    assert_le "$(count "$drop_sha" "$iR")" 1 "drop.lua calls with R (none from a producer)"
    assert_eq "$(count "$drop_sha" "$iX")" 1 "drop.lua calls with X"
else
    assert_eq "$(local_moves "$iX")" 2 "apply.lua calls moving X (A's first write, O's)"
    assert_eq "$(local_moves "$iY")" 1 "apply.lua calls moving Y"
    assert_eq "$(local_moves "$iR")" 1 "apply.lua calls moving R"
    assert_eq "$(grep -cF "\"$take_sha\"" monitor.log) $(count "$drop_sha" "$iX")" "0 0" \
        "take.lua calls, drop.lua calls with X (none on one node)"
fi
assert_ge "$(grep -cF "\"$iX\"" monitor.log)" 20 "Redis commands naming X (the writes reached Redis)"
# R's old twin, re-armed when its fire is acknowledged, is dropped as stale
# (R's copy in its new shard may have fired by now)
wait_ms=$((${lease1%.*} - lease_ms + rtt + 5000 - $(now_ms)))
wait_until $((wait_ms > 3000 ? wait_ms : 3000)) '! sp_where "$iR" | grep -q "^$iRold "' ||
    fail "R's old twin was not dropped: $(sp_where "$iR" | paste -sd' ')"

# both scanners of X's and Y's old and new shards run: each fires once
fired() { sp_events_tsv events.json | awk -F'\t' -v d="$1" '$2 == d' | wc -l; }
wait_ms=$((dR + 5000 - $(now_ms)))
wait_until $((wait_ms > 3000 ? wait_ms : 3000)) '(($(fired "$dX") + $(fired "$dY") + $(fired "$dR") >= 3))' ||
    fail "the final deadlines did not all fire: $(sp_events_tsv events.json | paste -sd' ')"
{
    sp_marker_cancels
    echo "cancel $iZ"
} | produce || fail "cancelling the markers: exit status $?"
wait_until 3000 '[[ $(sp_status .to_move) == 0 ]]' || fail "moving IDs still in old shards: $(scale status)"
scale finish >/dev/null || fail "finish: exit status $?"
sp_wait_no_data 3000
sleep 0.3
events_follow_stop
got() { sp_events_tsv events.json | awk -F'\t' -v id="$1" '$1 == id { print $2 "/" $5 "/" $4 }' | paste -sd' '; }
assert_eq "$(got "$iX")" "$dX/pxf/$(($(h "$iX") % 4))" "X's fires (deadline/payload/shard)"
assert_eq "$(got "$iY")" "$dY/pyf/$(($(h "$iY") % 4))" "Y's fires (deadline/payload/shard)"
assert_eq "$(got "$iR")" "$dR0/pr/$iRold $dR/prf/$(($(h "$iR") % 4))" "R's fires (the one in flight, the final one)"
assert_eq "$(got "$iZ")" "" "Z's fires (cancelled)"
late=$(sp_events_tsv events.json | awk -F'\t' -v x="$iX" -v y="$iY" -v r="$iR" \
    '($1 == x || $1 == y || $1 == r && $2 != '"$dR0"') && $3 - $2 > 1000')
[[ -z $late ]] || fail "fired more than a second late: $late"
assert_never_early events.json
for p in A O; do
    proc_stop "$p" 10
    assert_eq "$PROC_RC" 0 "producer $p's exit status"
done
