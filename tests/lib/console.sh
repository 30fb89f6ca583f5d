# tests/lib/console.sh — part of tests/lib.sh (sourced by it, never alone):
# lapse-console in tests: a config with a console group on a free port, the
# console started and waited for, and HTTP requests to it with curl.

CONSOLE_PORT=
CONSOLE=

# console_config [CONSOLE_KEYS [FILE]]: write_config with a console group on
# a free port (left in CONSOLE_PORT) and CONSOLE_KEYS beside the port
console_config() {
    free_port >/dev/null
    CONSOLE_PORT=$FREE_PORT
    write_config "${2:-$CONF}" "console = { port = $CONSOLE_PORT; ${1:-} };"
}

# console_start [CONF]: lapse-console in the background (its process name
# left in CONSOLE), waited for until /healthz answers (10 s)
console_start() {
    command -v curl >/dev/null || fail "curl is missing (scripts/install-deps installs it)"
    spawn console "$LAPSE_BIN/lapse-console" -c "${1:-$CONF}"
    CONSOLE=$SPAWNED
    wait_until 10000 "curl -sf -o /dev/null http://127.0.0.1:$CONSOLE_PORT/healthz" ||
        fail "lapse-console did not answer on 127.0.0.1:$CONSOLE_PORT within 10 s"
}

console_stop() { proc_stop "$CONSOLE" 10; }

# capi PATH [CURL ARGS...]: the body of a request to the console (any status)
capi() {
    local p=$1
    shift
    curl -s --max-time 10 "$@" "http://127.0.0.1:$CONSOLE_PORT$p"
}

# capi_code PATH [CURL ARGS...]: the HTTP status of a request to the console
capi_code() {
    local p=$1
    shift
    curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$@" "http://127.0.0.1:$CONSOLE_PORT$p"
}

# json_paths: the set of a JSON document's paths (array indices as 0), one
# sorted JSON array: what two documents' names are compared by
json_paths() { jq -c '[paths | map(if type == "number" then 0 else . end)] | unique'; }
