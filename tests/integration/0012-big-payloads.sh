#!/usr/bin/env bash
# 0012-big-payloads: payloads at the limit and payloads that are not UTF-8
# fire exactly as written. A 64 KiB payload (the largest a line may carry:
# printable ASCII, JSON-special characters and multi-byte UTF-8 over its
# whole length) arrives byte for byte in "payload"; payloads with bytes that
# are not valid UTF-8 (and a tab) arrive with U+FFFD in "payload" and the
# exact bytes in "payload_b64"; a valid one has no payload_b64.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
write_config
scale init 1 >/dev/null || fail "init: exit status $?"

# 64 KiB: a 64-byte pattern (3-byte é and ключ among ASCII and JSON-specials), 1024 times
unit='{"q":"\"x\"","b":"\\"} é ключ <&> ~!@#$%^*()_+-=[];,./?|`ab'
printf '%s' "$unit" | wc -c | grep -qx 64 || fail "the pattern is $(printf '%s' "$unit" | wc -c) bytes, not 64"
big=$(for _ in $(seq 1 1024); do printf '%s' "$unit"; done)
printf '%s' "$big" >big.bin
assert_eq "$(wc -c <big.bin)" 65536 "the big payload's size"
{
    printf 'touch big +500 %s\n' "$big"
    printf 'touch raw +600 bytes\xff\xfe\x80end\tafter-a-tab\n'
    printf 'touch fine +700 plain\n'
} | produce 2>produce.err || fail "producer: exit status $? ($(head -c 300 produce.err))"
scanner_start 0
events_read 3 15000 >events.json || fail "$(_lines events.json) of 3 events within 15 s"

jq -j 'select(.id == "big") | .payload' events.json >big.got
cmp -s big.bin big.got || fail "the 64 KiB payload differs: $(cmp big.bin big.got 2>&1 | head -1), got $(wc -c <big.got) bytes"
assert_eq "$(jq -r 'select(.id == "big") | has("payload_b64")' events.json)" false "big: payload_b64 (valid UTF-8)"

printf 'bytes\xff\xfe\x80end\tafter-a-tab' >raw.bin
jq -r 'select(.id == "raw") | .payload_b64' events.json | base64 -d >raw.got 2>/dev/null ||
    fail "raw: payload_b64 missing or not base64: $(jq -c 'select(.id == "raw")' events.json | head -c 300)"
cmp -s raw.bin raw.got || fail "raw: payload_b64 is not the bytes written: $(od -c raw.got | head -2)"
assert_eq "$(jq -r 'select(.id == "raw") | .payload' events.json)" $'bytes\uFFFD\uFFFD\uFFFDend\tafter-a-tab' \
    "raw: payload with U+FFFD for each invalid byte"
assert_eq "$(jq -r 'select(.id == "fine") | [.payload, has("payload_b64")] | @tsv' events.json)" $'plain\tfalse' "fine"
assert_never_early events.json
