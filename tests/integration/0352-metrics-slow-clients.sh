#!/usr/bin/env bash
# 0352-metrics-slow-clients: slow, half-open and malformed clients never
# stall a scrape.
#
# Ten connections each send half a request line and then nothing; two more
# send garbage bytes, one a request whose headers (70 KB) exceed what the
# server keeps per connection. While all of them are still open, three
# scrapes with `curl -m 2` each get a 200 with the scanner's metrics, and
# /healthz answers too. The oversized request (sent between two scrapes)
# gets a 4xx, not a hang.
#
# Catches: an endpoint that serves clients one at a time (each silent client
# holds every scrape behind it for its read timeout: ten of them, ten
# seconds), or one that a malformed request wedges or kills.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
metrics_config 'metrics_bind = "127.0.0.2";' # (another loopback address: the key is obeyed)
scale init 1 >/dev/null
scanner_start 0
wait_until 5000 '[[ -n $(holder_pid) ]]' || fail "the scanner did not take the lock"
assert_eq "$(listen_addrs "$mp" | paste -sd' ')" 127.0.0.2 "where the endpoint listens (scanner.metrics_bind)"
url=http://127.0.0.2:$mp

fds=()
for ((i = 0; i < 10; i++)); do
    exec {fd}<>"/dev/tcp/127.0.0.2/$mp" || fail "connection $i refused"
    printf 'GET /metr' >&"$fd" # half a request line, never finished
    fds+=("$fd")
done
exec {fd}<>"/dev/tcp/127.0.0.2/$mp" || fail "garbage connection refused"
head -c 300 /dev/urandom >&"$fd" || true # (the server may drop it at once)
fds+=("$fd")
exec {fd}<>"/dev/tcp/127.0.0.2/$mp" || fail "garbage connection refused"
printf '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03' >&"$fd" || true # a TLS hello
fds+=("$fd")

for k in 1 2 3; do
    t0=$(local_ms)
    code=$(curl -s -o scrape.txt -w '%{http_code}' -m 2 "$url/metrics" || true)
    note "scrape $k with ${#fds[@]} stalled clients open: $code in $(($(local_ms) - t0)) ms"
    assert_eq "$code" 200 "scrape $k (curl -m 2) with stalled clients open"
    assert_file_match scrape.txt '^lapse_scanner_lease_held\{ns="demo",shard="0"\} 1$' "scrape $k body"
    ((k == 2)) || continue
    pad=$(head -c 70000 /dev/zero | tr '\0' a)
    big=$(curl -s -o /dev/null -w '%{http_code}' -m 2 -H "X-Pad: $pad" "$url/metrics" || true)
    note "70 KB of headers: $big"
    assert_match "$big" '^4[0-9][0-9]$' "answer to a request with 70 KB of headers"
done
assert_eq "$(curl -s -m 2 "$url/healthz" || true)" ok "/healthz with stalled clients open"
for fd in "${fds[@]}"; do exec {fd}>&-; done
scanner_stop
