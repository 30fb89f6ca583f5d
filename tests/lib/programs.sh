# tests/lib/programs.sh — part of tests/lib.sh (sourced by it, never alone):
# the mock Kafka (lapse-kafka-dev) and its events, the lapse programs
# (config, producer, lapse-scale, scanners, the Kafka ingress) and the
# scanner internals tests read (locks, metrics).

# ---------------------------------------------------------------- kafka

KAFKA_CTL_FD=

# kafka_start [lapse-kafka-dev options...]: a mock Kafka with TOPIC (4
# partitions unless the options say otherwise); sets KAFKA_BROKERS. Its stdin
# is a FIFO kept open here, for kafka_ctl.
kafka_start() {
    mkfifo "$T/kafka.ctl"
    exec {KAFKA_CTL_FD}<>"$T/kafka.ctl"
    : >"$T/kafka.out"
    SPAWN_STDIN=$T/kafka.ctl SPAWN_OUT=$T/kafka.out \
        spawn kafka "$LAPSE_BIN/lapse-kafka-dev" --partitions 4 "$@" "$TOPIC"
    wait_until 15000 '! proc_alive kafka || (($(_lines "$T/kafka.out") >= 1))' ||
        fail "lapse-kafka-dev printed no bootstrap address within 15 s"
    proc_alive kafka || fail "lapse-kafka-dev exited at start"
    KAFKA_BROKERS=$(head -n 1 "$T/kafka.out")
    assert_match "$KAFKA_BROKERS" '^[^ ]+:[0-9]+(,[^ ]+:[0-9]+)*$' "bootstrap address"
}

_lines() { local n; n=$(wc -l <"$1"); echo $((n)); }

# kafka_ctl "COMMAND": sends a control line to lapse-kafka-dev and fails the
# test unless it answers "ok" within 5 s.
kafka_ctl() {
    [[ -n $KAFKA_CTL_FD ]] || fail "kafka_ctl before kafka_start"
    local before ans
    before=$(_lines "$T/kafka.out")
    printf '%s\n' "$*" >&"$KAFKA_CTL_FD"
    wait_until 5000 '(($(_lines "$T/kafka.out") > before))' ||
        fail "lapse-kafka-dev did not answer '$*'"
    ans=$(sed -n "$((before + 1))p" "$T/kafka.out")
    [[ $ans == ok ]] || fail "lapse-kafka-dev answered '$ans' to '$*'"
}

# events_read COUNT TIMEOUT_MS > FILE: the first COUNT events of TOPIC (from
# the start of the topic), one JSON object a line; lapse-tail's status (1
# when fewer arrived within TIMEOUT_MS).
events_read() {
    "$LAPSE_BIN/lapse-tail" -b "$KAFKA_BROKERS" -t "$TOPIC" --count "$1" --timeout-ms "$2" \
        2>>"$T/tail.log"
}

# events_follow FILE: a background lapse-tail appending every event to FILE
# until the test ends (or events_follow_stop).
events_follow() {
    SPAWN_OUT=$1 SPAWN_WATCH=0 spawn tail-follow "$LAPSE_BIN/lapse-tail" \
        -b "$KAFKA_BROKERS" -t "$TOPIC"
    FOLLOW=$SPAWNED
}

events_follow_stop() { proc_stop "$FOLLOW" 5; }

events_ids() { # FILE: the id of every complete event line (duplicates kept)
    jq -R -r 'fromjson? | .id' "$1"
}

# assert_never_early FILE: no event in FILE has fired_ms < deadline_ms
assert_never_early() {
    local early
    early=$(jq -c -s '[.[] | select(.fired_ms < .deadline_ms)] | .[:3][]' "$1")
    [[ -z $early ]] || fail "fired before the deadline: $early"
}

# assert_once FILE: no ID has two events in FILE
assert_once() {
    local dups
    dups=$(jq -r -s 'map(.id) | group_by(.) | map(select(length > 1) | .[0]) | .[:5][]' "$1")
    [[ -z $dups ]] || fail "delivered more than once: $dups"
}

events_unique() { # FILE: how many distinct IDs
    local n
    n=$(events_ids "$1" | sort -u | wc -l)
    echo $((n))
}

# events_wait_ids FILE N TIMEOUT_MS: waits until FILE holds N distinct IDs
events_wait_ids() {
    local _ew_file=$1 _ew_n=$2
    wait_until "$3" '(($(events_unique "$_ew_file") >= _ew_n))' ||
        fail "only $(events_unique "$1") of $2 distinct IDs arrived within $3 ms"
}

