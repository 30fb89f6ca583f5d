#!/usr/bin/env bash
# 0260-ingress-split: `lapse-scale split` 2 -> 4 shards while the Kafka
# ingress (lapse-producer --from-kafka) consumes: guarantees 1-5 hold for
# what it applies, and it commits only what Redis holds.
#
# The split tests' workload (sp_workload, tests/lib/split.sh: 300 IDs with
# absolute deadlines, touches, extends later and earlier, cancels, repeats,
# payloads) arrives as JSON command messages (key = the ID, so one ID's
# commands keep their order on one partition). One ingress, started before
# the split, applies all of it:
#  - before the split, every ID's first write (pre.txt). Once the group
#    committed every offset, Redis holds every ID in its place of the
#    2-shard layout with its deadline and payload (committed => applied);
#  - across the split, 48 more IDs (d000..d047), each written twice: first
#    in a stream, 8 IDs before the split, 12 while `split` runs (the fence
#    lands before, among or after those writes) and 28 after it returned;
#    then once more (extend earlier or later, cancel, touch, repeat). A
#    second without writes comes first, so the stream's first write reads
#    the 2-shard layout and the ingress keeps it for the next second: its
#    writes after the fence carry the old epoch, and it learns of the split
#    late, from STALE, while consuming (asserted when the stream took less
#    than that second);
#  - after the split, a new stdin producer B writes the hand-over group
#    first (b1.txt), then the ingress a1.txt and b2.txt: a write of the
#    ingress into an old shard would be lost there.
# Scanners of shards 0 and 1 run throughout, those of 2 and 3 from the split
# on. Once everything is committed, and before anything is due, every ID is
# where it belongs (its new shard if written after the split) with its final
# deadline and payload, cancelled ones nowhere. Then, as in 0500 (sp_check):
# every one-shot ID fires exactly once with its final deadline and payload,
# from that shard; cancelled ones never; repeats with seq 1, 2, ... on their
# grid until cancelled (through the ingress too), then at most the fire
# already claimed; nothing early. `finish` succeeds, no data key is left,
# every offset is committed, and the ingress exits 0 on SIGTERM, having
# taken every message as a command.
. "$(dirname "$0")/../lib.sh"

IN=lapse.in
G=g-split
SP_LEAD_MS=20000 # the writes (with a second's pause) take ~1.5 s; the mock Kafka adds 1 s stalls at times; a loaded machine took 13 s under a sanitizer

sp_start
kafka_ctl "topic $IN 4"
echo "ingress = { topic = \"$IN\"; group = \"$G\"; properties = ( $INGRESS_PROPS ); };" >>"$CONF"
ingress_start

# Everything the ingress gets goes through one lapse-kafka-put, reading a
# FIFO (a new one now and then costs the mock cluster a second to start);
# a sleep holds the FIFO open (not this shell: the programs started later
# would inherit it) until the end
mkfifo in.fifo
kafka_put "$IN" <in.fifo &
putter=$!
SPAWN_OUT=in.fifo spawn fifo-holder sleep 300
to_fifo() { # < LINES: into the FIFO (bounded: lapse-kafka-put may have died)
    timeout 10 sh -c 'cat >in.fifo' ||
        fail "lapse-kafka-put did not take its input: $(tail -n 1 kafka-put.log 2>/dev/null)"
}
SENT=0
send() { # FILE: its lines (key<TAB>value) to the ingress's topic
    to_fifo <"$1"
    SENT=$((SENT + $(wc -l <"$1")))
}
printf 'warm-up\t{"op":"cancel","id":"warm-up"}\n' >warm-up.msg
send warm-up.msg

# msgs FILE...: the producer lines as command messages, key<TAB>JSON
msgs() {
    jq -R -r 'split(" ") as $f | {op: $f[0], id: $f[1]}
        + (if $f[0] == "cancel" then {} else {at_ms: ($f[2][1:] | tonumber)} end)
        + (if $f[0] == "repeat" then {period_ms: ($f[3] | tonumber), payload: ($f[4:] | join(" "))}
           else {payload: ($f[3:] | join(" "))} end)
        | if .payload == "" then del(.payload) else . end
        | "\(.id)\t\(tojson)"' "$@"
}

