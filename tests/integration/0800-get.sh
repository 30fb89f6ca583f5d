#!/usr/bin/env bash
# 0800-get: lapse-scale get ID [--json] on what Redis holds, read only.
#
# 4 shards, no scanner. Checked against Redis itself and the documented hash:
#  - a pending ID: shard (= xxhsum's), node and the address reached,
#    deadline_ms and its ISO-8601 UTC form, in_flight false, no payload,
#    no repeat; the text form says the same;
#  - a payload with binary bytes: payload_bytes, a preview with the bytes
#    escaped (\x01, \xff, \n kept out of the terminal), .payload_b64 the
#    exact bytes; the text form shows the escaped preview, truncated with
#    "..." past 64 bytes;
#  - a repeating ID: period_ms and next_seq;
#  - an unknown ID: exit 0, deadline_ms null, in_flight false, no payload;
#  - an ID of 513 bytes, one with a tab and one with a space: exit 2, one
#    line on stderr (a space is named "a space", not a byte number);
#  - an ID that begins with '-': `get -- -5` shows it; `get -5` is an
#    unknown option: exit 2, one line naming the option and the command,
#    with the "--" hint and "see lapse-scale --help" (not the whole usage);
#  - nothing was written: Redis's count of changes since start
#    (rdb_changes_since_last_save) and the namespace's records are the same
#    before and after every get.
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale init 4 >/dev/null
t0=$(now_ms)
D=$((t0 + 600000))
long=$(head -c 100 /dev/zero | tr '\0' 'p')
printf 'touch dev-42 @%s\ntouch bin-1 @%s a\001b\377c\\d"e\ntouch -5 @%s\n' "$D" $((D + 1)) "$D" | produce 2>/dev/null ||
    fail "producer: exit status $?"
printf 'repeat rep-7 @%s 5000\ntouch long-1 @%s %s\n' $((D + 2)) $((D + 3)) "$long" | produce 2>/dev/null ||
    fail "producer: exit status $?"

changes() { rcli INFO persistence | tr -d '\r' | sed -n 's/^rdb_changes_since_last_save://p'; }
before=$(changes)
records=$(ns_records "$NS")