# ---------------------------------------------------------------- lapse

# write_config [FILE [EXTRA]]: a config for the test's redis and kafka;
# scanner settings from SCANNER_CFG (default "poll_ms = 10;"); EXTRA is
# appended as top-level libconfig text.
write_config() {
    local f=${1:-$CONF}
    cat >"$f" <<EOF
namespace = "$NS";
log_level = "${LOG_LEVEL:-info}";
redis = { nodes = ( { host = "127.0.0.1"; port = ${REDIS_PORT:-1}; } ); };
kafka = { brokers = "$KAFKA_BROKERS"; topic = "$TOPIC"; };
scanner = { $SCANNER_CFG };
${2:-}
EOF
}

produce() { # [ARGS...] < LINES: lapse-producer -c CONF
    "$LAPSE_BIN/lapse-producer" -c "$CONF" "$@"
}

scale() { # ARGS...: scripts/lapse-scale -c CONF (lapse_scale)
    lapse_scale "$CONF" "$@"
}

# lapse_scale CONFIG ARGS...: scripts/lapse-scale -c CONFIG ARGS. A new
# namespace is in one sorted set a shard; with LAPSE_TEST_SMALL_KEYS=1 an
# `init` gets --small-keys (the whole suite runs in small keys: docs/operating.md
# "Small keys"), unless the ARGS name a form already. A test of the
# one-zset internals pins that form with scale_init_one_zset.
lapse_scale() {
    local conf=$1 a init=0 form=0
    shift
    for a in "$@"; do
        case $a in
        init) init=1 ;;
        --small-keys | --one-zset) form=1 ;;
        esac
    done
    if ((init && !form)) && [[ ${LAPSE_TEST_SMALL_KEYS:-0} == 1 ]]; then
        set -- "$@" --small-keys
    fi
    "$LAPSE_SCRIPTS/lapse-scale" -c "$conf" "$@"
}

# scale_init_one_zset N [ARGS...]: scale init N in the one-zset form (one
# sorted set a shard): for the tests of the one-zset internals (lease
# scores crafted in NS:z:I, ...)
scale_init_one_zset() { scale init "$@" --one-zset; }

# scale_offline [ARGS...]: the offline IDs a line each, "id<TAB>shard<TAB>
# deadline_ms<TAB>since_ms", oldest first (from offline --json: the text
# form is for people); nothing when none is
scale_offline() {
    scale offline --json "$@" | jq -r '.offline[] | [.id, .shard, .deadline_ms, .since_ms] | @tsv'
}

# small_keys_on: 0 when the test's namespaces are in small keys
# (LAPSE_TEST_SMALL_KEYS=1)
small_keys_on() { [[ ${LAPSE_TEST_SMALL_KEYS:-0} == 1 ]]; }

# scanner_start SHARD [ARGS...]: a scanner for SHARD in the background; its
# process name (scanner-SHARD, scanner-SHARD.2, ...) is left in SCANNER.
scanner_start() {
    local shard=$1
    shift
    spawn "scanner-$shard" "$LAPSE_BIN/lapse-scanner" -c "$CONF" --shard "$shard" "$@"
    SCANNER=$SPAWNED
}

# lock_pid SHARD: the pid in the shard's lock token (host:pid:random),
# read straight from Redis (cheaper than lapse-scale status in a timed wait)
lock_pid() {
    local h
    h=$(rcli GET "$NS:l:$1")
    h=${h%:*}
    echo "${h##*:}"
}

# _start_rc PROG CONF: runs PROG (producer, ingress, scale, check, scanner)
# with CONF until it exits (at most 20 s: 124 then), its stdout and stderr
# in $T/refused.out and .err; leaves its exit status in START_RC and how
# long it ran in START_MS. The ingress gets an ingress group added to CONF
# when it has none.
_start_rc() {
    local prog=$1 conf=$2 t0
    if [[ $prog == ingress ]] && ! grep -q '^ingress' "$conf"; then
        { cat "$conf"; echo 'ingress = { topic = "lapse.signals"; group = "g-start"; };'; } >"$conf.ingress"
        conf=$conf.ingress
    fi
    START_RC=0
    t0=$(local_ms)
    case $prog in
    producer) timeout 20 "$LAPSE_BIN/lapse-producer" -c "$conf" ;;
    ingress) timeout 20 "$LAPSE_BIN/lapse-producer" -c "$conf" --from-kafka ;;
    scale) timeout 20 "$LAPSE_SCRIPTS/lapse-scale" -c "$conf" status ;;
    check) timeout 20 "$LAPSE_SCRIPTS/lapse-scale" -c "$conf" check ;;
    scanner) timeout 20 "$LAPSE_BIN/lapse-scanner" -c "$conf" --shard 0 ;;
    esac </dev/null >"$T/refused.out" 2>"$T/refused.err" || START_RC=$?
    START_MS=$(($(local_ms) - t0))
}

