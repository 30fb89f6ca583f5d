#!/usr/bin/env bash
# 0950-cluster-ingress-inspect: the Kafka ingress, `lapse-scale get` and
# `lapse-scale check` on a Redis Cluster (redis.cluster): 3 primaries,
# 8 shards, a scanner for each.
#
#  - check with every scanner holding its lock: exit 0, one "ok:" line;
#    --json .ok true, .problems [];
#  - lapse-producer --from-kafka applies command messages (touch with and
#    without payload, a reset, extends later and earlier, cancels) and
#    device signals (a watchdog rule: ID from a JSON field, time from
#    another plus the rule's timeout, an older signal arriving later
#    ignored; a second rule: the key and the arrival) to the cluster: before
#    the first deadline each ID sits in the zset of its shard (the
#    documented hash) with the deadline written, cancelled IDs nowhere;
#  - get on a pending ID (a command with a payload) and on one a signal
#    set: its shard, the address of the primary serving that shard's slot,
#    deadline_ms and its ISO-8601 form, in_flight false, the payload, the
#    shard's lock holder as scanner; the text form says the same;
#  - get on an unknown ID: exit 0, found false, deadline_ms null, and the
#    text says lapse holds nothing for it;
#  - every ID that should fire fires exactly once (no further event after
#    they are all settled), never early, with the deadline, payload and
#    shard expected; cancelled IDs never; get on a fired ID finds nothing;
#  - check with the scanner of a shard on another primary than the first
#    seed stopped: exit 1, exactly "shard N: scanner none (no active scanner)"; --json
#    names shard N with "no_scanner"; that scanner back: exit 0 again;
#  - SIGTERM ends the ingress with exit 0, every message counted (no
#    message misunderstood) and every offset committed;
#  - the only broker down, an ID written by the stdin producer falls due
#    and its scanner holds it in flight: get says in_flight true,
#    leased_by "scanner", deadline_ms null, inflight_deadline_ms the
#    deadline written, a lease at most lease_ms ahead, the payload and the
#    lock holder, the text form the same; check --max-overdue 1 exits 1
#    with only "shard N: oldest due ID is X s overdue (max 1)". The broker
#    back, it is delivered, get finds nothing and check exits 0.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
SHARDS=8
cluster_start 3
kafka_start --brokers 1 "$IN"
cluster_config "ingress = {
  topic = \"$IN\"; group = \"g-cl\"; properties = ( $INGRESS_PROPS );
  rules = (
    { id_field = \"device\"; id_prefix = \"dev-\"; time = \"field\"; time_field = \"ts\"; timeout_ms = 2000; },
    { id_prefix = \"far-\"; time = \"arrival\"; timeout_ms = 600000; }
  );
};"
scale init "$SHARDS" >/dev/null || fail "init: exit status $?"

declare -a PORT_OF=() # the port of the primary serving each shard's slot
for ((s = 0; s < SHARDS; s++)); do PORT_OF[s]=$(cluster_shard_port "$s"); done
assert_eq "$(printf '%s\n' "${PORT_OF[@]}" | sort -u | wc -l)" 3 "primaries serving the $SHARDS shards"
lock_of() { redis-cli -p "${PORT_OF[$1]}" GET "$NS:l:{$NS:$1}"; }
all_locked() {
    local s
    for ((s = 0; s < SHARDS; s++)); do [[ -n $(lock_of "$s") ]] || return 1; done
}

scanners_start "$SHARDS"
events_follow events.json
ingress_start
wait_until 10000 all_locked || fail "not every shard's scanner took its lock within 10 s"
ingress_wait_assigned

# ---- check: all well
rc=0
scale check >c.out 2>c.err || rc=$?
assert_eq "$rc" 0 "check with every scanner running ($(cat c.out c.err))"
assert_eq "$(grep -c . c.out)" 1 "check's lines when all is well"
assert_file_match c.out "^ok: namespace $NS, $SHARDS shards" "check's line when all is well"
scale check --json >c.json || fail "check --json: exit status $?"
assert_eq "$(jq -c '[.ok, .problems, .shards, (.shard_info | length)]' c.json)" "[true,[],$SHARDS,$SHARDS]" \
    "check --json when all is well"

# ---- the ingress writes commands and signals to the cluster
t0=$(now_ms)
F=$((t0 + 3000)) # the first deadline
D=$((t0 + 600000))
: >in.txt
: >expect.txt # ID DEADLINE PAYLOAD (- for none): what must fire
for ((i = 0; i < 24; i++)); do # plain touches, every other one with a payload
    if ((i % 2 == 0)); then
        printf 'c-%d\t{"op":"touch","id":"c-%d","at_ms":%d,"payload":"pay-%d"}\n' "$i" "$i" $((F + i * 40)) "$i"
        echo "c-$i $((F + i * 40)) pay-$i" >>expect.txt
    else
        printf 'c-%d\t{"op":"touch","id":"c-%d","at_ms":%d}\n' "$i" "$i" $((F + i * 40))
        echo "c-$i $((F + i * 40)) -" >>expect.txt
    fi
done >>in.txt
for ((i = 0; i < 4; i++)); do
    # a reset: far away, then sooner with a new payload
    printf 'r-%d\t{"op":"touch","id":"r-%d","in_ms":600000,"payload":"old"}\n' "$i" "$i"
    printf 'r-%d\t{"op":"touch","id":"r-%d","at_ms":%d,"payload":"new-%d"}\n' "$i" "$i" $((F + 20 + i * 40)) "$i"
    echo "r-$i $((F + 20 + i * 40)) new-$i" >>expect.txt
    # extends: later wins, earlier is ignored, the payload is kept
    printf 'e-%d\t{"op":"touch","id":"e-%d","at_ms":%d,"payload":"ext-%d"}\n' "$i" "$i" $((F + 100 + i * 40)) "$i"
    printf 'e-%d\t{"op":"extend","id":"e-%d","at_ms":%d}\n' "$i" "$i" $((F + 600 + i * 40))
    printf 'e-%d\t{"op":"extend","id":"e-%d","at_ms":%d}\n' "$i" "$i" $((F + 300 + i * 40))
    echo "e-$i $((F + 600 + i * 40)) ext-$i" >>expect.txt
    # cancelled: never fires
    printf 'x-%d\t{"op":"touch","id":"x-%d","at_ms":%d,"payload":"gone"}\n' "$i" "$i" $((F + i * 40))
    printf 'x-%d\t{"op":"cancel","id":"x-%d"}\n' "$i" "$i"
done >>in.txt
for ((i = 0; i < 16; i++)); do # device signals: deadline = ts + 2000; the older one comes later
    ts=$((F + 200 + i * 40 - 2000))
    printf 'dev-%d\t{"device":"dev-%d","ts":%d,"v":1}\n' "$i" "$i" "$ts"
    printf 'dev-%d\t{"device":"dev-%d","ts":%d,"v":0}\n' "$i" "$i" $((ts - 700))
    echo "dev-$i $((ts + 2000)) -" >>expect.txt
done >>in.txt
printf 'keep-1\t{"op":"touch","id":"keep-1","at_ms":%d,"payload":"{\\"user\\":42}"}\n' "$D" >>in.txt
printf 'far-1\tup\n' >>in.txt
kafka_put "$IN" <in.txt
msgs=$(grep -c . in.txt)
cmds=$(grep -c '"op"' in.txt)

# where each ID must be now: its shard by the documented hash, its deadline
cut -d' ' -f1 expect.txt >fire.ids
{ cat fire.ids; printf '%s\n' keep-1 far-1 x-0 x-1 x-2 x-3 nobody-950 held-1; } >ids.txt
sp_hashes ids.txt >hashes.txt
shard_of() { awk -v id="$1" -v n="$SHARDS" '$1 == id { print $2 % n }' hashes.txt; }
awk -v n="$SHARDS" 'NR == FNR { h[$1] = $2 % n; next } { print $1, h[$1], $2 }' \
    hashes.txt expect.txt >want.where
echo "keep-1 $(shard_of keep-1) $D" >>want.where
LC_ALL=C sort -o want.where want.where
assert_eq "$(cut -d' ' -f2 want.where | sort -u | wc -l)" "$SHARDS" "shards the IDs fall in"
applied() {
    sp_where_all $(cat fire.ids) keep-1 x-0 x-1 x-2 x-3 | LC_ALL=C sort >got.where
    cmp -s got.where want.where && [[ -n $(sp_where far-1) ]]
}
wait_until $((F - $(now_ms) - 100)) applied ||
    fail "the ingress had not written every ID to its shard by the first deadline (< want, > got: ID SHARD DEADLINE): $(diff want.where got.where | grep '^[<>]' | head -4 | tr '\n' ' ')far-1: '$(sp_where far-1)'"
t1=$(now_ms)
note "all applied $((t1 - t0)) ms after the messages were sent, $((F - t1)) ms before the first deadline"

# ---- get on the cluster
iso() { echo "$(date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf %03d $(($1 % 1000)))Z"; }
s=$(shard_of keep-1)
scale get keep-1 --json >g.json || fail "get keep-1 --json: exit status $?"
assert_eq "$(jq -s length g.json)" 1 "JSON values printed by get --json"
assert_eq "$(jq -r .id g.json)" keep-1 ".id"
assert_eq "$(jq .shard g.json)" "$s" ".shard (the documented hash)"
assert_eq "$(jq -r .address g.json)" "127.0.0.1:${PORT_OF[s]}" ".address (the primary serving shard $s's slot)"
assert_eq "$(jq .found g.json)" true ".found"
assert_eq "$(jq .deadline_ms g.json)" "$D" ".deadline_ms"
assert_eq "$(jq -r .deadline g.json)" "$(iso "$D")" ".deadline (ISO-8601 UTC)"
assert_eq "$(jq .in_flight g.json)" false ".in_flight"
assert_eq "$(jq -r .payload g.json)" '{"user":42}' ".payload"
assert_eq "$(jq .payload_bytes g.json)" 11 ".payload_bytes"
assert_eq "$(jq .repeat g.json)" null ".repeat"
assert_eq "$(jq .twin g.json)" null ".twin (stable layout)"
assert_eq "$(jq -r .scanner g.json)" "$(lock_of "$s")" ".scanner (shard $s's lock holder)"
scale get keep-1 >g.txt || fail "get keep-1: exit status $?"
assert_file_match g.txt "^shard +$s of $SHARDS " "text: shard"
assert_file_match g.txt "^node +.*\(reached at 127\.0\.0\.1:${PORT_OF[s]}\)$" "text: the primary reached"
assert_file_match g.txt "^deadline +$D +$(iso "$D") " "text: deadline"
assert_file_match g.txt '^in flight +no$' "text: in flight"
assert_file_match g.txt '^payload +11 bytes: \{"user":42\}$' "text: payload"

s=$(shard_of far-1)
scale get far-1 --json >f.json || fail "get far-1 --json: exit status $?"
assert_eq "$(jq -c '[.shard, .address, .found, .in_flight, has("payload")]' f.json)" \
    "[$s,\"127.0.0.1:${PORT_OF[s]}\",true,false,false]" "far-1 (a signal): shard, address, found, in flight, payload"
fd=$(jq .deadline_ms f.json)
assert_eq "$fd" "$(sp_where far-1 | cut -d' ' -f2)" "far-1's deadline_ms (what its shard holds)"
assert_ge "$fd" $((t0 + 600000)) "far-1's deadline_ms (arrival + 600 s)"
assert_le "$fd" $((t1 + 600000)) "far-1's deadline_ms (arrival + 600 s)"

s=$(shard_of nobody-950)
rc=0
scale get nobody-950 --json >u.json || rc=$?
assert_eq "$rc" 0 "exit status of get on an unknown ID"
assert_eq "$(jq -c '[.shard, .found, .deadline_ms, .in_flight, has("payload")]' u.json)" \
    "[$s,false,null,false,false]" "unknown ID: shard, found, deadline_ms, in flight, payload"
rc=0
scale get nobody-950 >u.txt || rc=$?
assert_eq "$rc" 0 "exit status of get on an unknown ID (text)"
assert_file_match u.txt "^shard +$s of $SHARDS " "text: an unknown ID's shard"
assert_file_match u.txt '^deadline +none$' "text: an unknown ID's deadline"
assert_file_match u.txt '^\(lapse holds nothing for this ID' "text: an unknown ID"

# ---- every ID fires once, never early, as written
want=$(grep -c . expect.txt)
events_wait_ids events.json "$want" 20000
settled() { [[ -z $(sp_where_all $(cat fire.ids)) ]]; } # (removed once Kafka acknowledged)
wait_until 10000 settled || fail "fired IDs still in Redis: $(sp_where_all $(cat fire.ids) | head -3 | tr '\n' ';')"
if events_read $((want + 1)) 1000 >all.json; then
    fail "an event more than the $want IDs (repeated or not expected: $({ jq -r .id all.json | sort | uniq -d
        jq -r .id all.json | grep -vxFf fire.ids; } | head -3 | tr '\n' ' '))"