# a pending ID
scale get dev-42 --json >g.json || fail "get dev-42 --json: exit status $?"
assert_eq "$(jq -s length g.json)" 1 "JSON values printed by get --json"
assert_eq "$(jq -r .id g.json)" dev-42 ".id"
assert_eq "$(jq .shard g.json)" "$(id_shard dev-42)" ".shard (where Redis holds it)"
h=$(hash_shard dev-42 4)
[[ -z $h ]] || assert_eq "$(jq .shard g.json)" "$h" ".shard (by the documented hash)"
assert_eq "$(jq -r .node g.json)" "127.0.0.1:$REDIS_PORT" ".node"
assert_eq "$(jq -r .address g.json)" "127.0.0.1:$REDIS_PORT" ".address"
assert_eq "$(jq .deadline_ms g.json)" "$D" ".deadline_ms"
assert_eq "$(jq -r .deadline g.json)" "$(date -u -d "@$((D / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf %03d $((D % 1000)))Z" ".deadline (ISO-8601 UTC)"
assert_eq "$(jq .in_flight g.json)" false ".in_flight"
assert_eq "$(jq 'has("payload")' g.json)" false "has .payload"
assert_eq "$(jq .repeat g.json)" null ".repeat"
assert_eq "$(jq .twin g.json)" null ".twin (stable layout)"
scale get dev-42 >g.txt || fail "get dev-42: exit status $?"
assert_file_match g.txt "^shard +$(id_shard dev-42) of 4" "text: shard"
assert_file_match g.txt "^deadline +$D " "text: deadline"
assert_file_match g.txt '^in flight +no' "text: in flight"
assert_file_match g.txt '^payload +none' "text: payload"

# a payload with binary bytes
scale get bin-1 --json >b.json || fail "get bin-1 --json: exit status $?"
assert_eq "$(jq .payload_bytes b.json)" 9 ".payload_bytes"
assert_eq "$(jq -r .payload_preview b.json)" 'a\x01b\xffc\\d"e' ".payload_preview"
assert_eq "$(jq -r .payload_b64 b.json | base64 -d | od -An -tx1 | tr -d ' \n')" \
    "$(printf 'a\001b\377c\\d"e' | od -An -tx1 | tr -d ' \n')" ".payload_b64 (the exact bytes)"
scale get bin-1 >b.txt || fail "get bin-1: exit status $?"
assert_file_match b.txt '^payload +9 bytes: a\\x01b\\xffc\\\\d"e$' "text: payload preview"
! LC_ALL=C grep -q $'[\001\377]' b.txt || fail "text output carries raw control bytes"
scale get long-1 >l.txt || fail "get long-1: exit status $?"
assert_file_match l.txt "^payload +100 bytes: p{64}\.\.\.$" "text: a long payload's preview"

# a repeating ID
scale get rep-7 --json >r.json || fail "get rep-7 --json: exit status $?"
assert_eq "$(jq -c '[.repeat.period_ms, .repeat.next_seq, .deadline_ms]' r.json)" "[5000,1,$((D + 2))]" ".repeat, .deadline_ms"
scale get rep-7 >r.txt
assert_file_match r.txt '^repeat +every 5000 ms, fired 0 times, next seq 1$' "text: repeat"

# an unknown ID
scale get nobody-here --json >u.json || fail "get of an unknown ID: exit status $?"
assert_eq "$(jq -c '[.deadline_ms, .in_flight, has("payload"), .found]' u.json)" '[null,false,false,false]' "unknown ID"

# bad IDs: exit 2, one line
for bad in "$(head -c 513 /dev/zero | tr '\0' x)" $'tab\there'; do
    rc=0
    scale get "$bad" >bad.out 2>bad.err || rc=$?
    assert_eq "$rc" 2 "exit status of get on a bad ID (${#bad} bytes)"
    assert_eq "$(grep -c . bad.err)" 1 "lines on stderr for a bad ID"
    assert_file_match bad.err 'lapse-scale: get: the ID' "the bad ID's error"
    [[ ! -s bad.out ]] || fail "get printed on stdout for a bad ID"
done
assert_file_match bad.err ' holds control byte 0x09 at offset 3 ' "the error for a tab in the ID"
rc=0
scale get 'a b' >bad.out 2>bad.err || rc=$?
assert_eq "$rc:$(cat bad.err)" "2:lapse-scale: get: the ID holds a space at offset 1 (no spaces or control bytes)" \
    "exit status and error of get on an ID with a space"

# an ID that begins with '-'
scale get --json -- -5 >m.json || fail "get --json -- -5: exit status $?"
assert_eq "$(jq -c '[.id, .deadline_ms]' m.json)" "[\"-5\",$D]" "get -- -5"
rc=0
scale get -5 >bad.out 2>bad.err || rc=$?
assert_eq "$rc:$(cat bad.err)" "2:lapse-scale: get: unknown option -5 (an ID that begins with '-' goes after --: get -- ID); see lapse-scale --help" \
    "exit status and error of get -5"
rc=0
scale get --jsn dev-42 >bad.out 2>bad.err || rc=$?
assert_eq "$rc:$(cat bad.err)" "2:lapse-scale: get: unknown option --jsn; see lapse-scale --help" "exit status and error of get --jsn"
# an option of another command is an error naming both, not ignored
rc=0
scale get --drain dev-42 >bad.out 2>bad.err || rc=$?
assert_eq "$rc:$(cat bad.err)" "2:lapse-scale: get: option --drain does not go with get; see lapse-scale --help" "exit status and error of get --drain"
rc=0
scale check --interval 1 >bad.out 2>bad.err || rc=$?
assert_eq "$rc:$(cat bad.err)" "2:lapse-scale: check: option --interval does not go with check; see lapse-scale --help" "exit status and error of check --interval"

rc=0
scale get "$(head -c 512 /dev/zero | tr '\0' x)" --json >/dev/null || rc=$?
assert_eq "$rc" 0 "exit status of get on a 512-byte ID"

assert_eq "$(changes)" "$before" "Redis changes since start (get writes nothing)"
assert_eq "$(ns_records "$NS")" "$records" "the namespace's records after get"
