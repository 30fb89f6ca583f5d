#!/usr/bin/env bash
# 0390-claim-forms: claim.lua answers a batch of due IDs in one string
# (cmsgpack: groups of IDs that share a deadline, then id/deadline pairs),
# reading a deadline shared by 32 IDs or more once (a group) and the others
# with their scores, and an expired lease (a fraction: its deadline from its
# record) or an ID that holds a space (lapse never writes one, but a zset
# may be written by hand) among them. Whatever the form, every ID fires once
# with the deadline that fell due:
#   batch 1: plain IDs only, one of them 512 bytes;
#   batch 2: plain IDs, an expired lease (its deadline in its record in
#            f, which goes once the ID is claimed again) and a lease not
#            yet expired (not due: left alone);
#   batch 3: plain IDs and "has space" (written by hand);
#   batch 4: plain IDs and the empty ID (written by hand);
#   batch 5: two dense deadlines (40 and 35 IDs, one with a payload), then
#            sparse ones and an expired lease, in one claim.
# One-zset form (scale_init_one_zset, also under LAPSE_TEST_SMALL_KEYS=1):
# it tests that form's internals (scores and records it crafts and reads
# in NS:z:I and its hashes).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
# hand-made writes ring no bell: a short nap sees them soon (scanner/wake.c)
SCANNER_CFG="idle_ms = 200;" write_config
scale_init_one_zset 1 >/dev/null
z=$NS:z:0 f=$NS:f:0
long=$(printf 'L%.0s' {1..512})

t=$(($(now_ms) - 1000))
{
    for i in 1 2 3; do echo "ZADD $z $((t + i)) a$i"; done
    echo "ZADD $z $((t + 4)) $long"
} | rcli >/dev/null
scanner_start 0
events_follow events.json
events_wait_ids events.json 4 5000

t=$(($(now_ms) - 1000))
inflight_set 0 "$((t - 3000)).5" expired $((t - 8000))
inflight_set 0 "$((t + 3600000)).5" leased $((t - 9000))
rcli ZADD "$z" $((t + 1)) b1 $((t + 2)) b2 >/dev/null
events_wait_ids events.json 7 5000

t=$(($(now_ms) - 1000))
rcli ZADD "$z" $((t + 1)) c1 $((t + 2)) "has space" $((t + 3)) c3 >/dev/null
events_wait_ids events.json 10 5000

t=$(($(now_ms) - 1000))
rcli ZADD "$z" $((t + 1)) "" $((t + 2)) e2 >/dev/null
t_empty=$(now_ms)
events_wait_ids events.json 12 5000

t=$(($(now_ms) - 1000))
# (in one script: the scanner claims them all at once)
rcli EVAL "$(lua_source lib/inflight)
    for i = 0, 39 do redis.call('ZADD', KEYS[1], ARGV[1] + 1, 'g' .. i) end
    for i = 0, 34 do redis.call('ZADD', KEYS[1], ARGV[1] + 2, 'h' .. i) end
    redis.call('ZADD', KEYS[1], ARGV[1] + 3, 's1', ARGV[1] + 5, 's2')
    redis.call('HSET', KEYS[3], 'g7', 'pg7')
    local l = string.format('%d.5', ARGV[1] + 500) -- (expired, after the others)
    redis.call('ZADD', KEYS[1], l, 'x5')
    inflight_add(KEYS[2], l, { 'x5', string.format('%d', ARGV[1] - 7000) })" 3 "$z" "$f" "$NS:p:0" "$t" >/dev/null
events_wait_ids events.json $((12 + 40 + 35 + 3)) 5000
sleep 0.5
events_follow_stop
gd() { jq -r --arg p "$1" 'select(.id | test("^" + $p + "[0-9]+$")) | .deadline_ms' events.json | sort -u | paste -sd' '; }
assert_eq "$(gd g) $(gd h)" "$((t + 1)) $((t + 2))" "the dense runs' deadlines"
assert_eq "$(jq -r 'select(.id | test("^g[0-9]+$")) | .id' events.json | wc -l) $(jq -r 'select(.id | test("^h[0-9]+$")) | .id' events.json | wc -l)" \
    "40 35" "the dense runs' IDs (once each)"
assert_eq "$(jq -r 'select(.id == "g7") | .payload' events.json)" pg7 "g7's payload"
assert_eq "$(jq -r 'select(.id == "s1" or .id == "s2" or .id == "x5") | "\(.id)=\(.deadline_ms)"' events.json | sort | paste -sd' ')" \
    "s1=$((t + 3)) s2=$((t + 5)) x5=$((t - 7000))" "the sparse ones and the expired lease, in the same claim"

assert_eq "$(jq -r 'select(.id | test("^[ghsx][0-9]+$") | not) | .id' events.json | sort | paste -sd' ')" \
    " $long a1 a2 a3 b1 b2 c1 c3 e2 expired has space" "IDs fired (once each)"
# not a lease later: the claim with the empty ID was answered, not refused
assert_le "$(jq -r 'select(.id == "") | .fired_ms' events.json)" $((t_empty + 2000)) "the empty ID's fire"
dl() { jq -r --arg id "$1" 'select(.id == $id) | .deadline_ms' events.json; }
assert_eq "$(dl expired)" $(($(dl b1) - 1 - 8000)) "the expired lease's deadline (from its record)"
for id in a1 a2 a3 b1 b2 c1 c3 "has space" "$long"; do
    assert_ge "$(dl "$id")" 1 "$id's deadline"
done
assert_eq "$(dl "has space")" $(($(dl c1) + 1)) "the deadline of \"has space\""
assert_eq "$(dl a3)" $(($(dl a1) + 2)) "a3's deadline"
assert_eq "$(dl "$long")" $(($(dl a1) + 3)) "the long ID's deadline"
assert_eq "$(rcli ZSCORE "$z" leased)" "$(($(dl b1) - 1 + 3600000)).5" "the lease not yet expired"
wait_until 3000 '[[ $(rcli HLEN "$f") == 1 ]]' || fail "records left: $(rcli HKEYS "$f" | paste -sd' ')"
assert_eq "$(rcli ZCARD "$z") $(rcli HLEN "$f") $(inflight_of leased 0)" "1 1 $(($(dl b1) - 1 - 9000))" \
    "left in the shard (the leased ID and its lease's record)"
assert_never_early events.json
