#!/usr/bin/env bash
# 0082-init-node-down: a first `init` refuses, writing nothing, when a node
# that is to hold shards does not answer, and says which node, which line
# of the config, which shards and why (it succeeded, leaving shards that
# nobody could write until the node came up, which status then showed as
# unread). An init whose shards all land on nodes that answer succeeds,
# and once the node is up the refused init goes through.
. "$(dirname "$0")/../lib.sh"

redis_start main
redis_start second
down=$(redis_port second)
redis_stop second
write_config
sed -i "s|^redis = .*|redis = { nodes = (\\n  { host = \"127.0.0.1\"; port = $(redis_port main); },\\n  { host = \"127.0.0.1\"; port = $down; } ); };|" "$CONF"
line=$(grep -n "port = $down;" "$CONF" | cut -d: -f1)
[[ -n $line ]] || fail "the config's second node: $(cat "$CONF")"

rc=0
scale init 4 >init.out 2>init.err || rc=$?
assert_eq "$rc" 1 "init 4 with the second node down: exit status"
assert_file_match init.err "init: node 127\\.0\\.0\\.1:$down \\(${CONF//./\\.}:$line\\), which would hold shards 1, 3, does not answer: .*refused.*nothing was written" "init's error"
assert_eq "$(rcli DBSIZE)" 0 "keys written by the refused init"

# one shard: it lands on the first node only
scale init 1 >init1.out || fail "init 1: exit status $?"
assert_file_match init1.out "initialised with 1 shards" "init 1's answer"
rcli FLUSHALL >/dev/null

redis_restart second
scale init 4 >init4.out || fail "init 4 with both nodes up: exit status $?"
assert_file_match init4.out "initialised with 4 shards" "init 4's answer"