fi
assert_eq "$(grep -c . all.json)" "$want" "events in the topic"
assert_never_early all.json
assert_once all.json
jq -r '[.id, .deadline_ms, (.payload // "-"), .shard] | join(" ")' all.json | LC_ALL=C sort >got.events
awk -v n="$SHARDS" 'NR == FNR { h[$1] = $2 % n; next } { print $0, h[$1] }' hashes.txt expect.txt |
    LC_ALL=C sort >want.events
diff want.events got.events >events.diff ||
    fail "events (id deadline payload shard) differ: $(head -6 events.diff | tr '\n' ' ')"
late=$(jq -s 'map(.fired_ms - .deadline_ms) | max' all.json)
note "$want events from $(jq -r .shard all.json | sort -u | wc -l) shards, the latest $late ms after its deadline"

scale get c-0 --json >g0.json || fail "get c-0 --json: exit status $?"
assert_eq "$(jq -c '[.found, .deadline_ms, .in_flight, has("payload")]' g0.json)" '[false,null,false,false]' \
    "get on a fired ID"

# ---- check: a shard (not on the first seed) without a scanner
c1=$(redis_port c1)
S=
for ((s = 0; s < SHARDS; s++)); do [[ ${PORT_OF[s]} == "$c1" ]] || { S=$s; break; }; done
[[ -n $S ]] || fail "every shard is on c1"
scanner_stop "$S"
rc=0
scale check >c.out 2>c.err || rc=$?
assert_eq "$rc" 1 "check with shard $S's scanner stopped ($(cat c.err))"
assert_eq "$(cat c.out)" "shard $S: scanner none (no active scanner)" "check's lines with shard $S's scanner stopped"
rc=0
scale check --json >c.json || rc=$?
assert_eq "$rc" 1 "check --json with shard $S's scanner stopped"
assert_eq "$(jq -c '[.ok, [.problems[] | [.shard, .problem]]]' c.json)" "[false,[[$S,\"no_scanner\"]]]" \
    "check --json's problems"
