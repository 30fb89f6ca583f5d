#!/usr/bin/env bash
# 0812-status-node-down: lapse-scale status with one of two nodes down.
# 8 shards, round-robin on nodes "one" and "two"; two is stopped. Checked:
#  - status (text) still shows the shards of one, with their counters, and
#    a "(unread)" row for each shard of two; stderr names each of those
#    ("shard N: ..."); exit status 1;
#  - status --json: every shard in shard_info, those of two with "error"
#    and the node's name, those of one with their counters; exit status 1;
#  - with both nodes up it exits 0 with no error anywhere.
. "$(dirname "$0")/../lib.sh"

redis_start one
redis_start two
kafka_start --brokers 1
write_config
sed -i "s|^redis = .*|redis = { nodes = ( { host = \"127.0.0.1\"; port = $(redis_port one); }, { host = \"127.0.0.1\"; port = $(redis_port two); } ); retry_timeout_ms = 1000; };|" "$CONF"
scale init 8 >/dev/null || fail "init: exit status $?"
seq -f 'x%03g' 0 199 | awk '{ print "touch " $1 " +600000" }' | produce || fail "producer: exit status $?"

st=$(scale status --json) || fail "status with both nodes up: exit status $?"
assert_eq "$(jq '[.shard_info[] | select(.error)] | length' <<<"$st")" 0 "shards with an error, both nodes up"
assert_eq "$(jq '[.shard_info[].pending] | add' <<<"$st")" 200 "IDs pending, both nodes up"
two="127.0.0.1:$(redis_port two)"
assert_eq "$(jq -r '[.shard_info[] | select(.node == "'"$two"'") | .shard] | join(",")' <<<"$st")" \
    "1,3,5,7" "the shards of node two"

redis_stop two
rc=0
scale status >st.txt 2>st.err || rc=$?
assert_eq "$rc" 1 "status with node two down: exit status ($(cat st.err))"
for s in 0 2 4 6; do
    assert_file_match st.txt "^$s +127\.0\.0\.1:$(redis_port one) +[0-9]+ " "status: a row with the counters of shard $s"
done
for s in 1 3 5 7; do
    assert_file_match st.txt "^$s +127\.0\.0\.1:$(redis_port two) +\(unread\)" "status: the unread row of shard $s"
    assert_file_match st.err "^lapse-scale: shard $s: " "stderr names shard $s"
done
assert_eq "$(grep -c '^lapse-scale: shard' st.err)" 4 "shards named on stderr: $(cat st.err)"

rc=0
scale status --json >st.json 2>/dev/null || rc=$?
assert_eq "$rc" 1 "status --json with node two down: exit status"
assert_eq "$(jq -r '[.shard_info[] | select(.error) | .shard] | join(",")' st.json)" "1,3,5,7" \
    "--json: the shards with an error"
assert_eq "$(jq -r '[.shard_info[] | select(.error) | .node] | unique | join(",")' st.json)" "$two" \
    "--json: the node of the shards with an error"
assert_eq "$(jq '[.shard_info[] | select(.error | not) | .pending] | length' st.json)" 4 \
    "--json: shards of node one with their counters"
assert_eq "$(jq '.shard_info | length' st.json)" 8 "--json: shards listed"
