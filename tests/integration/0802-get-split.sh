#!/usr/bin/env bash
# 0802-get-split: lapse-scale get during a split 2 -> 4 shows an ID's twin.
#
# No scanners (nothing falls due). Before the split, M (an ID that moves to
# a new shard) and S (one that stays) are written with payloads. While
# splitting:
#  - get M: .shard the new shard (old + 2) with nothing there yet
#    (.found false, .moved false), .twin the old shard holding M's deadline
#    and payload, .twin.stale false; the text form names the old shard;
#  - get S: .twin null, its deadline where it was;
#  - after a touch of M (the producer moves it): .deadline_ms the new one in
#    the new shard, .moved true, the twin gone (.twin.found false).
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale init 2 >/dev/null
seq -f 'id-%g' 0 19 >ids.txt
sp_hashes ids.txt >hashes.txt
M=$(awk '$2 % 4 >= 2 { print $1; exit }' hashes.txt)
S=$(awk '$2 % 4 < 2 { print $1; exit }' hashes.txt)
[[ -n $M && -n $S ]] || fail "no moving and staying ID among id-0..19"
oldM=$(($(awk -v id="$M" '$1 == id { print $2 }' hashes.txt) % 2))
D=$(($(now_ms) + 600000))
printf 'touch %s @%s pm\ntouch %s @%s ps\n' "$M" "$D" "$S" $((D + 1)) | produce 2>/dev/null ||
    fail "producer: exit status $?"
scale split >split.out || fail "split: exit status $?"

scale get "$M" --json >m.json || fail "get $M --json: exit status $?"
assert_eq "$(jq -r .state m.json)" splitting ".state"
assert_eq "$(jq .shard m.json)" $((oldM + 2)) ".shard (the new shard)"
assert_eq "$(jq -c '[.found, .deadline_ms, .moved]' m.json)" '[false,null,false]' "new shard before M is written"
assert_eq "$(jq .twin.shard m.json)" "$oldM" ".twin.shard (the old shard)"
assert_eq "$(jq -c '[.twin.found, .twin.deadline_ms, .twin.payload, .twin.in_flight, .twin.stale]' m.json)" \
    "[true,$D,\"pm\",false,false]" "the twin in the old shard"
assert_eq "$(jq -r .twin.node m.json)" "127.0.0.1:$REDIS_PORT" ".twin.node"
scale get "$M" >m.txt || fail "get $M: exit status $?"
assert_file_match m.txt "^split +2 -> 4: the ID moves from old shard $oldM" "text: the split line"
assert_file_match m.txt "^twin +old shard $oldM" "text: the twin"
assert_file_match m.txt "^  deadline +$D " "text: the twin's deadline"

scale get "$S" --json >s.json || fail "get $S --json: exit status $?"
assert_eq "$(jq -c '[.twin, .deadline_ms, .payload]' s.json)" "[null,$((D + 1)),\"ps\"]" "a staying ID"

D2=$((D + 5000))
echo "touch $M @$D2" | produce 2>/dev/null || fail "producer (touch $M): exit status $?"
scale get "$M" --json >m2.json || fail "get $M --json after a touch: exit status $?"
assert_eq "$(jq -c '[.shard, .deadline_ms, .payload, .moved, .twin.found, .twin.stale]' m2.json)" \
    "[$((oldM + 2)),$D2,\"pm\",true,false,true]" "M after a touch in the split"