# state IDS_FILE: "ID SHARD SCORE PAYLOAD(0/1)" for every shard zset of NS
# (on any node) holding an ID of the file: a snapshot
state() { SP_WHERE_PAYLOAD=1 sp_where_all $(cat "$1") | sed '/^$/d'; }

# all_committed: Kafka holds every message sent so far (SENT; a retried
# put may add a duplicate) and the group committed every partition to its end
all_committed() {
    kafka_committed "$IN" $G | awk -v n="$SENT" '{ h += $3; if ($2 != $3 && $3 != 0) open = 1 }
        END { exit !(h >= n && !open) }'
}

# committed_as WHAT WANT IDS_FILE: waits for all_committed; then the IDs of
# IDS_FILE are in Redis exactly as WANT says ("ID SHARD SCORE PAYLOAD"; an
# ID WANT does not list is in no shard)
committed_as() {
    wait_until 10000 all_committed ||
        fail "$1: not all of $SENT messages committed within 10 s: $(kafka_committed "$IN" $G | tr '\n' ';')"
    state "$3" | awk '{ printf "%s %s %.0f %s\n", $1, $2, $3, $4 }' | sort >"$1.got"
    sort "$2" >"$1.want"
    if ! cmp -s "$1.want" "$1.got"; then
        diff "$1.want" "$1.got" >"$1.diff" || true
        head -n 20 "$1.diff" >&2
        (($(now_ms) < t0 + SP_LEAD_MS)) ||
            fail "$1: the writes took until t0 + $(($(now_ms) - t0)) ms: deadlines passed meanwhile (machine too slow)"
        fail "$1: all committed, but Redis holds $(wc -l <"$1.got") IDs not as sent ($(wc -l <"$1.want") wanted; < want, > got)"
    fi
}