# expect_refused WHAT REDIS_GROUP WANT_ERE [PROGRAMS]: with CONF's redis
# group replaced by REDIS_GROUP (libconfig text inside "redis = { ... };"),
# each of PROGRAMS (default: producer ingress scale scanner; check too if
# named) stops at start at once (within 20 s: redis.retry_timeout_ms is
# not waited out), with status 78 (EX_CONFIG: Redis refused us, a restart
# will not help) and exactly one line on stderr matching WANT_ERE and no
# password of REDIS_GROUP in it; the config stays in $T/refused.conf
expect_refused() {
    local what=$1 prog pw
    sed "s|^redis = .*|redis = { $2 };|" "$CONF" >"$T/refused.conf"
    for prog in ${4:-producer ingress scale scanner}; do
        _start_rc "$prog" "$T/refused.conf"
        assert_eq "$START_RC" 78 "$what: $prog's exit status ($(head -c 300 "$T/refused.err"))"
        assert_eq "$(grep -c . "$T/refused.err")" 1 "$what: lines $prog printed on stderr ($(head -c 300 "$T/refused.err"))"
        assert_file_match "$T/refused.err" "$3" "$what: $prog's error"
        for pw in $(grep -o 'password = "[^"]*"' <<<"$2" | cut -d'"' -f2); do
            ! grep -qF -- "$pw" "$T/refused.err" || fail "$what: $prog printed a password"
        done
    done
}

# expect_unreachable WHAT REDIS_GROUP WANT_ERE [PROGRAMS]: as expect_refused,
# for a Redis that does not answer: REDIS_GROUP must set a short
# redis.retry_timeout_ms (RT), which each of PROGRAMS (default: producer
# ingress scale scanner) waits out before it gives up with status 1 (a
# restart may help), its last line on stderr matching WANT_ERE
expect_unreachable() {
    local what=$1 prog rt
    rt=$(sed -n 's/.*retry_timeout_ms = \([0-9]*\).*/\1/p' <<<"$2")
    [[ -n $rt ]] || fail "expect_unreachable $what: the group sets no retry_timeout_ms"
    sed "s|^redis = .*|redis = { $2 };|" "$CONF" >"$T/refused.conf"
    for prog in ${4:-producer ingress scale scanner}; do
        _start_rc "$prog" "$T/refused.conf"
        assert_eq "$START_RC" 1 "$what: $prog's exit status ($(head -c 300 "$T/refused.err"))"
        assert_ge "$START_MS" "$rt" "$what: ms $prog waited before it gave up (redis.retry_timeout_ms $rt)"
        assert_match "$(tail -n 1 "$T/refused.err")" "$3" "$what: $prog's last word"
    done
}

scanners_start() { # N: one scanner for each of shards 0..N-1
    local s
    for ((s = 0; s < $1; s++)); do scanner_start "$s"; done
}

_scanner_names() { # [SHARD]: the running scanners (of SHARD)
    local n
    for n in "${_NAMES[@]}"; do
        [[ $n == scanner-${1:-*} || $n == scanner-${1:-*}.* ]] || continue
        proc_alive "$n" && echo "$n"
    done
    return 0
}

# scanner_stop [SHARD]: SIGTERM to the running scanners (of SHARD); each must
# exit with status 0 within 10 s.
scanner_stop() {
    local n
    for n in $(_scanner_names "${1:-}"); do
        proc_stop "$n" 10
        [[ $PROC_RC == 0 ]] || fail "$n exited with status $PROC_RC after SIGTERM"
    done
}

scanner_kill9() { # [SHARD]
    local n
    for n in $(_scanner_names "${1:-}"); do proc_kill9 "$n"; done
}

