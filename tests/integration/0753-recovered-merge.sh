#!/usr/bin/env bash
# 0753-recovered-merge: IDs offline while the shards halve still come back.
#
# 4 shards (a split 2 -> 4 finished; SP_TWO_NODES=1, test 0754: shards 2
# and 3 on a second Redis, where producers carry the watch records with
# take and drop); 40 IDs written with `watch` time out; `lapse-scale merge`
# (4 -> 2); while it runs, 10 of them signal again (those of the retiring
# shards go through the merge's twin lookup); `finish` moves the watch
# records of the rest of the retiring shards into the shards that remain
# and retires 2 and 3; then the other 30 signal. Every one of the 40 gets
# exactly one recovered event, after its timeout, with its timeout's
# deadline; the offline list and the per-shard counts (status) agree at
# every step and end empty; each offline ID is listed in its home shard
# after the merge.
#
# Catches: an offline record left in a retiring shard (removed with its
# keys: the ID would come back silently), one counted twice or in the
# wrong shard, a recovered event lost or doubled by the move.
. "$(dirname "$0")/../lib.sh"

command -v xxhsum >/dev/null || fail "xxhsum is needed (scripts/install-deps)"
sp_merge_start

offline_count() { scale status --json | jq '[.shard_info[].offline] | add'; }
recovered_ids() { jq -R -r 'fromjson? | select(.type == "recovered") | .id' events.json | sort; }

for i in $(seq 1 40); do echo "watch sp-$i +$((100 + i))"; done | produce 2>/dev/null || fail "producer: $?"
wait_until 15000 '[[ $(scale_offline | wc -l) == 40 ]]' || fail "not 40 offline: $(scale_offline | wc -l)"
assert_eq "$(offline_count)" 40 "offline per status"
retiring=0
for i in $(seq 1 40); do (($(hash_shard "sp-$i" 4) >= 2)) && retiring=$((retiring + 1)); done
((retiring > 0)) || fail "none of sp-1..40 in shards 2 and 3"

scale merge >merge.out || fail "merge: exit status $?"
for i in $(seq 1 10); do echo "extend sp-$i +600000"; done | produce 2>/dev/null || fail "producer: $?"
wait_until 15000 '[[ $(recovered_ids | wc -l) == 10 ]]' || fail "recovered during the merge: $(recovered_ids | paste -sd,)"
assert_eq "$(scale_offline | wc -l)" 30 "offline during the merge"
assert_eq "$(offline_count)" 30 "offline per status during the merge"

wait_until 10000 'scale finish >finish.out 2>finish.err' || fail "finish: $(cat finish.err)"
sp_wait_retired 2 3
assert_eq "$(scale_offline | wc -l)" 30 "offline after finish"
assert_eq "$(offline_count)" 30 "offline per status after finish"
scale_offline | while IFS=$'\t' read -r id shard _; do
    assert_eq "$shard" "$(hash_shard "$id" 2)" "$id's shard in the offline list after finish"
done
for s in 2 3; do
    assert_eq "$(sp_retired_keys $s | paste -sd' ')" "$NS:e:$s" "keys of retired shard $s"
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
