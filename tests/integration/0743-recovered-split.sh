#!/usr/bin/env bash
# 0743-recovered-split: IDs offline while the shards double still come back.
#
# 40 IDs written with `watch` time out in two shards; `lapse-scale split`
# (2 -> 4, the new shards beside the old; SP_TWO_NODES=1, test 0744: on a
# second Redis, where producers carry the watch records with take and drop);
# while the split runs, 10 of them signal again (those whose home moved go
# through the split's twin lookup); `finish` moves the watch records of
# the rest whose home moved; then the other 30 signal. Every one of the 40
# gets exactly one recovered event, after its timeout, with its timeout's
# deadline; the offline list and the per-shard counts (status) agree at
# every step and end empty; each offline ID is listed in its home shard
# after the split.
#
# Catches: an offline record left behind in the old shard (the ID would
# come back silently in its new one), one counted twice or in the wrong
# shard, a recovered event lost or doubled by the move.
. "$(dirname "$0")/../lib.sh"

command -v xxhsum >/dev/null || fail "xxhsum is needed (scripts/install-deps)"
sp_start

offline_count() { scale status --json | jq '[.shard_info[].offline] | add'; }
recovered_ids() { jq -R -r 'fromjson? | select(.type == "recovered") | .id' events.json | sort; }

for i in $(seq 1 40); do echo "watch sp-$i +$((100 + i))"; done | produce 2>/dev/null || fail "producer: $?"
wait_until 15000 '[[ $(scale_offline | wc -l) == 40 ]]' || fail "not 40 offline: $(scale_offline | wc -l)"
assert_eq "$(offline_count)" 40 "offline per status"

sp_split >split.out || fail "split: exit status $?"
scanner_start 2
scanner_start 3
moving=0
for i in $(seq 1 10); do (($(hash_shard "sp-$i" 4) >= 2)) && moving=$((moving + 1)); done
((moving > 0 && moving < 10)) || note "of sp-1..10, $moving move to a new shard"
for i in $(seq 1 10); do echo "extend sp-$i +600000"; done | produce 2>/dev/null || fail "producer: $?"
wait_until 15000 '[[ $(recovered_ids | wc -l) == 10 ]]' || fail "recovered during the split: $(recovered_ids | paste -sd,)"
assert_eq "$(scale_offline | wc -l)" 30 "offline during the split"
assert_eq "$(offline_count)" 30 "offline per status during the split"

scale finish >finish.out || fail "finish: exit status $? ($(cat finish.out))"
assert_eq "$(scale_offline | wc -l)" 30 "offline after finish"
assert_eq "$(offline_count)" 30 "offline per status after finish"
scale_offline | while IFS=$'\t' read -r id shard _; do
    assert_eq "$shard" "$(hash_shard "$id" 4)" "$id's shard in the offline list after finish"
done
for i in $(seq 11 40); do echo "extend sp-$i +600000"; done | produce 2>/dev/null || fail "producer: $?"
wait_until 15000 '[[ $(recovered_ids | wc -l) == 40 ]]' || fail "recovered: $(recovered_ids | wc -l) of 40"
assert_eq "$(recovered_ids | uniq -d | paste -sd,)" "" "IDs recovered twice"
assert_eq "$(scale_offline)" "" "offline at the end"
assert_eq "$(offline_count)" 0 "offline per status at the end"
for i in $(seq 1 40); do
    jq -R -r --arg id "sp-$i" 'fromjson? | select(.id == $id) | "\(.type) \(.deadline_ms)"' events.json | paste -sd' ' >pair.txt
    read -r t1 d1 t2 d2 <pair.txt
    [[ $t1 == timeout && $t2 == recovered && $d1 == "$d2" ]] || fail "sp-$i's events: $(cat pair.txt)"
done
