# tests/lib.sh — sourced by every integration test (tests/integration/*.sh).
#
# Gives a test a private temp dir (its cwd), throwaway servers on 127.0.0.1
# (redis-server, lapse-kafka-dev), the lapse programs, and assertions. This
# file holds the core (assertions, waits, processes, ports); the rest is in
# tests/lib/, sourced at its end: redis.sh (plain, replicas, Sentinel, TLS),
# programs.sh (Kafka, the lapse programs, the ingress), split.sh (the split
# tests' workload and checks), cluster.sh (Redis Cluster).
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

# nap SECONDS: sleeps without a fork (a read that times out on a pipe
# nobody writes), so that the waits below cost no process each turn: on a
# machine where a fork takes milliseconds, four tests polling at once
# would otherwise keep a core busy with sleep(1)s
exec {_NAP_FD}<> <(:)
nap() { read -r -t "$1" -u "$_NAP_FD" _ || :; }

# wait_until TIMEOUT_MS 'shell condition': evaluates the condition until it
# is true (return 0) or the time is up (return 1): every 20 ms for the first
# second, then every 100 ms (a long wait's checks, often jq over a growing
# events file, would otherwise take a core from the tests running beside it).
wait_until() {
    local _wu_now _wu_start _wu_end _wu_t
    _wu_t=${EPOCHREALTIME//[.,]/}
    _wu_start=$((10#$_wu_t / 1000))
    _wu_end=$((_wu_start + $1))
    while :; do
        if eval "$2"; then return 0; fi
        _wu_t=${EPOCHREALTIME//[.,]/}
        _wu_now=$((10#$_wu_t / 1000))
        ((_wu_now < _wu_end)) || return 1
        if ((_wu_now - _wu_start < 1000)); then nap 0.02; else nap 0.1; fi
    done
}

# sleep until the shard clock reads at least MS
sleep_until_ms() {
    local now s
    now=$(now_ms)
    while ((now < $1)); do
        printf -v s '0.%03d' $((($1 - now) > 999 ? 999 : $1 - now))
        nap "$s"
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

# The rest of the library, one file per subject (tests/lib/): its functions
# and their globals are defined here; nothing else runs until a test calls it.
for _part in redis programs split cluster console; do
    . "$LAPSE_ROOT/tests/lib/$_part.sh"
done
unset _part