# ---------------------------------------------------------------- scanner internals
# (added for the scanner guarantee tests, tests/integration/03NN-*.sh)

# metrics_config [SCANNER_KEYS]: write_config with the scanner serving its
# metrics on a free port, left in mp, and SCANNER_KEYS (e.g. "lease_ms =
# 2000;") beside poll_ms = 10
metrics_config() {
    free_port >/dev/null
    mp=$FREE_PORT
    SCANNER_CFG="poll_ms = 10; ${1:+$1 }metrics_port = $mp;"
    write_config
}

# listen_addrs PORT: the address of every socket listening on TCP PORT, one
# a line: a.b.c.d for IPv4, "ipv6" for any IPv6 one
listen_addrs() {
    local p h
    printf -v p '%04X' "$1"
    awk -v p="$p" 'NR > 1 && $4 == "0A" { split($2, a, ":"); if (a[2] == p) print a[1] }' /proc/net/tcp |
        while read -r h; do printf '%d.%d.%d.%d\n' "0x${h:6:2}" "0x${h:4:2}" "0x${h:2:2}" "0x${h:0:2}"; done
    awk -v p="$p" 'NR > 1 && $4 == "0A" { n = split($2, a, ":"); if (a[n] == p) print "ipv6" }' \
        /proc/net/tcp6 2>/dev/null
    return 0
}

# metrics_get PORT: the body of a scanner's GET /metrics on 127.0.0.1:PORT,
# read with bash's /dev/tcp (curl may be missing); fails the test unless a
# "200" answer arrives within 3 s.
metrics_get() {
    local out
    # The request goes out in one write(2) (cat of a file): bash's printf and
    # echo write line by line, and the endpoint answers the first read.
    [[ -s $T/.metrics-get ]] || printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >"$T/.metrics-get"
    out=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        cat "$2" >&3
        cat <&3' _ "$1" "$T/.metrics-get" 2>/dev/null) ||
        fail "metrics endpoint 127.0.0.1:$1 did not answer"
    [[ $out == HTTP/1.[01]\ 200* ]] || fail "metrics endpoint 127.0.0.1:$1 answered '${out:0:80}'"
    printf '%s\n' "${out#*$'\r\n\r\n'}"
}

# metric PORT NAME: the value of the first sample of lapse_scanner_NAME (any
# labels) on the scanner's metrics endpoint; fails the test when it is missing.
metric() {
    local v
    v=$(metrics_get "$1" | awk -v n="lapse_scanner_$2" '{ split($1, a, "{") } a[1] == n { print $2; exit }')
    [[ -n $v ]] || fail "metric lapse_scanner_$2 missing on 127.0.0.1:$1"
    echo "$v"
}

# shard_holder [SHARD]: the token of the scanner holding SHARD's lock (0),
# from `lapse-scale status --json` (.shard_info[].scanner); empty when none.
shard_holder() {
    local h
    h=$(scale status --json | jq -r --argjson s "${1:-0}" '.shard_info[] | select(.shard == $s) | .scanner // ""') ||
        fail "lapse-scale status --json failed"
    echo "$h"
}

# holder_pid [SHARD]: the pid in the holder's token (host:pid:random), or
# nothing when the lock is free.
holder_pid() {
    local h
    h=$(shard_holder "${1:-0}")
    [[ -z $h ]] && return 0
    h=${h%:*}
    echo "${h##*:}"
}

