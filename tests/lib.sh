# tests/lib.sh — sourced by every integration test (tests/integration/*.sh).
#
# Gives a test a private temp dir (its cwd), throwaway servers on 127.0.0.1
# (redis-server, lapse-kafka-dev), the lapse programs, and assertions.
#
# Invariants:
#  - every process a test starts goes through spawn() (or is a child of the
#    test shell) and is killed by the EXIT trap, also when the test fails or
#    is interrupted; tests/run additionally kills the test's process group;
#  - every wait is bounded (wait_until), so a broken program fails a test
#    instead of hanging it;
#  - a daemon that dies without the test asking (crash, sanitizer abort) and
#    any sanitizer report in a log fail the test, even if its checks passed;
#  - on failure the tails of all daemon logs are printed.
#
# Environment: LAPSE_BIN (default bin, relative to the repo root),
# LAPSE_TEST_DIR (set by tests/run; else a fresh mktemp dir),
# LAPSE_KEEP_TMP=1 keeps the temp dir of a failed test; LAPSE_TEST_TRACE=1
# traces the test's own lines with the time each starts (on the stderr the
# test started with, not into a 2>&1 the test captures: where a test spends
# its time; tests/profile sums it up).

set -euo pipefail

LAPSE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAPSE_BIN=${LAPSE_BIN:-bin}
[[ $LAPSE_BIN == /* ]] || LAPSE_BIN=$LAPSE_ROOT/$LAPSE_BIN
LAPSE_SCRIPTS=$LAPSE_ROOT/scripts
export LAPSE_BIN LAPSE_ROOT

NS=demo                # namespace written by write_config
TOPIC=lapse.timeouts   # event topic created by kafka_start
TEST_NAME=$(basename "$0" .sh)

if [[ -n ${LAPSE_TEST_DIR:-} ]]; then
    T=$LAPSE_TEST_DIR
    mkdir -p "$T"
else
    T=$(mktemp -d "${TMPDIR:-/tmp}/lapse-$TEST_NAME.XXXXXX")
fi
T=$(cd "$T" && pwd)
cd "$T"
CONF=$T/lapse.conf
KAFKA_BROKERS=127.0.0.1:1     # nothing listens there; kafka_start sets it
REDIS_PORT=                    # the first redis_start sets it
SCANNER_CFG="poll_ms = 10;"    # the scanner group of write_config

if [[ ${LAPSE_TEST_TRACE:-0} == 1 ]]; then
    PS4='+ $EPOCHREALTIME ${BASH_SOURCE[0]##*/}:$LINENO '
    exec {BASH_XTRACEFD}>&2
    set -x
fi

# ---------------------------------------------------------------- assertions

note() { echo "# $*"; }

fail() {
    echo "FAIL: $TEST_NAME: $*" >&2
    exit 1
}

assert_eq() { # GOT WANT [WHAT]
    [[ $1 == "$2" ]] || fail "${3:-value}: got '$1', want '$2'"
}

assert_ne() { # GOT UNWANTED [WHAT]
    [[ $1 != "$2" ]] || fail "${3:-value}: got '$1', which it must not be"
}

_int() { [[ $1 =~ ^-?[0-9]+$ ]] || fail "${2:-value}: '$1' is not an integer"; }

assert_le() { # A B [WHAT]: A <= B (integers)
    _int "$1" "${3:-}"; _int "$2" "${3:-}"
    (($1 <= $2)) || fail "${3:-value}: $1 is not <= $2"
}

assert_ge() { # A B [WHAT]: A >= B (integers)
    _int "$1" "${3:-}"; _int "$2" "${3:-}"
    (($1 >= $2)) || fail "${3:-value}: $1 is not >= $2"
}

assert_match() { # STRING ERE [WHAT]
    [[ $1 =~ $2 ]] || fail "${3:-value}: '$1' does not match /$2/"
}

assert_file_match() { # FILE ERE [WHAT]: some line of FILE matches
    grep -qE -- "$2" "$1" || {
        echo "---- $1:" >&2
        head -c 4000 "$1" >&2
        fail "${3:-$(basename "$1")}: no line matches /$2/"
    }
}

# ---------------------------------------------------------------- time, waits

local_ms() { # the local wall clock in ms (use now_ms for the shard clock)
    local t=${EPOCHREALTIME//[.,]/}
    echo $((10#$t / 1000))
}

# wait_until TIMEOUT_MS 'shell condition': evaluates the condition until it
# is true (return 0) or the time is up (return 1): every 20 ms for the first
# second, then every 100 ms (a long wait's checks, often jq over a growing
# events file, would otherwise take a core from the tests running beside it).
wait_until() {
    local _wu_now _wu_start _wu_end
    _wu_start=$(local_ms)
    _wu_end=$((_wu_start + $1))
    while :; do
        if eval "$2"; then return 0; fi
        _wu_now=$(local_ms)
        ((_wu_now < _wu_end)) || return 1
        if ((_wu_now - _wu_start < 1000)); then sleep 0.02; else sleep 0.1; fi
    done
}

# sleep until the shard clock reads at least MS
sleep_until_ms() {
    local now
    now=$(now_ms)
    while ((now < $1)); do
        sleep "$(printf '0.%03d' $((($1 - now) > 999 ? 999 : $1 - now)))"
        now=$(now_ms)
    done
}

# ---------------------------------------------------------------- processes

declare -A _PID=() _WATCH=()
_NAMES=()
SPAWNED=

_pid_alive() { # PID: running (not gone, not a zombie)
    local s
    read -r s 2>/dev/null </proc/"$1"/stat || return 1
    s=${s##*) }
    [[ ${s:0:1} != Z ]]
}

# spawn NAME CMD [ARGS...]: starts CMD in the background; stdin from
# $SPAWN_STDIN (default /dev/null), stdout to $SPAWN_OUT (default
# $T/NAME.log), stderr to $T/NAME.log. The name actually used (NAME, or
# NAME.2, ... when taken) is left in SPAWNED. The process is watched: if it
# dies before proc_stop/proc_kill9, the test fails.
spawn() {
    local name=$1 n=$1 i=2
    shift
    while [[ -n ${_PID[$n]:-} ]]; do n=$name.$((i++)); done
    local in=${SPAWN_STDIN:-/dev/null} out=${SPAWN_OUT:-$T/$n.log}
    "$@" <"$in" >>"$out" 2>>"$T/$n.log" &
    _PID[$n]=$!
    _WATCH[$n]=${SPAWN_WATCH:-1}
    _NAMES+=("$n")
    SPAWNED=$n
}

proc_pid() { echo "${_PID[$1]:?no process named $1}"; }

proc_alive() { _pid_alive "${_PID[$1]:?no process named $1}"; }

# proc_stop NAME [TIMEOUT_S [SIGNAL]]: sends SIGNAL (TERM) and waits for the
# exit. Sets PROC_RC (exit status, 128+n for a signal) and PROC_MS (how long
# the exit took). Fails the test if it is still running after TIMEOUT_S (10).
proc_stop() {
    local n=$1 to=${2:-10} sig=${3:-TERM} pid t0
    pid=${_PID[$n]:?no process named $n}
    _WATCH[$n]=0
    t0=$(local_ms)
    kill -s "$sig" "$pid" 2>/dev/null || true
    if ! wait_until $((to * 1000)) "! _pid_alive $pid"; then
        kill -KILL "$pid" 2>/dev/null || true
        fail "$n (pid $pid) still running ${to} s after SIG$sig"
    fi
    PROC_MS=$(($(local_ms) - t0))
    PROC_RC=0
    wait "$pid" 2>/dev/null || PROC_RC=$?
}

proc_kill9() { # NAME
    local pid=${_PID[$1]:?no process named $1}
    _WATCH[$1]=0
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

_proc_table() { # fills _PPID[pid] and _PGRP[pid] for every process
    local f line pid rest
    _PPID=() _PGRP=()
    for f in /proc/[0-9]*/stat; do
        read -r line 2>/dev/null <"$f" || continue
        pid=${line%% *}
        rest=${line##*) }
        set -- $rest
        _PPID[$pid]=$2
        _PGRP[$pid]=$3
    done
}
declare -A _PPID=() _PGRP=()

_descendants() { # PID: prints every live descendant
    local -a todo=("$1")
    local p c
    _proc_table
    while ((${#todo[@]})); do
        p=${todo[0]}
        todo=("${todo[@]:1}")
        for c in "${!_PPID[@]}"; do
            if [[ ${_PPID[$c]} == "$p" && $c != "$BASHPID" ]]; then
                echo "$c"
                todo+=("$c")
            fi
        done
    done
}

_dump_logs() {
    local f
    for f in "$T"/*.log "$T"/*.out "$T"/*.err; do
        [[ -s $f ]] || continue
        if [[ $f == */redis-* ]]; then # the start-up banner says little
            echo "---- $(basename "$f") (last 6 lines)"
            tail -n 6 "$f" | cut -c1-300
        else
            echo "---- $(basename "$f") (last 40 lines)"
            tail -n 40 "$f" | cut -c1-400
        fi
    done
}

_cleanup() {
    local rc=$? n pid f
    trap - EXIT
    trap '' TERM INT HUP
    set +e

    # (After a signal, everything in the process group got it too.)
    [[ -z $_SIGNALLED ]] || echo "FAIL: $TEST_NAME: interrupted by SIG$_SIGNALLED" >&2
    [[ -n $_SIGNALLED ]] || for n in "${_NAMES[@]}"; do
        if [[ ${_WATCH[$n]} == 1 ]] && ! _pid_alive "${_PID[$n]}"; then
            wait "${_PID[$n]}" 2>/dev/null
            echo "FAIL: $TEST_NAME: $n (pid ${_PID[$n]}) died unexpectedly (status $?)" >&2
            rc=1
        fi
    done

    # Everything still running that this shell started, tracked or not.
    local -a pids=()
    for n in "${_NAMES[@]}"; do
        _pid_alive "${_PID[$n]}" && pids+=("${_PID[$n]}")
    done
    local -a desc
    mapfile -t desc < <(_descendants $$)
    pids+=("${desc[@]}")
    if ((${#pids[@]})); then
        kill -TERM "${pids[@]}" 2>/dev/null
        wait_until 3000 '_none_alive "${pids[@]}"' ||
            kill -KILL "${pids[@]}" 2>/dev/null
        for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
    fi

    # Sanitizer reports anywhere (also from programs that were killed or ran
    # in the foreground with their stderr in a file).
    f=$(grep -rlIE --exclude-dir='redis-*' \
        'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error: ' "$T" 2>/dev/null)
    if [[ -n $f ]]; then
        echo "FAIL: $TEST_NAME: sanitizer report in: $f" >&2
        grep -h -A 30 -E 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error: ' $f | head -n 80 >&2
        rc=1
    fi

    if ((rc != 0)); then
        _dump_logs >&2
    fi
    if ((rc != 0)) && [[ ${LAPSE_KEEP_TMP:-0} == 1 ]]; then
        echo "# kept $T" >&2
    elif [[ -n $T && $T != / ]]; then
        rm -rf "$T"
    fi
    exit "$rc"
}

_none_alive() {
    local p
    for p; do _pid_alive "$p" && return 1; done
    return 0
}

trap _cleanup EXIT
_SIGNALLED=
trap '_SIGNALLED=TERM; exit 143' TERM
trap '_SIGNALLED=INT; exit 130' INT
trap '_SIGNALLED=HUP; exit 129' HUP

# ---------------------------------------------------------------- ports

_PORTS_GIVEN=" "

# free_port: prints (and leaves in FREE_PORT) a TCP port in 20000-32767
# (below Linux's ephemeral range) that no socket uses now and that this test
# has not handed out before (call it without $(...) for that to hold).
free_port() {
    local i port hex
    for ((i = 0; i < 200; i++)); do
        port=$((20000 + RANDOM % 12768))
        [[ $_PORTS_GIVEN == *" $port "* ]] && continue
        printf -v hex ':%04X ' "$port"
        if ! grep -qF -- "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
            _PORTS_GIVEN+="$port "
            FREE_PORT=$port
            echo "$port"
            return 0
        fi
    done
    fail "free_port: no free port found"
}

# ---------------------------------------------------------------- redis

declare -A _REDIS_PORT=() _REDIS_ARGS=() _REDIS_PROC=()

# redis_start NAME [redis-server args...]: a redis-server on 127.0.0.1, data
# in $T/redis-NAME, no RDB snapshots, AOF off unless the args say
# `--appendonly yes`. The first one started is the test's redis: REDIS_PORT,
# used by rcli, now_ms and write_config.
redis_start() {
    local name=$1 attempt port
    shift
    for attempt in 1 2 3 4 5; do
        free_port >/dev/null
        port=$FREE_PORT
        if _redis_launch "$name" "$port" "$@"; then
            _REDIS_ARGS[$name]=
            (($# == 0)) || _REDIS_ARGS[$name]=$(printf '%q ' "$@") # (no args: no '' either)
            [[ -n $REDIS_PORT ]] || REDIS_PORT=$port
            return 0
        fi
    done
    fail "redis_start $name: could not start redis-server"
}

_redis_launch() { # NAME PORT ARGS...: 0 when it answers PING, 1 if the port was taken
    local name=$1 port=$2 dir=$T/redis-$1
    shift 2
    mkdir -p "$dir"
    # --repl-diskless-sync-delay 0: a replica's first sync starts at once
    # (Redis otherwise waits 5 s for more replicas to share the transfer)
    spawn "redis-$name" redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" \
        --save '' --appendonly no --daemonize no --logfile '' --repl-diskless-sync-delay 0 \
        "$@"
    local proc=$SPAWNED
    _REDIS_PROC[$name]=$proc
    _REDIS_PORT[$name]=$port
    if wait_until 10000 "! proc_alive $proc || [[ \$(redis-cli -h 127.0.0.1 -p $port ping 2>/dev/null) == PONG ]]" &&
        proc_alive "$proc"; then
        return 0
    fi
    _WATCH[$proc]=0
    if grep -q 'Address already in use' "$T/$proc.log"; then
        proc_kill9 "$proc"
        return 1
    fi
    proc_kill9 "$proc"
    tail -n 20 "$T/$proc.log" >&2
    fail "redis-server $name did not start"
}

redis_port() { echo "${_REDIS_PORT[${1:-main}]:?no redis named ${1:-main}}"; }

redis_stop() { # NAME: SIGTERM (an AOF is flushed), wait for the exit
    proc_stop "${_REDIS_PROC[$1]:?no redis named $1}" 20
}

redis_kill9() { # NAME
    proc_kill9 "${_REDIS_PROC[$1]:?no redis named $1}"
}

redis_restart() { # NAME: same port, dir and args (reloads its AOF)
    local name=$1 args
    eval "args=(${_REDIS_ARGS[$name]})"
    if proc_alive "${_REDIS_PROC[$name]}"; then redis_stop "$name"; fi
    _redis_launch "$name" "${_REDIS_PORT[$name]}" "${args[@]}" ||
        fail "redis_restart $name: port ${_REDIS_PORT[$name]} taken meanwhile"
}

# redis_replica_start PRIMARY NAME...: redis_start'ed replicas of redis
# PRIMARY (started together, so they sync together); returns once each
# one's link to the primary is up and the primary streams to it
redis_replica_start() {
    local p r
    p=$(redis_port "$1")
    for r in "${@:2}"; do redis_start "$r" --replicaof 127.0.0.1 "$p"; done
    for r in "${@:2}"; do
        wait_until 10000 "redis-cli -p $(redis_port "$r") INFO replication | grep -q 'master_link_status:up'" ||
            fail "replica $r did not connect to $1 within 10 s"
    done
    # ... and the primary streams to them: after a sync it waits for a
    # replica's first REPLCONF ACK (up to a second) before it sends writes,
    # so a WAIT right away could count it short. A write WAITed for by
    # every replica the primary has says the stream is on.
    wait_until 10000 "_primary_streams $p" ||
        fail "primary $1 does not stream to its replicas within 10 s"
}

# sentinels_start N MASTER PRIMARY [DOWN_MS]: N sentinels (sentinel-1..N, a
# quorum of N/2+1) monitoring redis PRIMARY as MASTER, declaring it down
# after DOWN_MS (default 1000) ms; returns once each knows the others and
# the replicas. Their "host:port" list, quoted for a config, is left in
# SENTINELS, their ports in SENTINEL_PORTS and process names in
# SENTINEL_NAMES. Each config names the others and PRIMARY's replicas
# (known-sentinel, known-replica, as Sentinel writes them itself), so they
# start settled instead of finding each other by hello messages every 2 s.
declare -a SENTINEL_PORTS=() SENTINEL_NAMES=()
SENTINELS=
sentinels_start() {
    local n=$1 master=$2 primary=$3 down=${4:-1000} i j port dir pp known=() ids=()
    pp=$(redis_port "$primary")
    SENTINEL_PORTS=() SENTINEL_NAMES=() SENTINELS=
    for ((i = 0; i < n; i++)); do
        free_port >/dev/null
        SENTINEL_PORTS+=("$FREE_PORT")
        ids+=("$(printf '%040x' $((0x5e0 + i)))")
    done
    mapfile -t known < <(redis-cli -p "$pp" INFO replication | tr -d '\r' |
        sed -n 's/^slave[0-9]*:ip=\([^,]*\),port=\([0-9]*\),.*/\1 \2/p')
    for ((i = 0; i < n; i++)); do
        port=${SENTINEL_PORTS[i]}
        dir=$T/sentinel-$((i + 1))
        mkdir -p "$dir"
        {
            printf '%s\n' "port $port" "bind 127.0.0.1" "dir $dir" "sentinel myid ${ids[i]}" \
                "sentinel monitor $master 127.0.0.1 $pp $((n / 2 + 1))" \
                "sentinel down-after-milliseconds $master $down" \
                "sentinel failover-timeout $master 10000" \
                "sentinel parallel-syncs $master 1"
            for ((j = 0; j < n; j++)); do
                ((j == i)) || echo "sentinel known-sentinel $master 127.0.0.1 ${SENTINEL_PORTS[j]} ${ids[j]}"
            done
            for j in "${known[@]}"; do echo "sentinel known-replica $master $j"; done
        } >"$dir/sentinel.conf"
        spawn "sentinel-$((i + 1))" redis-server "$dir/sentinel.conf" --sentinel --logfile ''
        SENTINEL_NAMES+=("$SPAWNED")
        SENTINELS+="${SENTINELS:+, }\"127.0.0.1:$port\""
    done
    for port in "${SENTINEL_PORTS[@]}"; do
        wait_until 10000 "[[ \$(redis-cli -p $port SENTINEL get-master-addr-by-name $master 2>/dev/null | tail -n 1) == $pp ]]" ||
            fail "the sentinel on port $port did not come up within 10 s"
    done
    wait_until 20000 "_sentinels_settled $master" ||
        fail "the sentinels did not find each other and the replicas within 20 s"
}

_sentinels_settled() { # MASTER: each sentinel sees the others and a replica
    local p others
    for p in "${SENTINEL_PORTS[@]}"; do
        others=$(redis-cli -p "$p" SENTINEL sentinels "$1" 2>/dev/null | grep -c '^name$')
        ((others == ${#SENTINEL_PORTS[@]} - 1)) || return 1
        [[ -n $(redis-cli -p "$p" SENTINEL replicas "$1" 2>/dev/null) ]] || return 1
    done
}

# sentinel_node: the Sentinel tests' node "lapse-a": primary a, replicas b
# and c, three sentinels (down after 1 s). From then on rcli and the sp_*
# look-ups follow the primary the sentinels name (during a failover the
# dead one, which refuses: waits go on).
sentinel_node() {
    redis_start a
    redis_replica_start a b c
    sentinels_start 3 lapse-a a 1000
    _sp_ports() { sentinel_primary lapse-a; }
    rcli() { redis-cli -h 127.0.0.1 -p "$(sentinel_primary lapse-a)" "$@" 2>/dev/null; }
}

# sentinel_config [REDIS_KEYS]: CONF (write_config's) reaches node lapse-a
# through its sentinels; REDIS_KEYS (libconfig text) go in the redis group
sentinel_config() {
    sed -i "s|^redis = .*|redis = { nodes = ( { sentinels = ( $SENTINELS ); master = \"lapse-a\"; } ); ${1:-} };|" "$CONF"
}

sentinel_primary() { # MASTER: the port the first sentinel names as the primary
    redis-cli -p "${SENTINEL_PORTS[0]}" SENTINEL get-master-addr-by-name "$1" | tail -n 1
}

# tls_mkcert NAME CA [SAN]: NAME.crt and NAME.key in the current dir,
# signed by CA (made before; self-signed when NAME = CA), SAN e.g.
# "IP:127.0.0.1" for a server
tls_mkcert() {
    openssl req -new -newkey rsa:2048 -nodes -keyout "$1.key" -subj "/CN=lapse-test-$1" \
        -out "$1.csr" 2>/dev/null || fail "openssl req $1"
    if [[ $1 == "$2" ]]; then
        printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign,cRLSign\n' >"$1.ext"
        openssl x509 -req -in "$1.csr" -signkey "$1.key" -days 2 -extfile "$1.ext" \
            -out "$1.crt" 2>/dev/null || fail "openssl x509 $1"
    else
        printf 'basicConstraints=CA:FALSE\n%s\n' "${3:+subjectAltName=$3}" >"$1.ext"
        openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 2 \
            -extfile "$1.ext" -out "$1.crt" 2>/dev/null || fail "openssl x509 $1"
    fi
}

rcli() { # redis-cli against the test's redis (raw output)
    redis-cli -h 127.0.0.1 -p "${REDIS_PORT:?no redis started}" "$@"
}

# now_ms: the shard clock (TIME of the test's redis), in ms
now_ms() {
    local -a t
    mapfile -t t < <(rcli TIME)
    [[ ${t[0]:-} =~ ^[0-9]+$ && ${t[1]:-} =~ ^[0-9]+$ ]] || fail "now_ms: redis TIME answered '${t[*]:-}'"
    echo $((t[0] * 1000 + 10#${t[1]} / 1000))
}

# id_where ID: prints "SHARD SCORE" for the shard zset of namespace NS that
# holds ID (shards taken from NS:layout), nothing when none does.
id_where() {
    rcli EVAL "
        local n = tonumber(redis.call('HGET', ARGV[1] .. ':layout', 'shards') or '0')
        local p = tonumber(redis.call('HGET', ARGV[1] .. ':layout', 'prev_shards') or '0')
        if p > n then n = p end
        for s = 0, n - 1 do
            local sc = redis.call('ZSCORE', ARGV[1] .. ':z:' .. s, ARGV[2])
            if sc then return s .. ' ' .. sc end
        end
        return ''" 0 "$NS" "$1"
}

id_score() { # ID: its score (deadline, or a lease ending in .5), or nothing
    local w
    w=$(id_where "$1")
    echo "${w#* }"
}

id_shard() { # ID: the shard zset holding it, or nothing
    local w
    w=$(id_where "$1")
    [[ -z $w ]] || echo "${w%% *}"
}

# inflight_of ID [SHARD]: the deadline being dispatched for ID, from its
# lease's record in f (common/lua/lib/inflight.lua), or nothing when the ID
# is not in flight (or its record is gone); SHARD: the ID's shard by default
inflight_of() {
    local s=${2:-$(id_shard "$1")}
    [[ -n $s ]] || return 0
    rcli EVAL "$(lua_source lib/inflight)
        local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
        if not s or not string.find(s, '.', 1, true) then return false end
        local d = inflight_deadline(KEYS[2], s, ARGV[1])
        return d and string.format('%d', d) or false" 2 "$NS:z:$s" "$NS:f:$s" "$1"
}

# inflight_ids SHARD: the IDs of SHARD in flight (leased: a fractional
# score), one per line
inflight_ids() {
    rcli EVAL "local out, all = {}, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
        for i = 1, #all, 2 do
            if string.find(all[i + 1], '.', 1, true) then out[#out + 1] = all[i] end
        end
        return out" 1 "$NS:z:$1"
}

# inflight_set SHARD LEASE ID DEADLINE [ID DEADLINE ...]: leases those IDs
# (score LEASE) and adds them to LEASE's record in f, in one call, as
# claim.lua or take.lua would (a record without its IDs is garbage to the
# next claim)
inflight_set() {
    local s=$1 lease=$2
    shift 2
    rcli EVAL "$(lua_source lib/inflight)
        for i = 2, #ARGV, 2 do redis.call('ZADD', KEYS[1], ARGV[1], ARGV[i]) end
        inflight_add(KEYS[2], ARGV[1], { unpack(ARGV, 2) })" 2 "$NS:z:$s" "$NS:f:$s" "$lease" "$@" >/dev/null
}

id_payload() { # ID: its stored payload (empty when none or not pending)
    local s
    s=$(id_shard "$1")
    [[ -z $s ]] || rcli HGET "$NS:p:$s" "$1"
}

# random_ops IDS COUNT > FILE: COUNT random touch/extend/repeat/cancel lines
# over IDS IDs (id-0..), absolute times an hour or more ahead (nothing fires),
# 40 % with payloads; for tests that compare one stream applied two ways
random_ops() {
    awk -v seed="$RANDOM" -v base="$(($(now_ms) + 3600000))" -v ids="$1" -v n="$2" 'BEGIN {
        srand(seed)
        split("touch extend extend repeat cancel touch", ops, " ")
        for (i = 0; i < n; i++) {
            op = ops[int(rand() * 6) + 1]; id = "id-" int(rand() * ids)
            t = sprintf("@%.0f", base + int(rand() * 50) * 1000)
            pl = rand() < 0.4 ? " pl-" i : ""
            if (op == "cancel") print "cancel " id
            else if (op == "repeat") print "repeat " id " " t " " (1000 + int(rand() * 3) * 1000) pl
            else print op " " id " " t pl
        }
        print "repeat id-0 @" base " 1000" # so that some ID surely ends repeating
    }'
}

# ns_records NS: every shard record of namespace NS (zsets, payloads, repeat
# records), one a line, sorted: two namespaces with equal output hold equal
# deadlines, payloads and repeats
ns_records() {
    local k
    for k in $(rcli --scan --pattern "$1:[zpr]:*" | sort); do
        case $k in
        *:z:*) rcli ZRANGE "$k" 0 -1 WITHSCORES | paste - - | sed "s|^|${k#"$1"} |" ;;
        *) rcli HGETALL "$k" | paste - - | sed "s|^|${k#"$1"} |" ;;
        esac
    done | sort
}

# ids_state ID...: "ID SCORE HAS_PAYLOAD" per ID (SCORE "-" when no shard
# holds it, HAS_PAYLOAD 0/1), one EVAL for all: a snapshot taken fast enough
# that deadlines do not pass while a loaded machine checks ID after ID
ids_state() {
    rcli EVAL "
        local n = tonumber(redis.call('HGET', ARGV[1] .. ':layout', 'shards') or '0')
        local p = tonumber(redis.call('HGET', ARGV[1] .. ':layout', 'prev_shards') or '0')
        if p > n then n = p end
        local out = {}
        for i = 2, #ARGV do
            local sc, pl = '-', 0
            for s = 0, n - 1 do
                sc = redis.call('ZSCORE', ARGV[1] .. ':z:' .. s, ARGV[i]) or sc
                pl = math.max(pl, redis.call('HEXISTS', ARGV[1] .. ':p:' .. s, ARGV[i]))
            end
            out[#out + 1] = ARGV[i] .. ' ' .. sc .. ' ' .. pl
        end
        return out" 0 "$NS" "$@"
}
id_has_payload() { # ID: 0 when a payload is stored for it in any shard
    local n
    n=$(rcli EVAL "
        for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':p:*')) do
            if redis.call('HEXISTS', k, ARGV[2]) == 1 then return 1 end
        end
        return 0" 0 "$NS" "$1")
    [[ $n == 1 ]]
}

# ns_data_keys: how many zsets, payload and in-flight hashes NS has left
ns_data_keys() {
    rcli EVAL "return #redis.call('KEYS', ARGV[1] .. ':[zpf]:*')" 0 "$NS"
}

# ns_wait_empty [TIMEOUT_MS]: waits until every ID of NS is gone from Redis
ns_wait_empty() {
    wait_until "${1:-5000}" '[[ $(ns_data_keys) == 0 ]]' || {
        rcli EVAL "local r = {} for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':[zpf]:*')) do
                       r[#r + 1] = k .. ' ' .. redis.call('TYPE', k).ok end return r" 0 "$NS" | head -20 >&2 || true
        fail "namespace $NS still holds data after delivery"
    }
}

is_lease() { [[ $1 == *.5 ]]; } # SCORE: a claimed ID's lease (claim + lease_ms + 0.5)

ns_leases() { # how many IDs of NS are claimed (score x.5) right now
    rcli EVAL "
        local c = 0
        for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
            local m = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
            for i = 2, #m, 2 do
                if string.sub(m[i], -2) == '.5' then c = c + 1 end
            end
        end
        return c" 0 "$NS"
}

# hash_shard ID N: the shard of ID among N by the documented hash
# (XXH64, seed 0), computed with xxhsum; nothing when xxhsum is missing.
hash_shard() {
    command -v xxhsum >/dev/null 2>&1 || return 0
    local h
    h=$(printf '%s' "$1" | xxhsum -H1 - | cut -d' ' -f1)
    [[ $h =~ ^[0-9a-f]{16}$ ]] || fail "xxhsum printed '$h'"
    echo $((16#${h:12:4} & ($2 - 1)))
}

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

scale() { # ARGS...: scripts/lapse-scale -c CONF
    "$LAPSE_SCRIPTS/lapse-scale" -c "$CONF" "$@"
}

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

# expect_refused WHAT REDIS_GROUP WANT_ERE [PROGRAMS]: with CONF's redis
# group replaced by REDIS_GROUP (libconfig text inside "redis = { ... };"),
# each of PROGRAMS (default: producer scale scanner) stops at start within
# 20 s, non-zero, with exactly one line on stderr matching WANT_ERE and no
# password of REDIS_GROUP in it; the config stays in $T/refused.conf
expect_refused() {
    local what=$1 rc prog
    sed "s|^redis = .*|redis = { $2 };|" "$CONF" >"$T/refused.conf"
    for prog in ${4:-producer scale scanner}; do
        rc=0
        case $prog in
        producer) timeout 20 "$LAPSE_BIN/lapse-producer" -c "$T/refused.conf" </dev/null >"$T/refused.out" 2>"$T/refused.err" || rc=$? ;;
        scale) timeout 20 "$LAPSE_SCRIPTS/lapse-scale" -c "$T/refused.conf" status >"$T/refused.out" 2>"$T/refused.err" || rc=$? ;;
        scanner) timeout 20 "$LAPSE_BIN/lapse-scanner" -c "$T/refused.conf" --shard 0 >"$T/refused.out" 2>"$T/refused.err" || rc=$? ;;
        esac
        ((rc != 0 && rc != 124)) || fail "$what: $prog's exit status $rc (want non-zero, within 20 s)"
        assert_eq "$(grep -c . "$T/refused.err")" 1 "$what: lines $prog printed on stderr ($(head -c 300 "$T/refused.err"))"
        assert_file_match "$T/refused.err" "$3" "$what: $prog's error"
        for pw in $(grep -o 'password = "[^"]*"' <<<"$2" | cut -d'"' -f2); do
            ! grep -qF -- "$pw" "$T/refused.err" || fail "$what: $prog printed a password"
        done
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

# ---------------------------------------------------------------- split helpers
# (added for the online split tests, tests/integration/05NN-*.sh)

SP_PORTS=() # every Redis node of the test, node 0 first; empty: just REDIS_PORT
declare -A SP_FD=() SP_MARK=()

_sp_ports() {
    if ((${#CLUSTER_NODES[@]})); then
        cluster_primaries
    elif ((${#SP_PORTS[@]})); then
        echo "${SP_PORTS[@]}"
    else
        echo "$REDIS_PORT"
    fi
}

sp_cli() { # PORT ARGS...: redis-cli against that node
    local port=$1
    shift
    redis-cli -h 127.0.0.1 -p "$port" "$@"
}

# sp_write_config [EXTRA]: write_config, with every node of SP_PORTS in
# redis.nodes and SP_REDIS_EXTRA (libconfig text) inside the redis group.
sp_write_config() {
    local nodes="" p
    for p in $(_sp_ports); do nodes+="${nodes:+, }{ host = \"127.0.0.1\"; port = $p; }"; done
    write_config "$CONF" "${1:-}"
    sed -i "s|^redis = .*|redis = { nodes = ( $nodes ); ${SP_REDIS_EXTRA:-} };|" "$CONF"
}

# sp_data_keys: how many z/p/f/r/m keys (zsets, payloads, in flight, repeat
# records, moved sets) of NS are left on all nodes
sp_data_keys() {
    local p n sum=0
    for p in $(_sp_ports); do
        n=$(sp_cli "$p" EVAL "return #redis.call('KEYS', ARGV[1] .. ':[zpfrm]:*')" 0 "$NS")
        _int "$n" "data keys on node $p"
        sum=$((sum + n))
    done
    echo "$sum"
}

sp_wait_no_data() { # [TIMEOUT_MS]: fails unless every data key of NS is gone
    wait_until "${1:-3000}" '[[ $(sp_data_keys) == 0 ]]' && return 0
    local p
    for p in $(_sp_ports); do
        sp_cli "$p" EVAL "local r = {} for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':[zpfrm]:*')) do
            r[#r + 1] = k .. ' ' .. redis.call('TYPE', k).ok end return r" 0 "$NS" | sed "s/^/node $p: /" | head -20 >&2
    done
    fail "namespace $NS still holds data keys"
}

# sp_where ID: "SHARD SCORE" for every shard zset of NS (on any node) that
# holds ID, one a line; nothing when none does
sp_where() {
    local p
    for p in $(_sp_ports); do
        sp_cli "$p" EVAL "local r = {}
            for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
                local s = redis.call('ZSCORE', k, ARGV[2])
                if s then r[#r + 1] = string.match(k, ':(%d+)}?$') .. ' ' .. s end
            end
            return r" 0 "$NS" "$1"
    done | sed '/^$/d' # (a node without it answers an empty line)
}

# sp_where_all ID...: "ID SHARD SCORE" for every (ID, shard zset of NS) that
# holds it, one EVAL per node: a snapshot of many IDs at one moment (calling
# sp_where per ID takes tens of ms each, long enough for IDs to fire meanwhile)
sp_where_all() {
    local p
    for p in $(_sp_ports); do
        sp_cli "$p" EVAL "local r = {}
            for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
                local sh = string.match(k, ':(%d+)}?$')
                for i = 2, #ARGV do
                    local s = redis.call('ZSCORE', k, ARGV[i])
                    if s then r[#r + 1] = ARGV[i] .. ' ' .. sh .. ' ' .. s end
                end
            end
            return r" 0 "$NS" "$@"
    done
}

sp_status() { # JQ_FILTER: applied to `lapse-scale status --json`
    local s
    s=$(scale status --json) || fail "lapse-scale status --json failed"
    jq -r "$1" <<<"$s"
}

# sp_start: the common start of a split test: redis "main", one broker,
# the config (SCANNER_CFG etc. as set before), `init 2`, scanners of shards 0
# and 1, and events followed into events.json. With SP_TWO_NODES=1 a second
# redis "two" is listed too and sp_split puts the new shards there: an ID's
# old and new shard are then on different servers and producers move twins
# with take, seed and drop; on one node apply.lua moves them itself
# (producer/send.c). A test can run both ways (e.g. 0551 runs 0550).
sp_start() {
    redis_start main
    kafka_start --brokers 1
    if [[ ${SP_TWO_NODES:-0} == 1 ]]; then
        redis_start two
        SP_PORTS=("$(redis_port main)")
        sp_write_config
        scale init 2 >/dev/null
        SP_PORTS+=("$(redis_port two)")
        sp_write_config
    else
        write_config
        scale init 2 >/dev/null
    fi
    scanner_start 0
    scanner_start 1
    events_follow events.json
}

sp_split() { # [ARGS...]: lapse-scale split, --to redis "two" with SP_TWO_NODES=1
    if [[ ${SP_TWO_NODES:-0} == 1 ]]; then
        scale split --to "127.0.0.1:$(redis_port two)" "$@"
    else
        scale split "$@"
    fi
}

shard_epoch() { # SHARD: the layout epoch the shard is fenced at (0 when never set)
    local e
    e=$(rcli GET "$NS:e:$1")
    echo "${e:-0}"
}

# lua_source SCRIPT: common/lua/SCRIPT.lua as lapse sends it to Redis
# (scripts/lua-source pastes in the shared helpers of common/lua/lib).
lua_source() {
    sh "$LAPSE_ROOT/scripts/lua-source" "$LAPSE_ROOT/common/lua/$1.lua"
}

# lapse_lua SCRIPT SHARD ARGS...: runs common/lua/SCRIPT.lua on SHARD's keys,
# as lapse calls it (for tests that take a step of the protocol by hand).
lapse_lua() {
    local script=$1 s=$2
    shift 2
    rcli EVAL "$(lua_source "$script")" 7 \
        "$NS:z:$s" "$NS:p:$s" "$NS:f:$s" "$NS:r:$s" "$NS:m:$s" "$NS:l:$s" "$NS:e:$s" "$@"
}

# sp_hashes IDS_FILE > OUT: "ID H" per line, H the low 16 bits of the ID's
# XXH64 (the shard among N <= 65536 is H & (N - 1)), one xxhsum run for all
sp_hashes() {
    command -v xxhsum >/dev/null 2>&1 || fail "xxhsum is needed"
    local d=$T/.sp-hash i=0 id
    rm -rf "$d"
    mkdir -p "$d"
    while read -r id; do
        printf '%s' "$id" >"$d/$i"
        i=$((i + 1))
    done <"$1"
    ((i > 0)) || return 0
    (cd "$d" && xxhsum -H1 $(seq 0 $((i - 1))) 2>/dev/null) | awk '{ print $2, $1 }' | sort -n |
        paste -d' ' "$1" - | while read -r id n h; do echo "$id $((16#${h:12:4}))"; done
}

# sp_producer NAME: a long-running lapse-producer -c CONF reading the FIFO
# $T/NAME.fifo (it keeps the layout it read in memory); feed it with sp_feed.
sp_producer() {
    local fd
    mkfifo "$T/$1.fifo"
    exec {fd}<>"$T/$1.fifo"
    SP_FD[$1]=$fd
    SP_MARK[$1]=0
    SPAWN_STDIN=$T/$1.fifo spawn "$1" "$LAPSE_BIN/lapse-producer" -c "$CONF"
}

# sp_feed NAME FILE: writes FILE's lines to producer NAME and returns once
# all of them are applied in Redis: a marker ID (mk.NAME.K, due in an hour)
# goes after them, and a second one only when the first is stored, in a
# later batch, so the second's arrival means the first's batch is complete.
# The previous marker is cancelled; sp_marker_cancels lists the last ones.
sp_feed() {
    local name=$1 file=$2 k fd=${SP_FD[$1]:?no producer $1}
    k=${SP_MARK[$name]}
    cat "$file" >&"$fd"
    for _ in 1 2; do
        ((k == 0)) || printf 'cancel mk.%s.%d\n' "$name" "$k" >&"$fd"
        k=$((k + 1))
        printf 'touch mk.%s.%d +3600000\n' "$name" "$k" >&"$fd"
        wait_until 10000 "[[ -n \$(sp_where mk.$name.$k) ]]" ||
            fail "producer $name did not apply its input within 10 s"
    done
    SP_MARK[$name]=$k
}

# sp_dead_split_fence: leaves what a split 2 -> 4 on one node that died right
# after its fence leaves behind: layout:next written (splitting, epoch + 1)
# and every shard fenced at the new epoch, the layout itself unchanged.
# The old epoch is left in epoch0.
sp_dead_split_fence() {
    local nodes n0 s
    epoch0=$(rcli HGET "$NS:layout" epoch)
    nodes=$(rcli HGET "$NS:layout" nodes)
    n0=${nodes%%,*}
    rcli HSET "$NS:layout:next" shards 4 prev_shards 2 epoch $((epoch0 + 1)) state splitting \
        nodes "$n0,$n0,$n0,$n0" >/dev/null
    for s in 0 1 2 3; do rcli SET "$NS:e:$s" $((epoch0 + 1)) >/dev/null; done
}

# sp_writes_after_split: the workload's writes once the split began: a new
# producer B (it reads the splitting layout) feeds b1.txt, the old producer
# A (it still has the old one) a1.txt, then B b2.txt. Leaves tA1 (local ms:
# A's first write began) and t1 (shard clock: all applied); fails when they
# ran into the first deadline, t0 + SP_LEAD_MS (t0: the caller's).
sp_writes_after_split() {
    sp_producer B
    sp_feed B b1.txt
    tA1=$(local_ms)
    sp_feed A a1.txt
    sp_feed B b2.txt
    t1=$(now_ms)
    local a=
    [[ -z ${tA:-} ]] || a="; A's first write after the split $((tA1 - tA)) ms after A started"
    note "writes done $((t1 - t0)) ms after t0$a"
    ((t1 < t0 + SP_LEAD_MS - 100)) ||
        fail "the writes took until t0 + $((t1 - t0)) ms: deadlines may have passed meanwhile (machine too slow)"
}

sp_marker_cancels() { # the cancel lines of every producer's last marker
    local n
    for n in "${!SP_MARK[@]}"; do
        ((SP_MARK[$n] == 0)) || printf 'cancel mk.%s.%d\n' "$n" "${SP_MARK[$n]}"
    done
}

# sp_workload T0 N SEED: writes the split workload over N IDs (s000...) to
# the current dir, with absolute deadlines in [T0+L, T0+L+S], L = SP_LEAD_MS,
# S = SP_SPREAD_MS (extends move some up to 1 s later)
#   pre.txt   every ID before the split: touch (most with a payload), or a
#             repeat (every 11th, deadline within T0+L..L+800)
#   b1.txt    after the split, by the new producer B: a touch of every ID of
#             the hand-over group (ID index / 11 % 3 == 0) ...
#   a1.txt    ... then the old producer A: the hand-over group's and its own
#             group's (1) operations
#   b2.txt    B's own group's (2) operations
# Operations by index % 11: untouched; touch with payload; extend later;
# extend earlier (no effect); cancel; touch without payload (keeps it);
# cancel + touch; touch + extend earlier; extend later + extend earlier;
# repeat; and for the IDs repeating since pre.txt: untouched or touch.
#   expect.tsv  per ID: id, kind (once|none|repeat), deadline, payload ("-":
#             none), period, written after the split (0/1)
SP_LEAD_MS=4000 # sp_workload's earliest deadline after T0: the writes must be done by then
SP_SPREAD_MS=2000 # how long after that its deadlines go on falling due

sp_workload() {
    awk -v t0="$1" -v n="$2" -v seed="$3" -v lead="$SP_LEAD_MS" -v spread="$SP_SPREAD_MS" '
    function r(lo, hi) { return lo + int(rand() * (hi - lo + 1)) }
    function ms(d) { return sprintf("%.0f", d) }
    function op(file, o, id, d, per, pl,   line) {
        if (o == "cancel") { alive[id] = 0; pay[id] = "-"; period[id] = 0; line = "cancel " id }
        else if (o == "touch" || o == "repeat" || (o == "extend" && (!alive[id] || d > dl[id]))) {
            alive[id] = 1; dl[id] = d; period[id] = (o == "repeat") ? per : 0
            if (pl != "") pay[id] = pl
        }
        if (o == "touch" || o == "extend") line = o " " id " @" ms(d) (pl != "" ? " " pl : "")
        if (o == "repeat") line = "repeat " id " @" ms(d) " " per (pl != "" ? " " pl : "")
        print line > file
        if (file != "pre.txt") written[id] = 1
    }
    BEGIN {
        srand(seed); LO = t0 + lead; HI = t0 + lead + spread
        for (i = 0; i < n; i++) {
            id = sprintf("s%03d", i); c = i % 11; w = int(i / 11) % 3
            pay[id] = "-"; alive[id] = 0; written[id] = 0
            if (c == 10) op("pre.txt", "repeat", id, r(LO, LO + 800), r(700, 1000), "r0-" i)
            else op("pre.txt", "touch", id, r(LO, HI), 0, i % 3 == 2 ? "" : "p0-" i)
            f = w == 2 ? "b2.txt" : "a1.txt"
            if (w == 0) op("b1.txt", "touch", id, r(LO, HI), 0, i % 2 ? "ph-" i : "")
            if (c == 1) op(f, "touch", id, r(LO, HI), 0, "p1-" i)
            if (c == 2) op(f, "extend", id, dl[id] + r(200, 1000), 0, "")
            if (c == 3) op(f, "extend", id, dl[id] - r(100, 800), 0, "x3-" i)
            if (c == 4) op(f, "cancel", id)
            if (c == 5) op(f, "touch", id, r(LO, HI), 0, "")
            if (c == 6) { op(f, "cancel", id); op(f, "touch", id, r(LO, HI), 0, "p6-" i) }
            if (c == 7) { op(f, "touch", id, r(LO + 300, HI), 0, "p7-" i); op(f, "extend", id, dl[id] - 300, 0, "x7-" i) }
            if (c == 8) { op(f, "extend", id, dl[id] + 500, 0, ""); op(f, "extend", id, dl[id] - 200, 0, "x8-" i) }
            if (c == 9) op(f, "repeat", id, r(LO, LO + 800), r(700, 1000), "p9-" i)
            if (c == 10 && int(i / 33) % 2) op(f, "touch", id, r(LO, HI), 0, "")
            printf "%s\t%s\t%.0f\t%s\t%d\t%d\n", id, !alive[id] ? "none" : period[id] ? "repeat" : "once",
                dl[id], pay[id], period[id], written[id] > "expect.tsv"
        }
        printf "" > "b1.txt"; printf "" > "a1.txt"; printf "" > "b2.txt"
    }'
}

# sp_events_tsv EVENTS: id, deadline_ms, fired_ms, shard, payload ("-":
# none), seq (0: none) of every event, tab-separated
sp_events_tsv() {
    jq -R -r 'fromjson? | [.id, .deadline_ms, .fired_ms, .shard, (.payload // "-"), (.seq // 0)] | @tsv' "$1"
}

_sp_left() { # EVENTS EXPECT: how many IDs sp_wait_delivered still waits for
    sp_events_tsv "$1" | awk -F'\t' 'FILENAME == "-" { n[$1]++; next }
        $2 == "once" && !n[$1] || $2 == "repeat" && n[$1] < 2 { left++ }
        END { print left + 0 }' - "$2"
}

# sp_due_last EXPECT: when (Redis clock, ms) the last fire sp_wait_delivered
# waits for falls due: a "once" ID's deadline, a "repeat" ID's second fire
sp_due_last() {
    awk -F'\t' '$2 == "once" { d = $3 } $2 == "repeat" { d = $3 + $5 }
        $2 != "none" && d > m { m = d } END { printf "%.0f\n", m }' "$1"
}

# How late an event may fire after its deadline, in ms, for sp_wait_delivered
# and sp_check: the lease (scanner.lease_ms, 5000 unless a test sets less),
# after which an ID a killed scanner had claimed, or a twin a dead producer
# had taken, is claimed again, plus 1 s for that claim and its Kafka round
# trip on a loaded machine. Anything later is a defect, not slowness.
SP_LATE_MS=6000

# sp_wait_delivered EVENTS EXPECT: waits until every "once" ID of EXPECT
# fired and every "repeat" ID fired at least twice; fails if that has not
# happened SP_LATE_MS after the last of them fell due (sp_due_last): the
# window follows the workload's deadlines, whenever the test gets here
sp_wait_delivered() {
    local left _sw_ev=$1 _sw_ex=$2 wait_ms
    wait_ms=$(($(sp_due_last "$2") + SP_LATE_MS - $(now_ms)))
    ((wait_ms > 0)) || wait_ms=0
    wait_until "$wait_ms" '[[ $(_sp_left "$_sw_ev" "$_sw_ex") == 0 ]]' && return 0
    left=$(_sp_left "$1" "$2")
    sp_events_tsv "$1" | awk -F'\t' 'FILENAME == "-" { n[$1]++; e[$1] = e[$1] " / " $2 " " $5 " " $6; next }
        $2 == "once" && !n[$1] || $2 == "repeat" && n[$1] < 2 { print "missing: " $0 " -- events:" e[$1] }' - "$2" | head -n 10 >&2
    fail "$left IDs of $(wc -l <"$2") not delivered (repeats: twice) within $SP_LATE_MS ms of the last deadline"
}

# sp_end_repeats: the workload's end: cancels every repeating ID of
# expect.tsv and each producer's last marker, so nothing is left to fire
sp_end_repeats() {
    {
        awk -F'\t' '$2 == "repeat" { print "cancel " $1 }' expect.tsv
        sp_marker_cancels
    } | produce || fail "cancelling the repeats: exit status $?"
}

# sp_finish SHARDS EPOCH: once no ID is left to move, `lapse-scale finish`;
# the layout is then stable with SHARDS shards at EPOCH
sp_finish() {
    wait_until 5000 '[[ $(sp_status .to_move) == 0 ]]' ||
        fail "moving IDs still in old shards: $(scale status)"
    scale finish >finish.out 2>finish.err || fail "finish: exit status $?: $(cat finish.err)"
    assert_eq "$(sp_status '[.state, .shards, .prev_shards, .epoch] | @tsv' | tr '\t' ' ')" \
        "stable $1 $1 $2" "state, shards, prev_shards, epoch after finish"
}

# sp_stop_producers NAME...: stops each long-running producer; each exits 0
sp_stop_producers() {
    local p
    for p in "$@"; do
        proc_stop "$p" 10
        assert_eq "$PROC_RC" 0 "producer $p's exit status"
    done
}

# sp_final_check OLD_N NEW_N [DUP_SHARD DUP_BEFORE_MS]: the end of a
# workload test: no data key left, a moment for a wrong extra fire to show,
# then sp_check of events.json against expect.tsv and hashes.txt, and
# nothing early
sp_final_check() {
    sp_wait_no_data 5000
    sleep 0.5 # let a wrong extra fire show
    events_follow_stop
    sp_check events.json expect.tsv hashes.txt "$@"
    assert_never_early events.json
}

# sp_check EVENTS EXPECT HASHES OLD_N NEW_N [DUP_SHARD DUP_BEFORE_MS]:
# compares the events with expect.tsv (sp_workload): a "once" ID fired
# exactly once, with its deadline and payload, without seq, from its new
# shard if it was written after the split, else from its old one, at most
# SP_LATE_MS after its deadline; a "none" ID never; a "repeat" ID fired with seq 1, 2, ... n (n >= 2, each once) on
# its period's grid from its deadline, with its payload, from its old or new
# shard; no event is early and no other ID fired. Duplicates are allowed
# only for IDs whose every event came from DUP_SHARD ("*": any shard) and
# whose first event was fired by DUP_BEFORE_MS (the events a killed scanner
# had in flight, or acks a failed Redis primary had not passed on).
sp_check() {
    local bad
    note "latest event: $(sp_events_tsv "$1" | awk -F'\t' '$3 - $2 > m { m = $3 - $2 } END { print m + 0 }') ms after its deadline"
    bad=$(sp_events_tsv "$1" | awk -F'\t' -v old="$4" -v new="$5" -v dshard="${6:--1}" -v dbefore="${7:-0}" -v late="$SP_LATE_MS" '
        FILENAME == ARGV[1] { split($0, a, " "); h[a[1]] = a[2]; next }
        FILENAME == ARGV[2] { kind[$1] = $2; dl[$1] = $3; pl[$1] = $4; per[$1] = $5; wr[$1] = $6; next }
        {
            k = ++cnt[$1]; ev[$1, k] = $0
            if (!($1 in kind)) { print "unexpected event: " $0; next }
            if ($3 < $2) print "early: " $0
            if ($3 - $2 > late) print "late: fired " $3 - $2 " ms after its deadline: " $0
            if (!($1 in first) || $3 < first[$1]) first[$1] = $3
            if (dshard != "*" && $4 != dshard) notdup[$1] = 1
        }
        END {
            for (id in kind) {
                n = cnt[id] + 0; o = h[id] % old; nw = h[id] % new
                dupok = n > 1 && !notdup[id] && first[id] <= dbefore
                if (kind[id] == "none") { if (n) print id ": cancelled, fired " n " times: " ev[id, 1]; continue }
                if (kind[id] == "once") {
                    if (n == 0) { print id ": never fired (want deadline " dl[id] ")"; continue }
                    if (n > 1 && !dupok) print id ": fired " n " times: " ev[id, 1] " / " ev[id, 2]
                    want = wr[id] ? nw : o
                    for (k = 1; k <= n; k++) {
                        split(ev[id, k], e, "\t")
                        if (e[2] != dl[id]) print id ": deadline " e[2] ", want " dl[id]
                        if (e[5] != pl[id]) print id ": payload " e[5] ", want " pl[id]
                        if (e[6] != 0) print id ": one-shot fired with seq " e[6]
                        if (e[4] != want) print id ": fired from shard " e[4] ", want " want " (written after the split: " wr[id] ")"
                    }
                    continue
                }
                delete seen
                maxseq = 0
                for (k = 1; k <= n; k++) {
                    split(ev[id, k], e, "\t")
                    s = e[6]
                    if (s in seen && !dupok) print id ": seq " s " fired twice"
                    if (s in seen && seen[s] != e[2]) print id ": seq " s " fired with deadlines " seen[s] " and " e[2]
                    seen[s] = e[2]
                    if (s > maxseq) maxseq = s
                    if (e[5] != pl[id]) print id ": payload " e[5] ", want " pl[id]
                    if (e[4] != o && e[4] != nw) print id ": fired from shard " e[4] ", want " o " or " nw
                    if ((e[2] - dl[id]) % per[id] != 0 || e[2] < dl[id]) print id ": deadline " e[2] " is off the grid " dl[id] " + k * " per[id]
                }
                if (maxseq < 2) print id ": repeat fired " n " times (max seq " maxseq "), want at least 2"
                for (s = 1; s <= maxseq; s++) {
                    if (!(s in seen)) print id ": seq " s " missing (max " maxseq ")"
                    else if (s == 1 && seen[s] != dl[id]) print id ": seq 1 with deadline " seen[s] ", want " dl[id]
                    else if (s > 1 && (s - 1) in seen && seen[s] <= seen[s - 1]) print id ": seq " s "\047s deadline " seen[s] " is not after seq " (s - 1) "\047s " seen[s - 1]
                }
            }
        }' "$3" "$2" -)
    [[ -z $bad ]] && return 0
    echo "$bad" | head -n 30 >&2
    fail "$(wc -l <<<"$bad") problems with the delivered events (first 30 above)"
}

# ---------------------------------------------------------------- Redis Cluster
# (tests/integration/09NN-cluster-*.sh). A cluster's nodes are redis_start'ed
# as c1, c2, ... with --cluster-enabled; the sp_* helpers then read every
# current primary (cluster_primaries), where a shard's keys are
# NS:K:{NS:I} (redis.cluster: one slot per shard).

CLUSTER_NODES=()             # names of the cluster's nodes, c1 first
CLUSTER_TIMEOUT_MS=${CLUSTER_TIMEOUT_MS:-2000} # cluster-node-timeout: how soon a failover starts

# cluster_node_start NAME: one more cluster-enabled redis (not yet joined)
cluster_node_start() {
    redis_start "$1" --cluster-enabled yes --cluster-config-file nodes.conf \
        --cluster-node-timeout "$CLUSTER_TIMEOUT_MS" "${@:2}"
    CLUSTER_NODES+=("$1")
}

# cluster_start PRIMARIES [REPLICAS]: a Redis Cluster of PRIMARIES primaries
# (c1..), each with REPLICAS replicas (the next nodes, dealt out in turn),
# the slots split evenly, every node agreeing (cluster_wait_ok). REDIS_PORT
# is c1's. Built by hand as redis-cli --cluster create would (slots, config
# epochs, MEET, REPLICATE), without its 1 s polls while the nodes meet.
cluster_start() {
    local np=$1 nr=${2:-0} i n ports=() out
    n=$((np * (1 + nr)))
    for ((i = 1; i <= n; i++)); do
        cluster_node_start "c$i"
        ports+=("$(redis_port "c$i")")
    done
    for ((i = 0; i < np; i++)); do
        out=$(redis-cli -p "${ports[i]}" CLUSTER ADDSLOTSRANGE $((16384 * i / np)) $((16384 * (i + 1) / np - 1)))
        out+=$(redis-cli -p "${ports[i]}" CLUSTER SET-CONFIG-EPOCH $((i + 1)))
        [[ $out == OKOK ]] || fail "cluster node c$((i + 1)): slots and epoch: $out"
    done
    for ((i = 1; i < n; i++)); do
        out=$(redis-cli -p "${ports[i]}" CLUSTER MEET 127.0.0.1 "${ports[0]}")
        [[ $out == OK ]] || fail "cluster node c$((i + 1)): MEET: $out"
    done
    wait_until 20000 "_cluster_all_know $n" || fail "the cluster's $n nodes did not all meet within 20 s"
    for ((i = np; i < n; i++)); do
        out=$(redis-cli -p "${ports[i]}" CLUSTER REPLICATE "$(cluster_id "${ports[(i - np) % np]}")")
        [[ $out == OK ]] || fail "cluster node c$((i + 1)): REPLICATE: $out"
    done
    cluster_wait_ok 20000
}
_cluster_all_know() { # N: every node knows N nodes
    local c
    for c in "${CLUSTER_NODES[@]}"; do
        [[ $(redis-cli -p "$(redis_port "$c")" CLUSTER INFO | tr -d '\r') == *cluster_known_nodes:$1* ]] || return 1
    done
}

# cluster_wait_ok [TIMEOUT_MS]: every live node says cluster_state:ok with
# all 16384 slots served, and every live replica is in sync with its primary
cluster_wait_ok() {
    wait_until "${1:-20000}" _cluster_ok || {
        local c
        for c in "${CLUSTER_NODES[@]}"; do
            proc_alive "${_REDIS_PROC[$c]}" || continue
            echo "$c: $(redis-cli -p "$(redis_port "$c")" CLUSTER INFO | tr -d '\r' | grep -E 'state|slots_ok|known' | tr '\n' ' ')" >&2
        done
        fail "the cluster did not settle"
    }
}
_cluster_ok() {
    local c alive=0 info
    for c in "${CLUSTER_NODES[@]}"; do proc_alive "${_REDIS_PROC[$c]}" && alive=$((alive + 1)); done
    for c in "${CLUSTER_NODES[@]}"; do
        proc_alive "${_REDIS_PROC[$c]}" || continue
        info=$(redis-cli -p "$(redis_port "$c")" CLUSTER INFO 2>/dev/null | tr -d '\r')
        [[ $info == *cluster_state:ok* && $info == *cluster_slots_ok:16384* ]] || return 1
        # a replica has its primary's data, and its primary streams to it
        # (WAIT can count it: _primary_streams)
        info=$(redis-cli -p "$(redis_port "$c")" INFO replication 2>/dev/null | tr -d '\r')
        [[ $info == *role:master* || $info == *master_link_status:up* ]] || return 1
        [[ $info != *role:master* ]] || _primary_streams "$(redis_port "$c")" || return 1
    done
    return 0
}
# _primary_streams PORT: every replica of the primary on PORT acknowledges
# a write (on a cluster node: of a key of one of its slots, not MOVED)
_primary_streams() {
    local n i out
    n=$(redis-cli -p "$1" INFO replication | tr -d '\r' | sed -n 's/^connected_slaves://p')
    ((${n:-0} == 0)) && return 0
    for ((i = 0; i < 64; i++)); do # a key of a slot this primary serves (not MOVED)
        out=$(printf 'INCR lapse-test:sync:%d\nWAIT %d 500\n' "$i" "$n" | redis-cli -p "$1" 2>&1)
        [[ ${out%%$'\n'*} =~ ^[0-9]+$ ]] || continue
        (($(tail -n 1 <<<"$out") >= n))
        return
    done
    return 1
}

# cluster_primaries: the ports of the live nodes that are primaries now
# (a node that does not answer within 2 s is left out)
cluster_primaries() {
    local c p
    for c in "${CLUSTER_NODES[@]}"; do
        proc_alive "${_REDIS_PROC[$c]}" || continue
        p=$(redis_port "$c")
        # (a stopped node, SIGSTOP, does not answer: not a primary to use)
        [[ $(timeout 2 redis-cli -p "$p" ROLE 2>/dev/null | head -n 1) == master ]] && echo "$p"
    done
    return 0
}

# cluster_node_of PORT: the name (c1, ...) of the node on PORT
cluster_node_of() {
    local c
    for c in "${CLUSTER_NODES[@]}"; do [[ $(redis_port "$c") == "$1" ]] && echo "$c" && return 0; done
    fail "no cluster node on port $1"
}

# cluster_id PORT: the cluster node ID of the node on PORT
cluster_id() { redis-cli -p "$1" CLUSTER MYID; }

# cluster_config [EXTRA]: write_config with redis.cluster naming every node
# started so far as a seed, and CLUSTER_REDIS_EXTRA inside the redis group
cluster_config() {
    local seeds="" c
    for c in "${CLUSTER_NODES[@]}"; do seeds+="${seeds:+, }\"127.0.0.1:$(redis_port "$c")\""; done
    write_config "$CONF" "${1:-}"
    sed -i "s|^redis = .*|redis = { cluster = ( $seeds ); ${CLUSTER_REDIS_EXTRA:-} };|" "$CONF"
}

# cluster_serve SHARDS: lapse on the cluster: a one-broker Kafka, CONF
# (cluster_config, CLUSTER_REDIS_EXTRA as set), SHARDS shards with a
# scanner each, and their events followed into events.json
cluster_serve() {
    local s
    kafka_start --brokers 1
    cluster_config
    scale init "$1" >/dev/null || fail "init: exit status $?"
    for ((s = 0; s < $1; s++)); do scanner_start "$s"; done
    events_follow events.json
}

# cluster_busiest_primary N: the port of the primary serving the most of
# shards 0..N-1 (ties: any of them)
cluster_busiest_primary() {
    local s p
    declare -A count=()
    for ((s = 0; s < $1; s++)); do
        p=$(cluster_shard_port "$s")
        count[$p]=$((${count[$p]:-0} + 1))
    done
    for p in "${!count[@]}"; do echo "${count[$p]} $p"; done | sort -rn | head -n 1 | cut -d' ' -f2
}

# cluster_workload SEED FIRST_FIRE_MS: the workload of the tests that move
# slots under load: sp_workload over 300 IDs from t0 (set here: now) with
# SP_LEAD_MS as the caller set it, and 200 more IDs (f000..) falling due
# every 25 ms from t0 + FIRST_FIRE_MS, to fire while slots move; ids.txt,
# hashes.txt, expect.tsv; producer A started and fed pre.txt.
cluster_workload() {
    local i
    { seq -f 's%03g' 0 299; seq -f 'f%03g' 0 199; echo mk.A.2; } >ids.txt
    sp_hashes ids.txt >hashes.txt
    t0=$(now_ms)
    sp_workload "$t0" 300 "$1"
    for ((i = 0; i < 200; i++)); do
        printf 'f%03d\tonce\t%d\t-\t0\t0\n' "$i" $((t0 + $2 + i * 25)) >>expect.tsv
        printf 'touch f%03d @%d\n' "$i" $((t0 + $2 + i * 25)) >>pre.txt
    done
    sp_producer A
    sp_feed A pre.txt
}

# cluster_replay_while PROC: feeds producer A the workload's later writes
# (b1.txt, a1.txt, b2.txt of sp_workload) again and again while process
# PROC (a reshard, a rebalance) runs, each round followed by a status that
# must answer. Replaying them ends in the same state, as long as nothing
# has fallen due: it stops 3 s before t0 + SP_LEAD_MS (t0: the caller's).
# The rounds are left in CLUSTER_ROUNDS.
cluster_replay_while() {
    CLUSTER_ROUNDS=0
    while :; do
        sp_feed A b1.txt
        sp_feed A a1.txt
        sp_feed A b2.txt
        scale status --json >st.json || fail "status failed while slots moved: exit status $?"
        CLUSTER_ROUNDS=$((CLUSTER_ROUNDS + 1))
        proc_alive "$1" && (($(now_ms) < t0 + SP_LEAD_MS - 3000)) && ((CLUSTER_ROUNDS < 100)) || break
    done
    local t1
    t1=$(now_ms)
    note "$CLUSTER_ROUNDS rounds of writes, done $((t1 - t0)) ms after t0; $1 $(proc_alive "$1" && echo still runs || echo is over)"
    ((t1 < t0 + SP_LEAD_MS - 100)) || fail "the writes took until t0 + $((t1 - t0)) ms: deadlines may have passed meanwhile (machine too slow)"
}

# cluster_shard_port SHARD: the port of the primary serving SHARD's slot,
# as the cluster says (CLUSTER KEYSLOT of its zset, then CLUSTER SLOTS)
cluster_shard_port() {
    local slot
    slot=$(redis-cli -p "$(cluster_primaries | head -n 1)" CLUSTER KEYSLOT "$NS:z:{$NS:$1}")
    redis-cli -p "$(cluster_primaries | head -n 1)" --json CLUSTER SLOTS 2>/dev/null |
        jq -r --argjson s "$slot" '.[] | select(.[0] <= $s and $s <= .[1]) | .[2][1]'
}
