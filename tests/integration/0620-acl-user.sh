#!/usr/bin/env bash
# 0620-acl-user: lapse runs as an ACL user limited to its namespace, the
# docs/operating.md's line `~NS:* &* +@all -@dangerous`, with the default user off:
# init, produce, fire, cancel, status, and the operator's commands: split,
# get, check, finish --drain; every key it writes is in the namespace. No
# secret shows in a log (at log_level debug), in the status or on a
# command line. A wrong password, an unknown user and a wrong
# sentinel_password stop every program at start with one line naming the
# node and status 78; a node down at start (plain, or a Sentinel node
# whose sentinels are all down) is waited for up to redis.retry_timeout_ms,
# then each program exits 1. `password` alone authenticates as the default
# user of a server with requirepass.
. "$(dirname "$0")/../lib.sh"

redis_start main
rcli ACL SETUSER lapse on '>pw-lapse-s3cret' "~$NS:*" '&*' +@all -@dangerous >/dev/null
rcli ACL SETUSER admin on '>pw-admin' '~*' '&*' +@all >/dev/null
rcli ACL SETUSER default off >/dev/null
rcli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --user admin --pass pw-admin --no-auth-warning "$@"; }
[[ $(redis-cli -p "$REDIS_PORT" PING 2>&1) == *NOAUTH* ]] || fail "the default user still answers"

kafka_start --brokers 1
LOG_LEVEL=debug write_config # (no secret even in debug lines)
node="{ host = \"127.0.0.1\"; port = $REDIS_PORT; username = \"lapse\"; password = \"pw-lapse-s3cret\"; }"
sed -i "s|^redis = .*|redis = { nodes = ( $node ); };|" "$CONF"
scale init 2 >/dev/null || fail "init as the ACL user: exit status $?"
scanners_start 2
events_follow events.json
t0=$(now_ms)
{
    for i in $(seq 0 19); do echo "touch acl-$i @$((t0 + 500 + i * 10)) pl-$i"; done
    echo "touch gone @$((t0 + 800))"
    echo "cancel gone"
} | produce 2>produce.err || fail "producer as the ACL user: exit status $?: $(cat produce.err)"
events_wait_ids events.json 20 10000
status=$(scale status) || fail "status as the ACL user: exit status $?"
assert_match "$status" "shard" "status"
scale status --json >status.json || fail "status --json as the ACL user: exit status $?"
# (INFO is @dangerous: the replicas are counted by WAIT, their lag unknown)
assert_eq "$(jq -c '.nodes[0] | [.via, .primary, .replicas_online, .replica_lag_s]' status.json)" \
    "[\"plain\",\"127.0.0.1:$REDIS_PORT\",0,null]" "status --json .nodes as the ACL user"
# a marker due after the cancelled ID's deadline: once it fired, the
# scanner has claimed past it, so a fire of it would have shown
echo "touch acl-marker @$((t0 + 1000))" | produce 2>marker.err || fail "the marker: exit status $?"
events_wait_ids events.json 21 10000

# the operator's commands as the same user: split 2 -> 4 with IDs due later
# on the old shards, get, check, finish --drain; every key in NS
t0=$(now_ms)
for i in $(seq 0 39); do echo "touch far-$i @$((t0 + 3600000 + i))"; done | produce ||
    fail "producer of the far IDs: exit status $?"
scale split >split.out 2>&1 || fail "split as the ACL user: exit status $? ($(tail -n 3 split.out))"
scanner_start 2
scanner_start 3
t0=$(now_ms)
for i in $(seq 0 19); do echo "touch late-$i @$((t0 + 500 + i * 10))"; done | produce ||
    fail "producer after the split: exit status $?"
events_wait_ids events.json 41 10000
get=$(scale get far-7 --json) || fail "get as the ACL user: exit status $?"
# (a moving ID's deadline may still be in its old shard: .twin)
assert_eq "$(jq -r '(.deadline_ms // .twin.deadline_ms) != null' <<<"$get")" true "get far-7: a deadline ($get)"
wait_until 10000 'scale check >check.out 2>&1' || fail "check as the ACL user: $(cat check.out)"
scale finish --drain >finish.out 2>&1 || fail "finish --drain as the ACL user: exit status $? ($(tail -n 3 finish.out))"
assert_eq "$(sp_status '[.state, .shards] | @tsv' | tr '\t' ' ')" "stable 4" "state after finish"
assert_eq "$(($(shard_card 0) + $(shard_card 1) + $(shard_card 2) + $(shard_card 3)))" \
    40 "far IDs pending after the drain"
others=$(rcli --scan | grep -v "^$NS:" || true)
[[ -z $others ]] || fail "keys outside the namespace: $(head -3 <<<"$others" | tr '\n' ' ')"

scanner_stop
events_follow_stop
assert_eq "$(events_ids events.json | grep -c '^gone$')" 0 "events of the cancelled ID"
assert_never_early events.json

