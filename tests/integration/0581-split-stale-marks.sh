#!/usr/bin/env bash
# 0581-split-stale-marks: a moved-ID set left over from an earlier change
# (a finish that died after its publish, before its cleanup) does not make
# a twin look moved: split deletes the receiving shards' sets before it
# publishes. An ID of old shard i that belongs to new shard i + 2, never
# written during the split, with a stale mark in NS:m:(i + 2): it still
# fires, once, from its old shard, at its deadline. Without the deletion
# the old shard's scanner would drop it as a stale twin and it would never
# fire (contract guarantee 1).
. "$(dirname "$0")/../lib.sh"

sp_start
seq -f 'k%02g' 0 39 >ids.txt
sp_hashes ids.txt >hashes.txt
read -r X h < <(awk '$2 % 4 >= 2 { print; exit }' hashes.txt)
[[ -n ${X:-} ]] || fail "no moving ID among k00..k39"
t0=$(now_ms)
echo "touch $X @$((t0 + 4000)) px" | produce || fail "producer: exit status $?"
rcli SADD "$NS:m:$((h % 4))" "$X" >/dev/null # the stale mark
scale split >split.out || fail "split: exit status $?"
assert_eq "$(rcli EXISTS "$NS:m:$((h % 4))")" 0 "the stale set after split"
scanner_start 2
scanner_start 3
wait_until 12000 '[[ $(jq -c --arg id "$X" "select(.id == \$id)" events.json | wc -l) -ge 1 ]]' ||
    fail "$X never fired (its twin taken for moved)"
sleep 0.5
events_follow_stop
assert_eq "$(jq -r --arg id "$X" 'select(.id == $id) | "\(.shard) \(.deadline_ms) \(.payload)"' events.json)" \
    "$((h % 2)) $((t0 + 4000)) px" "$X's event (old shard, its deadline, its payload)"
assert_never_early events.json