# proc_cpu_ms PID: user + system CPU time of PID (all its threads) so far, in ms
proc_cpu_ms() {
    local line rest
    read -r line </proc/"$1"/stat || fail "proc_cpu_ms: no process $1"
    rest=${line##*) }
    set -- $rest # state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    echo $(((${12} + ${13}) * 1000 / $(getconf CLK_TCK)))
}

# events_fired FILE [JQ_FILTER]: the fired_ms of every event in FILE (that
# the filter selects), sorted ascending
events_fired() {
    jq -R -r "fromjson? | select(${2:-true}) | .fired_ms" "$1" | sort -n
}

# config_kafka_props FILE 'PROPS': puts `properties = ( PROPS );` (librdkafka
# properties, e.g. '("linger.ms", 5)') into the kafka group of a config
# written by write_config.
config_kafka_props() {
    local f=$1
    grep -q '^kafka = { .* };$' "$f" || fail "config_kafka_props: no one-line kafka group in $f"
    sed -i "s|^kafka = { \(.*\) };\$|kafka = { \1 properties = ( ${2//|/\\|} ); };|" "$f"
}

# ---------------------------------------------------------------- ingress
# (lapse-producer --from-kafka; helpers added with the Kafka ingress)

# ingress.properties for tests, working around librdkafka 2.0.2's mock
# cluster: its group coordinator holds a new member's JoinGroup for about
# session.timeout.ms when the group had a member before (one that left
# cleanly as well as one killed), and evicts a member whose session is
# shorter than its 3 s first-join delay: 4 s keeps both a restart and the
# first join within a few seconds. Its Fetch also waits the whole
# fetch.wait.max.ms (default 500) even when data arrives meanwhile, which a
# real broker does not.
INGRESS_PROPS='("session.timeout.ms", 4000), ("heartbeat.interval.ms", 300), ("fetch.wait.max.ms", 10)'

# kafka_put TOPIC [lapse-kafka-put args...] < LINES: each line one message
# (key<TAB>value, or value alone); returns once all are acknowledged.
kafka_put() {
    local topic=$1
    shift
    "$LAPSE_BIN/lapse-kafka-put" -b "$KAFKA_BROKERS" -t "$topic" "$@" 2>>"$T/kafka-put.log" ||
        fail "lapse-kafka-put -t $topic failed: $(tail -n 1 "$T/kafka-put.log")"
}

# kafka_get TOPIC COUNT TIMEOUT_MS > FILE: the first COUNT messages of TOPIC
# as JSON lines (partition, offset, timestamp, key, value, headers);
# lapse-kafka-get's status (1 when fewer arrived in time).
kafka_get() {
    "$LAPSE_BIN/lapse-kafka-get" -b "$KAFKA_BROKERS" -t "$1" --count "$2" --timeout-ms "$3" \
        2>>"$T/kafka-get.log"
}

# kafka_committed TOPIC GROUP: "PARTITION COMMITTED HIGH" per partition
# (COMMITTED -1001 or -1 when the group committed nothing there).
kafka_committed() {
    "$LAPSE_BIN/lapse-kafka-get" -b "$KAFKA_BROKERS" -t "$1" --committed "$2" \
        --timeout-ms 5000 2>>"$T/kafka-get.log" || fail "cannot read the offsets $2 committed on $1"
}

# kafka_all_committed TOPIC GROUP: 0 when GROUP committed every partition
# of TOPIC up to its high watermark (an empty partition needs no commit).
kafka_all_committed() {
    local p c h
    while read -r p c h; do
        [[ $c == "$h" || $h == 0 ]] || return 1
    done < <(kafka_committed "$1" "$2")
}

# ingress_start [ARGS...]: lapse-producer -c CONF --from-kafka in the
# background; its process name (ingress, ingress.2, ...) is left in INGRESS.
ingress_start() {
    spawn ingress "$LAPSE_BIN/lapse-producer" -c "$CONF" --from-kafka "$@"
    INGRESS=$SPAWNED
}

# ingress_wait_assigned [NAME [TIMEOUT_MS]]: until NAME (default $INGRESS)
# logged that the group gave it partitions (the mock cluster's first
# rebalance takes 3 s; a rejoin after a crash waits for the dead member's
# session to time out).
ingress_wait_assigned() {
    local n=${1:-$INGRESS} to=${2:-20000}
    wait_until "$to" "! proc_alive $n || grep -qs 'partitions assigned' '$T/$n.log'" ||
        fail "$n: no partitions assigned within $to ms"
    proc_alive "$n" || fail "$n exited before it was assigned partitions"
}

# ingress_stop [NAME]: SIGTERM; it must exit 0 within 10 s.
ingress_stop() {
    local n=${1:-$INGRESS}
    proc_stop "$n" 10
    [[ $PROC_RC == 0 ]] || fail "$n exited with status $PROC_RC after SIGTERM"
}

# ns_count: how many IDs NS holds, over all shard zsets
ns_count() {
    rcli EVAL "local c = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
                   c = c + redis.call('ZCARD', k) end return c" 0 "$NS"
}

# ns_dump: "ID SCORE" for every ID of NS, sorted by ID
ns_dump() {
    rcli EVAL "local r = {} for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
                   local m = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
                   for i = 1, #m, 2 do r[#r + 1] = m[i] .. ' ' .. m[i + 1] end
               end return r" 0 "$NS" | LC_ALL=C sort
}
