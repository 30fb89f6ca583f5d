#!/usr/bin/env bash
# 0402-small-keys-convert: `init N --small-keys` converts a running
# namespace from one zset per shard into small keys, online, under load:
# - 2 shards in one zset hold 4,000 IDs due 9..11 s ahead (a third with
#   payloads), 16,000 an hour ahead and 10 repeating IDs (period 1 s);
#   scanners fire, a producer streams 30,000 extends of the far IDs;
# - meanwhile the namespace is converted, then 500 due IDs are reset later
#   and 500 cancelled, through buckets, while others still sit in the old
#   zset;
# - every due ID fires exactly once with its final deadline and payload,
#   never early; cancelled ones never; the repeats keep their rhythm (seq
#   1, 2, ... each once); the old keys are gone within seconds, every far ID
#   is pending in its bucket with its last deadline, and `get` finds IDs
#   wherever they are meanwhile.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
write_config
scale init 2 --one-zset >/dev/null
events_follow events.json
scanners_start 2

t0=$(now_ms)
awk -v t0="$t0" 'BEGIN {
    for (i = 0; i < 4000; i++) {
        if (i % 3 == 0) printf "touch near-%d @%.0f payload of near-%d\n", i, t0 + 9000 + i % 2000, i
        else printf "touch near-%d @%.0f\n", i, t0 + 9000 + i % 2000
    }
    for (i = 0; i < 16000; i++) printf "touch far-%d +3600000\n", i
    for (i = 0; i < 10; i++) printf "repeat rep-%d +3000 1000 rep payload\n", i
}' >load.txt
produce <load.txt || fail "loading: lapse-producer exited with $?"
assert_eq "$(rcli EXISTS "$NS:z:0" "$NS:z:1" "$NS:k:0" "$NS:k:1")" 2 "one zset per shard, no state key, before"

# 30,000 extends of far IDs, streamed while the namespace converts
awk 'BEGIN { for (i = 0; i < 30000; i++) printf "extend far-%d +%d\n", i % 16000, 3700000 + i }' >ext.txt
(produce <ext.txt >ext.out 2>&1; echo $? >ext.rc) &

scale init 2 --small-keys >convert.out || fail "init --small-keys: exit status $?"
assert_file_match convert.out 'small keys' "init --small-keys on a namespace with data"
for s in 0 1; do
    [[ -n $(rcli GET "$NS:k:$s") ]] || fail "shard $s has no state key after the conversion began"
done
# an ID still in the old zset (or moved already): get finds it
got=$(scale get --json near-5 | jq -r .deadline_ms)
assert_eq "$got" $((t0 + 9000 + 5)) "get near-5 while converting"

# 500 resets later, 500 cancels, through the converting shards
t1=$(now_ms)
awk -v t1="$t1" 'BEGIN {
    for (i = 0; i < 500; i++) printf "touch near-%d @%.0f\n", i * 8, t1 + 6000 + i
    for (i = 0; i < 500; i++) printf "cancel near-%d\n", i * 8 + 1
}' >resets.txt
produce <resets.txt || fail "resets: lapse-producer exited with $?"

# the old keys drain into buckets by themselves
wait_until 30000 '[[ $(rcli EXISTS "$NS:z:0" "$NS:p:0" "$NS:r:0" "$NS:z:1" "$NS:p:1" "$NS:r:1") == 0 ]]' ||
    fail "old keys left 30 s after the conversion began: $(rcli EXISTS "$NS:z:0" "$NS:z:1") zsets"
wait_until 60000 '[[ -f ext.rc ]]' || fail "the extends' producer did not finish within 60 s"
assert_eq "$(cat ext.rc)" 0 "the extends' producer's exit status ($(tail -1 ext.out))"

events_wait_ids events.json 3510 40000
produce <<<"$(for i in $(seq 0 9); do echo "cancel rep-$i"; done)" || fail "cancelling the repeats"
sleep_quiet() { wait_until 5000 '[[ $(ns_leases) == 0 ]]'; }
sleep_quiet || fail "IDs still in flight 5 s after the repeats were cancelled"
events_follow_stop

assert_never_early events.json
# one-shot IDs: exactly once, the final deadline, the payload
jq -r -s --argjson t0 "$t0" --argjson t1 "$t1" '
    [.[] | select(.id | startswith("near-"))] | group_by(.id)[] |
    (.[0].id | ltrimstr("near-") | tonumber) as $i |
    (if $i % 8 == 0 and $i < 4000 then $t1 + 6000 + $i / 8 else $t0 + 9000 + $i % 2000 end) as $want |
    select(length != 1 or .[0].deadline_ms != $want or $i % 8 == 1
           or (($i % 3 == 0 and $i % 8 != 0) and .[0].payload != ("payload of near-" + ($i | tostring)))
           or (($i % 3 != 0 or $i % 8 == 0) and (.[0] | has("payload")) and ($i % 3 != 0)))
    | "\(.[0].id): \(length) events, deadline \(.[0].deadline_ms) want \($want), payload \(.[0].payload)"' \
    events.json | head -5 >bad.txt
assert_eq "$(_lines bad.txt)" 0 "wrong one-shot events: $(head -3 bad.txt | tr '\n' ';')"
fired=$(jq -r 'select(.id | startswith("near-")) | .id' events.json | sort -u | wc -l)
assert_eq "$fired" 3500 "due IDs fired (4,000 less 500 cancelled)"
# repeats: seq 1, 2, ... each once, at least 3 fires each
bad=$(jq -r -s '[.[] | select(.id | startswith("rep-"))] | group_by(.id)[] |
    select(length < 3 or ([.[].seq] | sort) != ([range(1; length + 1)]) or .[0].payload != "rep payload")
    | .[0].id' events.json | head -3 | tr '\n' ' ')
assert_eq "$bad" "" "repeating IDs with a gap, a duplicate or a wrong payload"

# every far ID pending in its bucket, with its last extend
pending=$(rcli EVAL "local n = 0
    for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*:*')) do n = n + redis.call('ZCOUNT', k, '-inf', '+inf') end
    return n" 0 "$NS")
assert_eq "$pending" 16000 "far IDs pending in buckets"
got=$(scale get --json far-7 | jq -r .deadline_ms)
want_min=$(( $(now_ms) + 3600000 ))
(( got > want_min )) || fail "far-7's deadline $got is not its last extend's (> $want_min)"
