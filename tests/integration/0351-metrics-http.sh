#!/usr/bin/env bash
# 0351-metrics-http: the metrics endpoint speaks enough HTTP for any client.
#
#  1. A request in one write gets "HTTP/1.x 200", Content-Type text/plain;
#     version=0.0.4, and a body of exactly Content-Length bytes.
#  2. A request that arrives in pieces — the request line, then 200 ms later
#     the headers and the blank line (as bash's printf, telnet or nc, or any
#     client that writes line by line sends it) — gets the same full answer.
#  3. The probes: /healthz 200 "ok"; /readyz 200 while the scanner holds the
#     lease; another path 404; a POST 405.
#  4. Redis stopped: /readyz turns 503 with a one-line reason naming Redis
#     and redis_up 0, while /healthz stays 200; Redis back (same port):
#     /readyz 200 and redis_up 1 again, without a restart of the scanner.
#
# Catches: an endpoint that answers after the first read and closes the
# socket with the rest of the request unread: the kernel then resets the
# connection and the client loses the answer (ECONNRESET, 0 bytes). The
# server must read up to the blank line that ends the request headers before
# answering. And probes that say "not ready" while Redis is away, and
# "ready" again once it is back.
. "$(dirname "$0")/../lib.sh"

redis_start main --appendonly yes # (args: redis_restart replays them)
kafka_start
metrics_config
scale init 1 >/dev/null
scanner_start 0
wait_until 5000 '[[ -n $(holder_pid) ]]' || fail "the scanner did not take the lock"

check_answer() { # FILE WHAT
    local head len body
    [[ -s $1 ]] || fail "$2: no answer (connection reset or closed early)"
    head=$(sed -n '1,/^\r$/p' "$1")
    assert_match "$(head -n 1 "$1")" $'^HTTP/1\\.[01] 200 ' "$2: status line"
    assert_match "$head" $'Content-Type: text/plain; version=0\\.0\\.4\r' "$2: Content-Type"
    [[ $head =~ Content-Length:\ ([0-9]+) ]] || fail "$2: no Content-Length"
    len=${BASH_REMATCH[1]}
    body=$(($(wc -c <"$1") - $(printf '%s\n' "$head" | wc -c)))
    assert_eq "$body" "$len" "$2: body bytes"
    grep -q '^lapse_scanner_lease_held{ns="demo",shard="0"} 1' "$1" || fail "$2: no lease_held 1 in the body"
}

# 1. one write
printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >req
timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && cat req >&3 && cat <&3' _ "$mp" >one.http 2>one.http.err || true
check_answer one.http "request in one write"

# 2. in pieces
timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf "GET /metrics HTTP/1.0\r\n" >&3
    sleep 0.2
    printf "Host: 127.0.0.1\r\nUser-Agent: lapse-test\r\n\r\n" >&3
    sleep 0.1
    cat <&3' _ "$mp" >split.http 2>split.http.err || true
check_answer split.http "request in two writes 200 ms apart"

# 3. probes and errors
url=http://127.0.0.1:$mp
code() { curl -s -o "${2:-/dev/null}" -w '%{http_code}' -m 2 "${@:3}" "$url$1" || true; }
assert_eq "$(code /healthz h.txt)" 200 "/healthz"
assert_eq "$(cat h.txt)" ok "/healthz body"
assert_eq "$(code /readyz r.txt)" 200 "/readyz with the lease held"
assert_eq "$(code /nope)" 404 "an unknown path"
assert_eq "$(code /metrics /dev/null -X POST -d x=1)" 405 "POST /metrics"

# 4. Redis away and back
redis_stop main
wait_until 5000 '[[ $(code /readyz r.txt) == 503 ]]' || fail "/readyz answered $(code /readyz) with Redis down"
note "/readyz with Redis down: $(cat r.txt)"
assert_eq "$(wc -l <r.txt)" 1 "/readyz reason: one line"
assert_match "$(cat r.txt)" 'Redis' "/readyz reason names Redis"
assert_eq "$(code /healthz)" 200 "/healthz with Redis down"
assert_eq "$(metric "$mp" redis_up)" 0 "redis_up with Redis down"
redis_restart main
wait_until 8000 '[[ $(code /readyz) == 200 ]]' || fail "/readyz answered $(code /readyz r.txt) after Redis came back: $(cat r.txt)"
assert_eq "$(metric "$mp" redis_up)" 1 "redis_up after Redis came back"
scanner_stop
