#!/usr/bin/env bash
# 0625-eviction-policy: lapse never runs silently on a Redis that evicts
# (common/redis_policy.c). Under allkeys-lru and volatile-lru the producer
# (stdin and --from-kafka), the scanner and lapse-scale init stop at start
# with one line naming the node, the policy and the fix; with
# redis.accept_eviction = true they run, with a warning, and lapse-scale
# status shows the policy and check fails on it. A policy changed to an
# evicting one while a scanner runs is found at its reconnect: it logs an
# error and keeps firing. An ACL user denied INFO and CONFIG (docs/operating.md's
# `-@dangerous` user) says once that it cannot check, and
# redis.policy_checked silences that.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
write_config
node="{ host = \"127.0.0.1\"; port = $REDIS_PORT; }"
want_fix="127\\.0\\.0\\.1:$REDIS_PORT: maxmemory-policy is %s, which evicts keys.*CONFIG SET maxmemory-policy noeviction.*redis.accept_eviction = true"

for policy in allkeys-lru volatile-lru; do
    rcli CONFIG SET maxmemory-policy "$policy" >/dev/null
    # shellcheck disable=SC2059
    want=$(printf "$want_fix" "$policy")
    expect_refused "$policy" "nodes = ( $node );" "$want" "producer scanner"
    rc=0
    scale init 2 >init.out 2>init.err || rc=$?
    assert_ne "$rc" 0 "$policy: lapse-scale init's exit status"
    assert_eq "$(grep -c . init.err)" 1 "$policy: lines init printed ($(head -c 300 init.err))"
    assert_file_match init.err "$want" "$policy: init's error"
    # the ingress: the same line, at start
    cat >>"$T/refused.conf" <<EOC
ingress = { topic = "signals"; group = "g-evict"; };
EOC
    rc=0
    timeout 20 "$LAPSE_BIN/lapse-producer" -c "$T/refused.conf" --from-kafka >ingress.out 2>ingress.err || rc=$?
    ((rc != 0 && rc != 124)) || fail "$policy: the ingress's exit status $rc"
    assert_file_match ingress.err "$want" "$policy: the ingress's error"
done
assert_eq "$(rcli EXISTS "$NS:layout")" 0 "a layout written under an evicting policy"

# accepted: each program runs, and says what it risks
rcli CONFIG SET maxmemory-policy allkeys-lru >/dev/null
sed -i "s|^redis = .*|redis = { nodes = ( $node ); accept_eviction = true; };|" "$CONF"
scale init 2 >init.out 2>init.err || fail "init with accept_eviction: exit status $? ($(cat init.err))"
assert_file_match init.err "warning: redis 127\\.0\\.0\\.1:$REDIS_PORT: maxmemory-policy is allkeys-lru: Redis may evict lapse's keys.*accept_eviction" \
    "init's warning"
scanners_start 2
events_follow events.json
t0=$(now_ms)
for i in $(seq 0 9); do echo "touch ev-$i @$((t0 + 300 + i * 10))"; done | produce 2>produce.err ||
    fail "producer with accept_eviction: exit status $? ($(cat produce.err))"
assert_file_match produce.err "^warn lapse-producer: redis 127\\.0\\.0\\.1:$REDIS_PORT: maxmemory-policy is allkeys-lru: Redis may evict" \
    "the producer's warning"
events_wait_ids events.json 10 10000
for s in 0 1; do
    assert_file_match "$T/scanner-$s.log" "^warn lapse-scanner: shard $s: redis .*maxmemory-policy is allkeys-lru" \
        "scanner $s's warning"
done
{ cat "$CONF"; echo 'ingress = { topic = "signals"; group = "g-evict"; };'; } >ingress.conf
spawn ingress "$LAPSE_BIN/lapse-producer" -c "$T/ingress.conf" --from-kafka
INGRESS=$SPAWNED
wait_until 10000 "grep -q 'maxmemory-policy is allkeys-lru' '$T/$INGRESS.log'" || fail "the ingress did not warn"
assert_file_match "$T/$INGRESS.log" "^warn lapse-producer: ingress: redis 127\\.0\\.0\\.1:$REDIS_PORT: maxmemory-policy is allkeys-lru: Redis may evict" \
    "the ingress's warning"
ingress_stop

# status shows it, check fails on it
scale status >status.out 2>&1 || fail "status: exit status $? ($(cat status.out))"
assert_match "$(cat status.out)" "127\\.0\\.0\\.1:$REDIS_PORT +127\\.0\\.0\\.1:$REDIS_PORT .* allkeys-lru \\(evicts" "status's memory line"
scale status --json >status.json || fail "status --json: exit status $?"
assert_eq "$(jq -c '.memory[0] | [.maxmemory_policy, .evicting, (.used_memory > 0), .maxmemory]' status.json)" \
    '["allkeys-lru",true,true,0]' "status --json .memory"