# no secret in what lapse printed, logged, or showed on a command line
for f in "$T"/*.log produce.err status.json split.out check.out finish.out; do
    ! grep -q 's3cret' "$f" || fail "the password shows in $(basename "$f")"
done
assert_eq "$(grep -c 's3cret' <<<"$status")" 0 "the password in status"

# refused: one line naming the node, status 78 (EX_CONFIG: a restart will
# not help), at once; lapse-scale check too (it tells a refusal from an
# unreachable node, status 3)
expect_refused "wrong password" "nodes = ( { host = \"127.0.0.1\"; port = $REDIS_PORT; username = \"lapse\"; password = \"wr0ng\"; } );" \
    "127\\.0\\.0\\.1:$REDIS_PORT.*(WRONGPASS|invalid)" "producer ingress scale check scanner"
expect_refused "unknown user" "nodes = ( { host = \"127.0.0.1\"; port = $REDIS_PORT; username = \"nobody\"; password = \"wr0ng\"; } );" \
    "127\\.0\\.0\\.1:$REDIS_PORT.*(WRONGPASS|invalid)"

# unreachable (a node not up yet, a failover under way) is no refusal:
# every program waits for it up to redis.retry_timeout_ms, then exits 1 (a
# restart may help), naming the node; the scanner says why it waits
free_port >/dev/null
expect_unreachable "plain node down" "nodes = ( { host = \"127.0.0.1\"; port = $FREE_PORT; username = \"lapse\"; password = \"pw-lapse-s3cret\"; } ); retry_timeout_ms = 1000;" \
    "127\\.0\\.0\\.1:$FREE_PORT.*refused"
free_port >/dev/null
s1=$FREE_PORT
free_port >/dev/null
want="lapse-x: no sentinel named its primary.*127\\.0\\.0\\.1:$s1.*refused"
expect_unreachable "all sentinels down" "nodes = ( { sentinels = ( \"127.0.0.1:$s1\", \"127.0.0.1:$FREE_PORT\" ); master = \"lapse-x\"; password = \"pw-lapse-s3cret\"; } ); retry_timeout_ms = 1000;" \
    "$want"
spawn waiting "$LAPSE_BIN/lapse-scanner" -c "$T/refused.conf" --shard 0
wait_until 10000 "grep -Eq 'waiting for Redis \(.*\) up to 1 s \(redis\.retry_timeout_ms\): redis $want' '$T/waiting.log'" ||
    fail "the scanner did not say why it waits: $(head -c 300 "$T/waiting.log")"
wait_until 10000 '! proc_alive waiting' || fail "the scanner still waits 10 s after redis.retry_timeout_ms (1 s)"
proc_stop waiting 1
assert_eq "$PROC_RC" 1 "the scanner's exit status, all sentinels down"
assert_file_match "$T/waiting.log" "^error lapse-scanner: redis $want" "the scanner's last word"

# a sentinel that demands a password: a wrong sentinel_password is refused
# the same way, naming the sentinel
free_port >/dev/null
sp=$FREE_PORT
mkdir -p "$T/sentinel"
printf '%s\n' "port $sp" "bind 127.0.0.1" "dir $T/sentinel" "requirepass pw-sentinel-s3cret" \
    "sentinel monitor lapse-x 127.0.0.1 1 1" >"$T/sentinel/sentinel.conf"
spawn sentinel redis-server "$T/sentinel/sentinel.conf" --sentinel --logfile ''
wait_until 10000 "[[ \$(redis-cli -p $sp --no-auth-warning -a pw-sentinel-s3cret PING 2>/dev/null) == PONG ]]" ||
    fail "the sentinel did not start"
expect_refused "wrong sentinel_password" "nodes = ( { sentinels = ( \"127.0.0.1:$sp\" ); master = \"lapse-x\"; sentinel_password = \"wr0ng\"; } );" \
    "lapse-x: no sentinel named its primary.*127\\.0\\.0\\.1:$sp.*(WRONGPASS|invalid)"

# password alone: the default user of a server with requirepass
redis_start req
assert_eq "$(redis-cli -p "$(redis_port req)" CONFIG SET requirepass pw-default-s3cret)" OK "requirepass"
req="{ host = \"127.0.0.1\"; port = $(redis_port req); password = \"pw-default-s3cret\"; }"
sed "s|^redis = .*|redis = { nodes = ( $req ); };|" "$CONF" >req.conf
lapse_scale req.conf init 1 >/dev/null 2>req.err || fail "init with password alone: exit status $? ($(cat req.err))"
echo "touch req-1 +600000" | "$LAPSE_BIN/lapse-producer" -c req.conf 2>>req.err ||
    fail "producer with password alone: exit status $? ($(cat req.err))"
assert_match "$(redis-cli -p "$(redis_port req)" --no-auth-warning -a pw-default-s3cret \
    EVAL "$_SK_LUA return _sk_get('ZSCORE', KEYS[1], ARGV[1])" 1 "$NS:z:0" req-1)" '^[0-9]+$' \
    "req-1 stored as the default user"
expect_refused "wrong password alone" "nodes = ( { host = \"127.0.0.1\"; port = $(redis_port req); password = \"wr0ng\"; } );" \
    "127\\.0\\.0\\.1:$(redis_port req).*(WRONGPASS|invalid)"
! grep -q 's3cret' req.err || fail "the password shows in the programs' output"
