#!/usr/bin/env bash
# 0070-bad-config: a wrong, missing or out-of-range key stops lapse-producer,
# lapse-scanner and lapse-scale before they connect anywhere, with one line
# "FILE:LINE: key: reason" ("FILE: key: reason" for a missing key) on
# stderr for each problem (two unknown keys: two lines); an unknown key
# near a known one names it ("did you mean"), a group left open is named
# by the line that opened it. Redis is real and
# counts connections: none may arrive; Kafka points where nothing listens.
# Also: --help exits 0 and an unknown option exits non-zero for every
# program.
. "$(dirname "$0")/../lib.sh"

redis_start main

# mkcfg NAME: writes NAME.conf from the template below; C_<name> variables replace single lines
# (set to '' to drop a key: line numbers stay the same).
mkcfg() {
    local ns=${C_NS-'namespace = "demo";'} log=${C_LOG-'log_level = "info";'}
    local port=${C_PORT-"      port = $REDIS_PORT; }"} brokers=${C_BROKERS-'  brokers = "127.0.0.1:1";'}
    local poll=${C_POLL-'  poll_ms = 10;'} lease=${C_LEASE-'  lease_ms = 5000;'} extra=${C_EXTRA-}
    cat >"$1.conf" <<EOF2
$ns
$log
redis = {
  nodes = (
    { host = "127.0.0.1";
$port
  );
};
kafka = {
$brokers
  topic = "lapse.timeouts";
};
scanner = {
$poll
$lease
};
$extra
EOF2
}

# the template itself is valid
mkcfg good
lapse_scale good.conf init 1 >/dev/null || fail "the valid template config was refused"
echo "touch ok +600000" | "$LAPSE_BIN/lapse-producer" -c good.conf || fail "producer refused the valid config"

conns() { rcli INFO stats | tr -d '\r' | sed -n 's/^total_connections_received://p'; }
c0=$(conns)

# check NAME ERE [LINES]: each program must refuse NAME.conf with its stderr
# line (LINES lines, default 1) matching "NAME.conf" followed by ERE (at the
# start or after ": ")
check() {
    local name=$1 ere="(^|: )${1//./\\.}\\.conf$2" prog rc
    for prog in producer scanner scale; do
        rc=0
        case $prog in
        producer) timeout 10 "$LAPSE_BIN/lapse-producer" -c "$name.conf" </dev/null ;;
        scanner) timeout 10 "$LAPSE_BIN/lapse-scanner" -c "$name.conf" --shard 0 </dev/null ;;
        scale) timeout 10 "$LAPSE_SCRIPTS/lapse-scale" -c "$name.conf" status </dev/null ;;
        esac >"$name.$prog.out" 2>"$name.$prog.err" || rc=$?
        ((rc != 0)) || fail "$prog accepted $name.conf"
        ((rc != 124)) || fail "$prog did not exit on $name.conf (timeout)"
        ((rc < 128)) || fail "$prog crashed on $name.conf (status $rc)"
        assert_file_match "$name.$prog.err" "$ere" "$prog's error for $name.conf"
        assert_eq "$(_lines "$name.$prog.err")" "${3:-1}" "lines on $prog's stderr for $name.conf"
    done
}

C_NS='' mkcfg no-ns
check no-ns ": namespace: "
C_NS='namespace = 42;' mkcfg ns-type
check ns-type ":1: namespace: "
C_NS='namespace = "";' mkcfg ns-empty
check ns-empty ":1: namespace: "
C_NS='namespace = "a:b";' mkcfg ns-colon
check ns-colon ":1: namespace: "
C_LOG='log_level = "loud";' mkcfg log
check log ":2: log_level: "
C_PORT='      port = 70000; }' mkcfg port-range
check port-range ":6: [^ ]*port: "
C_PORT='      port = "6379"; }' mkcfg port-type
check port-type ":6: [^ ]*port: "
C_PORT='      }' mkcfg port-missing
check port-missing "(:[0-9]+)?: [^ ]*port: "
C_BROKERS='' mkcfg no-brokers
check no-brokers ": kafka.brokers: "
C_POLL='  poll_ms = -5;' mkcfg poll
check poll ":14: scanner.poll_ms: "
C_LEASE='  lease_ms = 0;' mkcfg lease
check lease ":15: scanner.lease_ms: "
C_EXTRA='bogus_key = 1;' mkcfg unknown
check unknown ":17: bogus_key: "
C_POLL='  pol_ms = 10;' mkcfg typo
check typo ":14: scanner\.pol_ms: unknown key \(did you mean scanner\.poll_ms\?\)$"
C_POLL='  poll_msec = 10;' mkcfg typo2
check typo2 ":14: scanner\.poll_msec: unknown key \(did you mean scanner\.poll_ms\?\)$"
# two unknown keys: both named, a line each
C_POLL='  pol_ms = 10;' C_EXTRA='bogus_key = 1;' mkcfg two
check two ":14: scanner\.pol_ms: unknown key \(did you mean scanner\.poll_ms\?\)$" 2
for prog in producer scanner scale; do
    assert_file_match "two.$prog.err" "(^|: )two\.conf:17: bogus_key: unknown key$" "$prog's second line for two.conf"
done
C_EXTRA='producer = { batch = 0; };' mkcfg batch
check batch ":17: producer.batch: "
C_EXTRA='oops = ;' mkcfg syntax
check syntax ":17: "
# the scanner group's "};" (line 16) left out: libconfig notices at the end
# of the file; the message names line 13, which opened the group
awk 'NR != 16' good.conf >open.conf
check open ":[0-9]+: syntax error \(the group opened at line 13 is not closed\)$"
check missing-file ""

c1=$(conns)
assert_eq "$c1" $((c0 + 1)) "Redis connections during the bad-config runs (1 = the check itself)"

# --help and unknown options, every program
progs=("$LAPSE_SCRIPTS/lapse-scale")
for p in "$LAPSE_BIN"/lapse-*; do progs+=("$p"); done
((${#progs[@]} >= 5)) || fail "expected at least 5 programs, found: ${progs[*]}"
for p in "${progs[@]}"; do
    rc=0
    timeout 5 "$p" --help >help.out 2>help.err </dev/null || rc=$?
    assert_eq "$rc" 0 "$(basename "$p") --help exit status"
    [[ -s help.out ]] || fail "$(basename "$p") --help printed nothing on stdout"
    rc=0
    timeout 5 "$p" --no-such-option >opt.out 2>opt.err </dev/null || rc=$?
    ((rc != 0 && rc != 124 && rc < 128)) || fail "$(basename "$p") --no-such-option: exit status $rc"
    [[ -s opt.err ]] || fail "$(basename "$p") --no-such-option: nothing on stderr"
done