rc=0
scale check >check.out 2>&1 || rc=$?
assert_eq "$rc" 1 "check's exit status under allkeys-lru ($(cat check.out))"
assert_file_match check.out "maxmemory-policy is allkeys-lru" "check's problem"
rc=0
scale check --json >check.json 2>&1 || rc=$?
assert_eq "$(jq -c '[.ok, ([.problems[].problem] | index("evicting") != null), .memory[0].evicting]' check.json)" \
    '[false,true,true]' "check --json"

# used memory past the threshold fails check, --max-memory moves it
rcli CONFIG SET maxmemory-policy noeviction >/dev/null
used=$(rcli INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
rcli CONFIG SET maxmemory $((used * 100 / 95)) >/dev/null
rc=0
scale check >check.out 2>&1 || rc=$?
assert_eq "$rc" 1 "check's exit status at ~95 % of maxmemory ($(cat check.out))"
assert_file_match check.out "used memory is 9[0-9]% of maxmemory .*max 90%" "check's memory problem"
scale check --max-memory 100 >check.out 2>&1 || fail "check --max-memory 100: exit status $? ($(cat check.out))"
rcli CONFIG SET maxmemory 0 >/dev/null

# changed while running, found at a reconnect: an error, and it fires on
# (stopping would fire nothing from the shard)
sed "s|^redis = .*|redis = { nodes = ( $node ); accept_eviction = true; };|" "$CONF" >accept.conf
sed -i "s|^redis = .*|redis = { nodes = ( $node ); };|" "$CONF"
free_port >/dev/null
mp=$FREE_PORT # shard 0's scanner serves metrics
sed "s|^scanner = .*|scanner = { poll_ms = 10; metrics_port = $mp; };|" "$CONF" >metrics.conf
scanner_stop
spawn scanner-0 "$LAPSE_BIN/lapse-scanner" -c "$T/metrics.conf" --shard 0
scanner_start 1
wait_until 10000 "[[ -n \$(shard_holder 0) && -n \$(shard_holder 1) ]]" || fail "no scanners active"
wait_until 10000 "metrics_get $mp | grep -q '^lapse_scanner_redis_evicting{.*} 0\$'" ||
    fail "lapse_scanner_redis_evicting is not 0 under noeviction"
assert_ge "$(metric "$mp" redis_memory_used_bytes)" 1 "lapse_scanner_redis_memory_used_bytes"
assert_eq "$(metric "$mp" redis_memory_max_bytes)" 0 "lapse_scanner_redis_memory_max_bytes"
# the gauge sees the change within seconds, before any reconnect
rcli CONFIG SET maxmemory-policy volatile-ttl >/dev/null
wait_until 10000 "metrics_get $mp | grep -q '^lapse_scanner_redis_evicting{.*} 1\$'" ||
    fail "lapse_scanner_redis_evicting did not turn 1 under volatile-ttl"
rcli CLIENT KILL TYPE normal SKIPME yes >/dev/null
for s in 0 1; do
    wait_until 10000 "grep -q 'maxmemory-policy is now volatile-ttl' '$T/scanner-$s.2.log'" ||
        fail "scanner $s said nothing of volatile-ttl after its reconnect"
    assert_file_match "$T/scanner-$s.2.log" "^error lapse-scanner: shard $s: redis 127\\.0\\.0\\.1:$REDIS_PORT: maxmemory-policy is now volatile-ttl.*serving on" \
        "scanner $s's error after its reconnect"
done
t0=$(now_ms)
for i in $(seq 0 9); do echo "touch late-$i @$((t0 + 300 + i * 10))"; done |
    "$LAPSE_BIN/lapse-producer" -c accept.conf 2>/dev/null || fail "producer with accept_eviction: exit status $?"
events_wait_ids events.json 20 10000
for s in 0 1; do proc_alive "scanner-$s.2" || fail "scanner $s stopped"; done
scanner_stop
events_follow_stop
assert_never_early events.json

# an ACL user denied INFO and CONFIG: said once, silenced by policy_checked
rcli CONFIG SET maxmemory-policy noeviction >/dev/null
rcli ACL SETUSER lapse on '>pw-lapse' "~$NS:*" '&*' +@all -@dangerous >/dev/null
acl="{ host = \"127.0.0.1\"; port = $REDIS_PORT; username = \"lapse\"; password = \"pw-lapse\"; }"
sed -i "s|^redis = .*|redis = { nodes = ( $acl ); };|" "$CONF"
echo "touch acl-1 +600000" | produce 2>produce.err || fail "producer as the ACL user: exit status $? ($(cat produce.err))"
assert_eq "$(grep -c 'cannot check maxmemory-policy' produce.err)" 1 "the producer's 'cannot check' lines"
assert_file_match produce.err "^warn lapse-producer: redis 127\\.0\\.0\\.1:$REDIS_PORT: cannot check maxmemory-policy: INFO and CONFIG denied.*redis.policy_checked = \"noeviction\"" \
    "the producer's 'cannot check' line"
scanner_start 0
wait_until 10000 "grep -q 'cannot check maxmemory-policy' '$T/$SCANNER.log'" || fail "the scanner did not say it cannot check"
wait_until 10000 "[[ -n \$(shard_holder 0) ]]" || fail "the scanner did not start as the ACL user"
assert_eq "$(grep -c 'cannot check maxmemory-policy' "$T/$SCANNER.log")" 1 "the scanner's 'cannot check' lines"
scanner_stop
scale status >status.out 2>&1 || fail "status as the ACL user: exit status $?"
assert_match "$(cat status.out)" "unknown: INFO and CONFIG denied" "status's policy as the ACL user"
sed -i "s|^redis = .*|redis = { nodes = ( $acl ); policy_checked = \"noeviction\"; };|" "$CONF"
echo "touch acl-2 +600000" | produce 2>produce.err || fail "producer with policy_checked: exit status $?"
assert_eq "$(grep -c 'maxmemory-policy' produce.err)" 0 "the producer's policy lines with policy_checked"
scanner_start 0
wait_until 10000 "[[ -n \$(shard_holder 0) ]]" || fail "the scanner did not start with policy_checked"
assert_eq "$(grep -c 'maxmemory-policy' "$T/$SCANNER.log")" 0 "the scanner's policy lines with policy_checked"
scanner_stop
# a typo is no policy
sed -i "s|^redis = .*|redis = { nodes = ( $acl ); policy_checked = \"noevict\"; };|" "$CONF"
rc=0
echo "touch acl-3 +600000" | produce 2>produce.err || rc=$?
assert_eq "$rc" 2 "the producer's exit status with policy_checked = noevict"
assert_file_match produce.err "redis.policy_checked: \"noevict\" is no maxmemory-policy" "the typo's error"

# a second node that evicts, the first sound: the producer and the scanner
# of a shard on it stop at start with status 78 (a refusal), naming it — not
# at the first write there, nor with a status that systemd restarts
# (a first init refuses a node that is to hold shards and evicts, 78, writing
# nothing: the second node evicts from after init then)
redis_start second
rcli CONFIG SET maxmemory-policy noeviction >/dev/null
redis-cli -p "$(redis_port second)" CONFIG SET maxmemory-policy allkeys-lru >/dev/null
sed -i "s|^redis = .*|redis = { nodes = ( $node, { host = \"127.0.0.1\"; port = $(redis_port second); } ); };|" "$CONF"
NS=two
sed -i "s|^namespace = .*|namespace = \"$NS\";|" "$CONF"
rc=0
scale init 2 >/dev/null 2>init.err || rc=$?
assert_eq "$rc" 78 "init with the second node evicting: exit status"
assert_file_match init.err "init: node 127\\.0\\.0\\.1:$(redis_port second) .*, which would hold shard 1, refuses us: .*maxmemory-policy is allkeys-lru.*nothing was written" "init's refusal"
assert_eq "$(rcli EXISTS "$NS:layout")" 0 "a layout written by the refused init"
redis-cli -p "$(redis_port second)" CONFIG SET maxmemory-policy noeviction >/dev/null
scale init 2 >/dev/null 2>init.err || fail "init on two nodes: exit status $? ($(cat init.err))"
redis-cli -p "$(redis_port second)" CONFIG SET maxmemory-policy allkeys-lru >/dev/null
want="127\\.0\\.0\\.1:$(redis_port second): maxmemory-policy is allkeys-lru"
rc=0
echo "touch two-1 +600000" | timeout 20 "$LAPSE_BIN/lapse-producer" -c "$CONF" >/dev/null 2>produce.err || rc=$?
assert_eq "$rc" 78 "the producer's exit status with the second node evicting ($(head -c 300 produce.err))"
assert_file_match produce.err "$want" "the producer's error"
rc=0
timeout 20 "$LAPSE_BIN/lapse-scanner" -c "$CONF" --shard 1 >/dev/null 2>scanner.err || rc=$?
assert_eq "$rc" 78 "the exit status of shard 1's scanner, on the evicting node ($(head -c 300 scanner.err))"
assert_file_match scanner.err "$want" "the scanner's error"
