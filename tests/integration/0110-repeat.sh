#!/usr/bin/env bash
# 0110-repeat: repeat fires at <when>, then every <period_ms>, with seq 1, 2,
# 3 ... and its payload, until cancel (then nothing is left in Redis) or a
# touch (then it fires once more, without seq, and is gone with its payload).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
write_config
scale init 1 >/dev/null
scanner_start 0
events_follow events.json

t0=$(now_ms)
printf 'repeat R1 @%d 300 rp\nrepeat R2 @%d 300\n' $((t0 + 300)) $((t0 + 300)) | produce

count() { jq -c --arg id "$1" 'select(.id == $id)' events.json | wc -l; }
wait_until 5000 '(($(count R1) >= 3 && $(count R2) >= 2))' ||
    fail "R1/R2 did not fire repeatedly: $(cat events.json)"

# R2 turns one-shot: its next deadline is the touched one, fired without seq
t1=$(now_ms)
echo "touch R2 +600 last" | produce
echo "cancel R1" | produce
tc=$(now_ms) # the cancel has landed: R1 cannot be claimed any more
wait_until 5000 '(($(jq -c "select(.id == \"R2\" and .payload == \"last\")" events.json | wc -l) >= 1))' ||
    fail "R2 did not fire after its touch: $(cat events.json)"
ns_wait_empty 3000
sleep 1 # another period or two: nothing more may fire
events_follow_stop

# R1: seq counts 1, 2, 3 ... on the grid t0+300 + k*300, payload each time;
# after the cancel at most one already claimed fire follows: one claimed
# before the cancel landed, so due before tc (counting events as they reach
# the test instead would take a loaded machine's delivery lag for fires
# after the cancel)
jq -r 'select(.id == "R1") | "\(.seq) \(.deadline_ms) \(.payload)"' events.json >r1
k=0
while read -r seq deadline payload; do
    k=$((k + 1))
    assert_eq "$seq" "$k" "R1's seq of fire $k"
    assert_eq "$deadline" $((t0 + 300 + (k - 1) * 300)) "R1's deadline of fire $k"
    assert_eq "$payload" rp "R1's payload of fire $k"
done <r1
last_r1=$(jq -s '[.[] | select(.id == "R1") | .deadline_ms] | max' events.json)
assert_le "$last_r1" $((tc - 1)) "the last deadline R1 fired with (the cancel landed by $tc)"

# R2: seq 1, 2, ... then exactly one fire of the touched deadline, no seq
last=$(jq -c 'select(.id == "R2")' events.json | tail -n 1)
assert_eq "$(jq -r .seq <<<"$last")" null "seq of R2's one-shot fire"
assert_ge "$(jq -r .deadline_ms <<<"$last")" $((t1 + 600)) "R2's one-shot deadline"
assert_eq "$(jq -c 'select(.id == "R2" and .payload == "last")' events.json | wc -l)" 1 "fires of R2's one-shot deadline"
jq -r 'select(.id == "R2" and .seq != null) | .seq' events.json >r2
assert_eq "$(head -n 1 r2)" 1 "R2's first seq"

# nothing left: zset, payloads, in-flight and repeat records (the lock and
# the last-lease record expire by themselves; the idle scanner's mark and
# bell are its own; k, the form of a shard in small keys, is its layout)
assert_eq "$(rcli --scan --pattern "$NS:*" | grep -v -e ':layout$' -e ':[lcsbk]:[0-9]*$' | wc -l)" 0 "Redis keys left"
assert_never_early events.json