scanner_start "$S"
wait_until 10000 all_locked || fail "shard $S's scanner took no lock within 10 s"
rc=0
scale check >c.out || rc=$?
assert_eq "$rc" 0 "check with shard $S's scanner back ($(cat c.out))"

# ---- the ingress: everything counted, committed
wait_until 5000 'kafka_all_committed "$IN" g-cl' ||
    fail "offsets not committed: $(kafka_committed "$IN" g-cl | tr '\n' ';')"
ingress_stop
assert_file_match "$T/$INGRESS.log" "ingress: $msgs messages: $cmds commands, $((msgs - cmds)) signals, 0 not understood"

# ---- get on an ID in flight, and check on it overdue: the only broker down,
# its shard's scanner claims it and Kafka never answers
kafka_ctl "down 1"
s=$(shard_of held-1)
H=$(($(now_ms) + 200))
echo "touch held-1 @$H payload-1" | produce 2>/dev/null || fail "producer: exit status $?"
inflight() { scale get held-1 --json >h.json && [[ $(jq .in_flight h.json) == true ]]; }
wait_until 10000 inflight || fail "get never showed held-1 in flight: $(cat h.json)"
now=$(now_ms)
assert_eq "$(jq -c '[.shard, .address, .leased_by, .deadline_ms, .payload]' h.json)" \
    "[$s,\"127.0.0.1:${PORT_OF[s]}\",\"scanner\",null,\"payload-1\"]" "held-1 in flight: shard, address, leased_by, deadline_ms, payload"
