#!/usr/bin/env bash
# 0810-check: lapse-scale check's verdicts and exit statuses.
#
# 2 shards, a scanner each, lease_ms 2000:
#  - all running: exit 0, one "ok" line; --json .ok true, .problems [];
#  - shard 1's scanner stopped (its lock released): exit 1, exactly the
#    line "shard 1: scanner none (no active scanner)" on stdout (shard 0
#    not named); --json names shard 1 with problem "no_scanner"; status,
#    status --watch and get (an ID of shard 1) show its scanner as "none",
#    one name everywhere (null in JSON);
#  - it runs again, then the only broker goes down and an ID of shard 0
#    falls due: the scanner holds it in flight (its score is a lease in
#    the future, so "due" alone would not see it), and within a few
#    seconds check --max-overdue 1 exits 1 with "shard 0: oldest due ID is
#    N s overdue (max 1)", N >= 1; with --max-overdue 600 it is fine;
#  - one name and one "none" for each figure (2026-11-26): status,
#    status --watch, check: columns/fields due, inflight, overdue
#    (overdue_ms in JSON), "-" / null when nothing is overdue, the same
#    figure in status --json and check --json while shard 0's ID waits;
#  - usage errors exit 2 (--max-overdue abc, an extra argument);
#  - Redis unreachable (a config on a port nobody listens on) exits 3, a
#    status of its own, also under --json (.status 3).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
SCANNER_CFG="poll_ms = 10; lease_ms = 2000;"
write_config
scale init 2 >/dev/null
scanners_start 2
locks() { [[ -n $(rcli GET "$NS:l:0") && -n $(rcli GET "$NS:l:1") ]]; }
wait_until 10000 locks || fail "the scanners took no locks within 10 s"

rc=0
scale check >c.out 2>c.err || rc=$?
assert_eq "$rc" 0 "check with every scanner running ($(cat c.out c.err))"
assert_file_match c.out '^ok: ' "check's line when all is well"
scale check --json >c.json || fail "check --json: exit status $?"
assert_eq "$(jq -c '[.ok, .problems]' c.json)" '[true,[]]' "check --json when all is well"
for cmd in "status --json" "check --json"; do
    assert_eq "$(scale $cmd | jq -c '[.shard_info[] | [.due, .inflight, .overdue_ms]]')" \
        '[[0,0,null],[0,0,null]]' "$cmd: [due, inflight, overdue_ms] per shard when all is well"
done
for cmd in status "status --watch --count 1"; do
    assert_eq "$(scale $cmd | awk '$1 == "shard" { print $3, $4, $5, $6 }')" "pending due inflight overdue" \
        "$cmd: the shard table's columns"
    assert_eq "$(scale $cmd | awk '$1 ~ /^[01]$/ { print $6 }' | sort -u)" "-" "$cmd: overdue when nothing is"
done

scanner_stop 1
rc=0
scale check >c.out || rc=$?
assert_eq "$rc" 1 "check with shard 1's scanner stopped"
assert_eq "$(cat c.out)" "shard 1: scanner none (no active scanner)" "check's lines with shard 1's scanner stopped"
for cmd in status "status --watch --count 1"; do
    assert_eq "$(scale $cmd | awk '$1 ~ /^[01]$/ { print $1, ($NF == "none" ? "none" : "token") }' | paste -sd,)" \
        "0 token,1 none" "$cmd: the scanner column with shard 1's stopped"
done
id1=$(for i in $(seq 0 99); do
    [[ $(scale get "g-$i" --json | jq .shard) == 1 ]] && echo "g-$i" && break
done)
[[ -n $id1 ]] || fail "no ID of shard 1 among g-0..99"
assert_eq "$(scale get "$id1" | awk '$1 == "scanner" { print $2 }')" none "get: the scanner of shard 1"
assert_eq "$(scale get "$id1" --json | jq .scanner)" null "get --json: the scanner of shard 1"
rc=0
scale check --json >c.json || rc=$?
assert_eq "$rc" 1 "check --json with shard 1's scanner stopped"
assert_eq "$(jq -c '[.ok, [.problems[] | [.shard, .problem]]]' c.json)" '[false,[[1,"no_scanner"]]]' "check --json's problems"

scanner_start 1
wait_until 10000 locks || fail "shard 1's scanner took no lock within 10 s"
scale check >/dev/null || fail "check after shard 1's scanner came back: exit status $?"

seq -f 'id-%g' 0 19 >ids.txt
sp_hashes ids.txt >hashes.txt
X=$(awk '$2 % 2 == 0 { print $1; exit }' hashes.txt)
kafka_ctl "down 1"
echo "touch $X +0" | produce 2>/dev/null || fail "producer: exit status $?"
overdue() {
    rc=0
    scale check --max-overdue 1 >c.out || rc=$?
    ((rc == 1)) && grep -qE '^shard 0: oldest due ID is [0-9]+(\.[0-9])? s overdue \(max 1\)$' c.out
}
wait_until 10000 overdue || fail "check never reported shard 0 overdue with the broker down (status $rc: $(cat c.out))"
n=$(sed -nE 's/^shard 0: oldest due ID is ([0-9.]+) s.*/\1/p' c.out)
awk -v n="$n" 'BEGIN { exit !(n >= 1) }' || fail "seconds overdue reported with --max-overdue 1: $n, below 1"
! grep -q '^shard 1' c.out || fail "check named shard 1: $(cat c.out)"
assert_eq "$(jq '.shard_info[0].inflight + .shard_info[0].due' <(scale check --max-overdue 1 --json || true))" 1 "shard 0's ID, due or in flight"
for cmd in "status --json" "check --json"; do
    assert_eq "$(scale $cmd | jq '.shard_info[0].overdue_ms >= 1000, .shard_info[1].overdue_ms')" \
        $'true\nnull' "$cmd: overdue_ms of shard 0 (its ID waits) and shard 1"
done
for cmd in status "status --watch --count 1"; do
    assert_eq "$(scale $cmd | awk '$1 == "0" { print ($6 ~ /^[0-9]+\.[0-9]$/ && $7 == "s") }')" 1 \
        "$cmd: shard 0's overdue in seconds"
done
scale check --max-overdue 600 >c.out || fail "check --max-overdue 600 with a few seconds' delay: exit status $? ($(cat c.out))"
kafka_ctl "up 1"

for args in "--max-overdue abc" "extra-arg"; do
    rc=0
    scale check $args >/dev/null 2>c.err || rc=$?
    assert_eq "$rc" 2 "check $args"
done

sed "s/port = $REDIS_PORT;/port = 1;/" "$CONF" >down.conf
for json in "" --json; do
    rc=0
    timeout 20 "$LAPSE_SCRIPTS/lapse-scale" -c down.conf check $json >d.out 2>d.err || rc=$?
    assert_eq "$rc" 3 "check $json with Redis unreachable"
done
assert_eq "$(jq .status d.out)" 3 "check --json's .status with Redis unreachable"
scanner_stop