stale() { # STALE replies of the old shards' node (the ingress's: B starts after the split)
    local n
    n=$(rcli INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_STALE:count=//p')
    echo "${n:-0}"
}

# (the group join takes ~3 s: meanwhile the IDs are hashed)
{ seq -f 's%03g' 0 299; seq -f 'd%03g' 0 47; } >ids.txt
sp_hashes ids.txt >hashes.txt
assert_eq "$(wc -l <hashes.txt)" 348 "hashed IDs"
seq -f 's%03g' 0 299 >s-ids.txt
seq -f 'd%03g' 0 47 >d-ids.txt
ingress_wait_assigned

t0=$(now_ms)
sp_workload "$t0" 300 260

# The IDs written across the split, in sp_workload's terms: d1.txt (the
# stream) and d2.txt (after the split), appended to expect.tsv; each is
# written after the split
awk -v t0="$t0" -v n=48 -v lead="$SP_LEAD_MS" -v spread="$SP_SPREAD_MS" '
    function r(lo, hi) { return lo + int(rand() * (hi - lo + 1)) }
    function ms(d) { return sprintf("%.0f", d) }
    function op(file, o, id, d, per, pl) {
        if (o == "cancel") { alive[id] = 0; pay[id] = "-"; period[id] = 0; print "cancel " id > file; return }
        if (o != "extend" || !alive[id] || d > dl[id]) {
            alive[id] = 1; dl[id] = d; period[id] = (o == "repeat") ? per : 0
            if (pl != "") pay[id] = pl
        }
        print o " " id " @" ms(d) (o == "repeat" ? " " per : "") (pl != "" ? " " pl : "") > file
    }
    BEGIN {
        srand(2600); LO = t0 + lead; HI = t0 + lead + spread
        for (i = 0; i < n; i++) {
            id = sprintf("d%03d", i); c = i % 6; pay[id] = "-"
            if (c == 0) { op("d1.txt", "touch", id, r(LO, HI), 0, "q0-" i); op("d2.txt", "extend", id, dl[id] - r(100, 800), 0, "xq-" i) }
            if (c == 1) { op("d1.txt", "touch", id, r(LO, HI - 1000), 0, "q1-" i); op("d2.txt", "extend", id, dl[id] + r(200, 1000), 0, "") }
            if (c == 2) { op("d1.txt", "touch", id, r(LO, HI), 0, "q2-" i); op("d2.txt", "cancel", id) }
            if (c == 3) { op("d1.txt", "touch", id, r(LO, HI), 0, ""); op("d2.txt", "touch", id, r(LO, HI), 0, "q3-" i) }
            if (c == 4) { op("d1.txt", "repeat", id, r(LO, LO + 800), r(700, 1000), "q4-" i); op("d2.txt", "touch", id, r(LO, HI), 0, "") }
            if (c == 5) { op("d1.txt", "touch", id, r(LO, HI), 0, "q5-" i); op("d2.txt", "repeat", id, r(LO, LO + 800), r(700, 1000), "") }
            printf "%s\t%s\t%.0f\t%s\t%d\t1\n", id, !alive[id] ? "none" : period[id] ? "repeat" : "once",
                dl[id], pay[id], period[id] >> "expect.tsv"
        }
    }'
assert_eq "$(wc -l <expect.tsv)" 348 "IDs in expect.tsv"
note "t0 $t0: $(cut -f2 expect.tsv | sort | uniq -c | tr -s ' \n' ' ')"
for f in pre d1 d2; do msgs $f.txt >$f.msg; done
msgs a1.txt b2.txt >after.msg

# ---- before the split: every ID's first write
send pre.msg
awk 'NR == FNR { h[$1] = $2; next }
     { n = $1 == "repeat" ? 5 : 4; print $2, h[$2] % 2, substr($3, 2), (NF >= n ? 1 : 0) }' hashes.txt pre.txt >pre.state
committed_as pre pre.state s-ids.txt
tP=$(local_ms) # the ingress's last write was before this
epoch0=$(sp_status .epoch)

# ---- across the split. The ingress re-reads the layout before a write
# only when its last read is a second old: after a second without writes,
# the stream's first write reads the 2-shard layout, and its writes of the
# next second use that (this pause sets the scene; it waits for no result)
stream_applied() { (($(state d-ids.txt | wc -l) >= $1)); } # N: of the stream's IDs
pause=$((tP + 1050 - $(local_ms)))
((pause <= 0)) || sleep "$(printf '%d.%03d' $((pause / 1000)) $((pause % 1000)))"
stale0=$(stale)
ts0=$(local_ms)
sed -n 1,8p d1.msg | to_fifo
wait_until 5000 'stream_applied 8' || fail "the stream's first 8 IDs were not applied within 5 s"
sed -n 9,14p d1.msg | to_fifo
sp_split --start-cmd "echo %d-%d >>$T/new-shards" >split.out 2>split.err &
splitting=$!
sed -n 15,20p d1.msg | to_fifo
wait "$splitting" || fail "split: exit status $?: $(cat split.err)"
tS=$(local_ms)
# where the 12 written around the split went: a moving one into its old
# shard (written before the fence) or its new one (after)
sed -n 9,20p d-ids.txt >around.ids
around=$(state around.ids | awk 'NR == FNR { h[$1] = $2; next } h[$1] % 4 >= 2 { n[$2 >= 2]++ }
    END { printf "%d old, %d new", n[0], n[1] }' hashes.txt -)
sed -n '21,$p' d1.msg | to_fifo
SENT=$((SENT + 48))
wait_until 5000 'stream_applied 48' || fail "the stream's 48 IDs were not all applied within 5 s"
tC=$(local_ms) # the last 28, written after the split returned, were applied by now
scanner_start 2
scanner_start 3
note "split returned $((tS - ts0)) ms into the stream; the moving IDs of the 12 written around it then in their shards: $around; all 48 applied $((tC - ts0)) ms into it"
send d2.msg
assert_eq "$(paste -sd' ' new-shards)" "2-2 3-3" "shards --start-cmd was run for"
assert_eq "$(sp_status '[.state, .shards, .prev_shards, .epoch] | @tsv' | tr '\t' ' ')" \
    "splitting 4 2 $((epoch0 + 1))" "state, shards, prev_shards, epoch after split"

# ---- after the split: B (a stdin producer, new: it reads the splitting
# layout) hands a third of the IDs over to their new shards; then the
# ingress writes them and its own group
sp_producer B
sp_feed B b1.txt
send after.msg
awk -F'\t' 'NR == FNR { h[$1] = $2; next }
     $2 != "none" { print $1, ($6 ? h[$1] % 4 : h[$1] % 2), $3, ($4 != "-" ? 1 : 0) }' \
    <(tr ' ' '\t' <hashes.txt) expect.tsv >final.state
cut -f1 expect.tsv >all-ids.txt
committed_as final final.state all-ids.txt
t1=$(now_ms)
note "all written and committed $((t1 - t0)) ms after t0; $SENT messages"
((t1 < t0 + SP_LEAD_MS)) ||
    fail "the writes took until t0 + $((t1 - t0)) ms: deadlines may have passed meanwhile (machine too slow)"

# the ingress learned of the split from the fence
stale1=$(stale)
note "STALE replies to the ingress: $((stale1 - stale0))"
if ((tC - ts0 < 950)); then
    assert_ge "$stale1" $((stale0 + 1)) "STALE replies to the ingress after the split"
else
    note "the stream took $((tC - ts0)) ms: the ingress may have re-read the layout by itself"
fi

sp_wait_delivered events.json expect.tsv

# ---- the end: the repeats cancelled through the ingress, B's marker by a
# stdin producer; then the split can finish
awk -F'\t' '$2 == "repeat" { print "cancel " $1 }' expect.tsv >end.txt
awk -F'\t' '$2 == "repeat" { print $1 }' expect.tsv >repeat-ids.txt
msgs end.txt >end.msg
send end.msg
sp_marker_cancels | produce || fail "cancelling B's marker: exit status $?"
wait_until 10000 all_committed ||
    fail "the cancels were not committed within 10 s: $(kafka_committed "$IN" $G | tr '\n' ';')"
tc=$(now_ms)
# no deadline of theirs is left; a fire in flight (a lease, fractional:
# a moving ID's twin in its old shard) may still end, without re-arming.
# A moving ID's twin in its old shard may also hold a deadline (re-armed
# there by an ack after the cancel landed in the new shard): the new
# shard's m names it, so it is stale, never fired (sp_final_check and the
# check below see to that) and dropped when due
left=$(state repeat-ids.txt | awk '$3 !~ /\./' | while read -r id sh sc pl; do
    new=$(($(awk -v id="$id" '$1 == id { print $2 }' hashes.txt) % 4))
    ((sh < 2 && new != sh)) && [[ $(shard_get SISMEMBER m "$new" "$id") == 1 ]] ||
        echo "$id $sh $sc $pl"
done)
[[ -z $left ]] || fail "cancels committed, but repeating IDs still have deadlines: $(head -n 3 <<<"$left" | tr '\n' ';')"
sp_finish 4 $((epoch0 + 2))

sp_stop_producers B
ingress_stop
proc_stop fifo-holder
wait_until 10000 "! _pid_alive $putter" || fail "lapse-kafka-put did not end within 10 s of its input's end"
wait "$putter" || fail "lapse-kafka-put (the ingress's input) failed"
all_committed || fail "not all committed after SIGTERM: $(kafka_committed "$IN" $G | tr '\n' ';')"
line=$(grep -o 'ingress: [0-9]* messages: [0-9]* commands, [0-9]* signals, [0-9]* not understood' \
    "$T/$INGRESS.log" | tail -n 1)
note "$line"
read -r m c s u < <(sed 's/[^0-9]\+/ /g' <<<"$line")
assert_eq "${u:-}" 0 "messages the ingress did not understand"
assert_eq "${s:-}" 0 "signals the ingress took"
assert_ge "${c:-0}" "$SENT" "commands the ingress took"
assert_eq "$m" "$c" "messages the ingress took (all commands)"

sp_final_check 2 4
# after the cancel at most the fire already claimed goes out
bad=$(sp_events_tsv events.json | awk -F'\t' -v tc="$tc" '$3 > tc { n[$1]++ } END { for (i in n) if (n[i] > 1) print i, n[i] }')
[[ -z $bad ]] || fail "fired more than once after the cancel was committed (id, fires): $bad"