assert_eq "$(jq .inflight_deadline_ms h.json)" "$H" ".inflight_deadline_ms (the deadline being dispatched)"
lease=$(jq .lease_until_ms h.json)
assert_ge "$lease" $((now - 1000)) ".lease_until_ms (the lease of a claim of the last second)"
assert_le "$lease" $((now + 5000 + 100)) ".lease_until_ms (at most a lease ahead)"
assert_eq "$(jq -r .scanner h.json)" "$(lock_of "$s")" ".scanner (shard $s's lock holder)"
scale get held-1 >h.txt || fail "get held-1: exit status $?"
assert_file_match h.txt '^in flight +yes, claimed by the shard.s scanner$' "text: in flight"
assert_file_match h.txt "^  deadline $H " "text: the deadline being dispatched"
overdue() {
    rc=0
    scale check --max-overdue 1 >c.out || rc=$?
    ((rc == 1)) && [[ $(cat c.out) =~ ^shard\ $s:\ oldest\ due\ ID\ is\ [0-9]+(\.[0-9])?\ s\ overdue\ \(max\ 1\)$ ]]
}
wait_until 10000 overdue || fail "check never reported (only) shard $s overdue with the broker down (status $rc: $(cat c.out))"
kafka_ctl "up 1"
wait_until 15000 'scale get held-1 --json >h.json && [[ $(jq .found h.json) == false ]]' ||
    fail "held-1 still held 15 s after the broker came back: $(cat h.json)"
scale check >c.out || fail "check once held-1 was delivered: exit status $? ($(cat c.out))"
scanner_stop
