#!/usr/bin/env bash
# 0400-small-keys: a namespace in small keys (init --small-keys) works as one
# in one zset per shard, and its shards stay small while they fill:
# - 24,000 IDs over 2 shards: 6,000 due within seconds (a third with
#   payloads), 500 of those extended an hour on and 500 cancelled, the rest
#   an hour away; the scanners split buckets as the shards fill (the state
#   key's b grows) and every bucket stays in Redis's compact listpack
#   encoding, none over 128 members;
# - exactly the 5,000 due IDs that were neither extended nor cancelled fire,
#   once each, never early, payloads verbatim; a scanner killed with -9 in
#   the middle of firing is replaced and nothing is lost;
# - afterwards no zset, payload or in-flight entry is left of the fired IDs,
#   and the index holds only buckets that hold IDs.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
write_config
scale init 2 --small-keys >/dev/null
assert_eq "$(rcli GET "$NS:k:0")" "0 0" "shard 0's state key after init --small-keys"
assert_eq "$(rcli GET "$NS:k:1")" "0 0" "shard 1's state key after init --small-keys"

events_follow events.json
scanners_start 2

# near: due 4..6 s from now (written in one go); far: an hour away
awk 'BEGIN {
    for (i = 0; i < 6000; i++) {
        if (i % 3 == 0) printf "touch near-%d +%d payload of near-%d\n", i, 4000 + i % 2000, i
        else printf "touch near-%d +%d\n", i, 4000 + i % 2000
    }
    for (i = 0; i < 18000; i++) printf "touch far-%d +3600000\n", i
    for (i = 0; i < 500; i++) printf "extend near-%d +3600000\n", i * 12 + 1
    for (i = 0; i < 500; i++) printf "cancel near-%d\n", i * 12 + 2
}' >input
produce <input || fail "lapse-producer exited with $?"

# the buckets split as the shards fill: 12,000 IDs a shard is 188 buckets
# of 64, so b reaches 7 (128 + s buckets)
level() { rcli GET "$NS:k:$1" | cut -d' ' -f1; }
wait_until 10000 '(( $(level 0) >= 7 && $(level 1) >= 7 ))' ||
    fail "the buckets did not grow: states '$(rcli GET "$NS:k:0")', '$(rcli GET "$NS:k:1")' after 10 s"

# kill -9 shard 0's scanner while the near IDs fire, then start another
wait_until 15000 '(( $(events_unique events.json) >= 500 ))' || fail "no firing within 15 s"
scanner_kill9 0
scanner_start 0

events_wait_ids events.json 5000 30000 ||
    fail "$(events_unique events.json) of 5000 due IDs fired within 30 s"

# every bucket compact and small; the index names only buckets that hold IDs
rcli EVAL "local bad = {}
    for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*:*')) do
        local n, enc = redis.call('ZCARD', k), redis.call('OBJECT', 'ENCODING', k)
        if n > 128 or enc ~= 'listpack' then bad[#bad + 1] = k .. ' ' .. n .. ' ' .. enc end
    end
    return bad" 0 "$NS" | { grep . || true; } >big.txt
assert_eq "$(_lines big.txt)" 0 "buckets over 128 members or not listpack ($(head -3 big.txt | tr '\n' ';'))"
for s in 0 1; do
    stale=$(rcli EVAL "local n = 0
        for _, j in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
            if redis.call('EXISTS', KEYS[2] .. ':' .. j) == 0 then n = n + 1 end
        end
        return n" 2 "$NS:x:$s" "$NS:z:$s")
    (( stale <= 2 )) || fail "shard $s: $stale index entries of empty buckets after firing"
done

sleep_until_quiet() { wait_until 3000 '[[ $(ns_leases) == 0 ]]'; }
sleep_until_quiet || fail "IDs still in flight 3 s after the last event"
events_follow_stop

# exactly the due IDs that were neither extended nor cancelled
events_ids events.json | sort -u >fired.txt
awk 'BEGIN { for (i = 0; i < 6000; i++) if (i % 12 != 1 && i % 12 != 2 || i >= 6000) print "near-" i }' |
    sort >want.txt
assert_eq "$(comm -3 fired.txt want.txt | head -5 | tr '\n' ' ')" "" "fired IDs against the due ones"
assert_never_early events.json
# (a scanner killed with -9 may send an ID twice: at least once, at most
# the batch it held)
dups=$(( $(events_ids events.json | wc -l) - $(_lines fired.txt) ))
(( dups <= 2000 )) || fail "$dups duplicate events, more than the killed scanner could hold"
bad=$(jq -r -s '[.[] | select((.id | ltrimstr("near-") | tonumber) % 3 == 0)
                     | select(.payload != ("payload of " + .id))] | length' events.json)
assert_eq "$bad" 0 "events with a wrong payload"
none=$(jq -r -s '[.[] | select((.id | ltrimstr("near-") | tonumber) % 3 != 0) | select(has("payload"))] | length' events.json)
assert_eq "$none" 0 "events with a payload that had none"

# the extended and far IDs are still pending, in their buckets
pending=$(rcli EVAL "local n = 0
    for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*:*')) do n = n + redis.call('ZCARD', k) end
    return n" 0 "$NS")
assert_eq "$pending" 18500 "IDs pending in the buckets"
rest=$(rcli EVAL "return #redis.call('KEYS', ARGV[1] .. ':p:*')" 0 "$NS")
assert_eq "$rest" 0 "payload keys left (the near IDs with payloads all fired)"
