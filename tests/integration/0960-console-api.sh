#!/usr/bin/env bash
# 0960-console-api: lapse-console's HTTP API, with curl.
# timeout: 240 s
#
# 4 shards with scanners, IDs pending (one with a payload, one repeating),
# one offline (watch, timed out); Redis reached as an ACL user with a
# password. Checked:
#  - every endpoint's JSON has the names of the lapse-scale command it
#    stands for, for the same namespace (/api/status: status --json,
#    /api/due: status --due --json, /api/get: get --json, /api/offline:
#    offline --json; each may add its own, e.g. read_ms), and the same
#    figures where they cannot move (shards, state, epoch, pending, the
#    ID's deadline, the offline ID);
#  - a paged offline list: limit, prefix, cursor walking every shard, a
#    malformed cursor or limit refused (400);
#  - read only (writes off): POST /api/cancel and /api/deadline are 405,
#    another method on a read endpoint 405; nothing changed in Redis;
#  - every answer (pages, script, API, errors) carries the
#    Content-Security-Policy (default-src 'self'), X-Content-Type-Options:
#    nosniff and Referrer-Policy; the page has no inline script;
#  - the Redis password never appears in any answer;
#  - bad requests (no ID, an ID of 513 bytes, one with a tab, an unknown
#    endpoint) get 400/404 and one-line JSON errors, and the console lives on;
#  - it listens on 127.0.0.1 alone when console.bind is not set;
#  - one reader: 10 clients polling /api/status for 2 s cost Redis at most
#    one snapshot read per refresh_ms (plus one), and once no page asked for
#    idle_ms, the reads stop;
#  - writes on, with a tokens file: no token, a wrong one, a cross-site
#    Origin or Sec-Fetch-Site get 403; with the token a cancel and a new
#    deadline are applied (lapse-scale get shows them) and logged with the
#    token's name; an oversized or malformed body gets 413 / 400;
#  - it refuses to start (exit 2, one line on stderr) without a console
#    group, with port = 0, and with writes on and a tokens file that is
#    missing, empty or readable by others.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
PW=pw-Qz7-never-in-a-page
rcli ACL SETUSER lapse on ">$PW" '~*' '&*' '+@all' >/dev/null
console_config "idle_ms = 1500;"
# the nodes reached as the ACL user: the password is in the config
sed -i "s/port = $REDIS_PORT; }/port = $REDIS_PORT; username = \"lapse\"; password = \"$PW\"; }/" "$CONF"
grep -q "$PW" "$CONF" || fail "the password is not in the config"
scale init 4 >/dev/null
events_follow events.json
scanners_start 4
printf 'touch a-1 +600000 {"user":42}\nrepeat r-1 +900000 5000\nextend p-1 +700000\nwatch w-1 +200\nwatch w-2 +200\n' |
    produce 2>/dev/null || fail "producer: exit status $?"
events_wait_ids events.json 2 10000
wait_until 10000 '[[ $(scale_offline | wc -l) == 2 ]]' || fail "w-1, w-2 not offline: $(scale_offline)"

console_start
assert_eq "$(listen_addrs "$CONSOLE_PORT")" 127.0.0.1 "the console listens on 127.0.0.1 alone (bind's default)"

# ---------------------------------------------------------------- the names
same_names() { # API_PATH WHAT CLI ARGS...: the CLI's paths are all in the API's
    local path=$1 what=$2
    shift 2
    capi "$path" >api.json
    scale "$@" >cli.json || fail "lapse-scale $*: exit status $?"
    local missing
    missing=$(jq -nc --argjson a "$(json_paths <cli.json)" --argjson b "$(json_paths <api.json)" '$a - $b')
    assert_eq "$missing" "[]" "$what: names of lapse-scale $* missing from $path"
}
same_names /api/status "status" status --json
assert_eq "$(jq -c '[.ns, .shards, .state, .epoch, [.shard_info[].pending]]' api.json)" \
    "$(jq -c '[.ns, .shards, .state, .epoch, [.shard_info[].pending]]' cli.json)" "status figures"
assert_eq "$(jq -r '.shard_info | map(.scanner != null) | all' api.json)" true "every shard's active scanner shown"
same_names /api/due "due" status --due --json
assert_eq "$(jq -c '[.total.pending, .total.later, .ranges]' api.json)" "$(jq -c '[.total.pending, .total.later, .ranges]' cli.json)" "due figures"
same_names "/api/get?id=a-1" "get" get a-1 --json
assert_eq "$(jq -c '[.id, .shard, .deadline_ms, .payload, .in_flight]' api.json)" \
    "$(jq -c '[.id, .shard, .deadline_ms, .payload, .in_flight]' cli.json)" "get figures"
same_names "/api/get?id=r-1" "get (repeat)" get r-1 --json
same_names "/api/get?id=nobody" "get (unknown ID)" get nobody --json
same_names /api/offline "offline" offline --json
assert_eq "$(jq -c '[.offline[] | [.id, .shard, .deadline_ms, .since_ms]] | sort' api.json)" \
    "$(jq -c '[.offline[] | [.id, .shard, .deadline_ms, .since_ms]] | sort' cli.json)" "offline IDs"

# ---------------------------------------------------------------- paging
capi "/api/offline?prefix=w-2" >p.json
assert_eq "$(jq -c '[.offline[].id, .cursor, .truncated]' p.json)" '["w-2",null,false]' "offline ?prefix=w-2"
# one ID a page: the cursor walks every shard, each offline ID seen once
seen=() cursor= pages=0
while ((pages++ < 40)); do
    capi "/api/offline?limit=1${cursor:+&cursor=$cursor}" >p.json
    mapfile -t -O "${#seen[@]}" seen < <(jq -r '.offline[].id' p.json)
    cursor=$(jq -r '.cursor // empty' p.json)
    [[ -n $cursor ]] || break
    assert_match "$cursor" '^[0-9]+:[0-9]+$' "a page's cursor"
done
[[ -z $cursor ]] || fail "40 pages of one ID each did not reach the end"
assert_eq "$(printf '%s\n' "${seen[@]}" | sort | paste -sd,)" "w-1,w-2" "the IDs of every page"
assert_eq "$(capi_code '/api/offline?cursor=x:1')" 400 "a malformed cursor"
assert_eq "$(capi_code '/api/offline?limit=0')" 400 "limit=0"
assert_eq "$(capi_code '/api/offline?limit=100000')" 400 "a limit past 1000"

# ---------------------------------------------------------------- read only
changes() { rcli INFO persistence | tr -d '\r' | sed -n 's/^rdb_changes_since_last_save://p'; }
records=$(ns_records "$NS")
assert_eq "$(capi_code /api/cancel -X POST -H 'Content-Type: application/json' -d '{"id":"a-1"}')" 405 "POST /api/cancel, writes off"
assert_eq "$(capi_code /api/deadline -X POST -d '{"id":"a-1","in_ms":1000}')" 405 "POST /api/deadline, writes off"
assert_match "$(capi /api/cancel -X POST -d '{"id":"a-1"}')" 'writes are off' "the refusal says why"
assert_eq "$(capi_code /api/cancel)" 405 "GET /api/cancel"
assert_eq "$(capi_code /api/status -X POST -d x)" 405 "POST /api/status"
assert_eq "$(capi_code /api/status -X DELETE)" 405 "DELETE /api/status"
assert_eq "$(capi_code / -X PUT -d x)" 405 "PUT /"
assert_eq "$(ns_records "$NS")" "$records" "the namespace's records after refused writes"

# ---------------------------------------------------------------- headers
for p in / /app.js /app.css /api/status /api/due /api/offline "/api/get?id=a-1" /api/console /api/nothing /nothing; do
    curl -s -D h.txt -o /dev/null "http://127.0.0.1:$CONSOLE_PORT$p"
    tr -d '\r' <h.txt >hh.txt
    assert_file_match hh.txt "^Content-Security-Policy: default-src 'self'; script-src 'self';" "CSP on $p"
    grep -qi "^Content-Security-Policy:.*unsafe-inline" hh.txt && fail "CSP on $p allows inline script or style"
    assert_file_match hh.txt '^X-Content-Type-Options: nosniff$' "nosniff on $p"
    assert_file_match hh.txt '^Referrer-Policy: no-referrer$' "Referrer-Policy on $p"
done
capi / >index.html
grep -q '<script src="/app.js"' index.html || fail "the page does not load /app.js"
assert_eq "$(grep -c '<script' index.html)" 1 "script tags in the page (no inline script)"
grep -qi ' on[a-z]*="' index.html && fail "the page has an inline event handler"
assert_eq "$(capi_code /app.js)" 200 "GET /app.js"
assert_match "$(curl -s -D - -o /dev/null "http://127.0.0.1:$CONSOLE_PORT/app.js" | tr -d '\r' | grep -i '^content-type')" \
    'javascript' "the script's content type"

# ---------------------------------------------------------------- bad requests
long=$(head -c 513 /dev/zero | tr '\0' x)
assert_eq "$(capi_code /api/get)" 400 "/api/get without an ID"
assert_eq "$(capi_code "/api/get?id=$long")" 400 "/api/get with an ID of 513 bytes"
assert_eq "$(capi_code '/api/get?id=a%09b')" 400 "/api/get with a tab in the ID"
assert_match "$(capi '/api/get?id=a%09b')" '^\{"error":"[^"]*control byte 0x09' "the error for a tab"
assert_eq "$(capi_code /api/nothing)" 404 "an unknown endpoint"
assert_eq "$(capi_code "/api/get?id=$(head -c 512 /dev/zero | tr '\0' y)")" 200 "/api/get with an ID of 512 bytes"
assert_eq "$(capi_code /api/status -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' z)")" 431 "headers past the console's limit"
proc_alive "$CONSOLE" || fail "the console died on bad requests"

# ---------------------------------------------------------------- no secret
for p in / /app.js /app.css /api/status /api/due /api/offline "/api/get?id=a-1" /api/console \
    /api/nothing "/api/get?id=$PW" /nothing; do
    curl -s -D - "http://127.0.0.1:$CONSOLE_PORT$p" >resp.txt
    if [[ $p == *"$PW"* ]]; then continue; fi # (that one echoes the ID it was asked for)
    grep -q -- "$PW" resp.txt && fail "the Redis password is in the answer to $p"
done
grep -q -- "$PW" "$T/$CONSOLE.log" && fail "the Redis password is in the console's log"

# ---------------------------------------------------------------- one reader
reads() { capi /api/console | jq .snapshot_reads; }
# (first the views the checks above asked for go idle: from then on only
# the pollers' view is read)
wait_until 8000 '[[ $(reads) == "${last:-}" ]] || { last=$(reads); nap 1; false; }' ||
    fail "the snapshot is still read with no page asking"
capi /api/status >/dev/null
r0=$(reads)
t0=$(local_ms)
pollers=()
for c in 1 2 3 4 5 6 7 8 9 10; do
    (for i in $(seq 20); do curl -s -o /dev/null "http://127.0.0.1:$CONSOLE_PORT/api/status"; nap 0.1; done) &
    pollers+=($!)
done
wait "${pollers[@]}" # (not a bare wait: the test's daemons are its children too)
t1=$(local_ms)
r1=$(reads)
most=$(((t1 - t0) / 1000 + 2))
note "10 clients, 200 requests in $((t1 - t0)) ms: $((r1 - r0)) snapshot reads"
assert_le $((r1 - r0)) "$most" "snapshot reads while 10 clients polled (refresh_ms 1000)"
# nobody asks: within idle_ms (1.5 s) and one read more, the reads stop
last=
wait_until 5000 '[[ $(reads) == "${last:-}" ]] || { last=$(reads); nap 1; false; }' ||
    fail "the snapshot is still read with no page asking"
r2=$(reads)
nap 2
assert_eq "$(reads)" "$r2" "snapshot reads after 2 s with no page asking"

# ---------------------------------------------------------------- writes
console_stop
TOK=tok-0123456789abcdef-xyz
printf '# console tokens\nalice %s\n\nbob other-token-0123456789\n' "$TOK" >tokens
chmod 600 tokens
console_config "writes = true; tokens_file = \"$T/tokens\";"
console_start
d_a1=$(scale get a-1 --json | jq .deadline_ms)
post() { capi_code "$1" -X POST -H 'Content-Type: application/json' "${@:3}" -d "$2"; }
assert_eq "$(post /api/cancel '{"id":"a-1"}')" 403 "cancel without a token"
assert_eq "$(post /api/cancel '{"id":"a-1"}' -H 'Authorization: Bearer wrong-token-0123456789')" 403 "cancel with a wrong token"
assert_eq "$(post /api/cancel '{"id":"a-1"}' -H "Authorization: Basic $TOK")" 403 "cancel with the token not as Bearer"
assert_eq "$(post /api/cancel '{"id":"a-1"}' -H "Authorization: Bearer $TOK" -H 'Origin: http://evil.example')" 403 "cancel with a cross-site Origin"
assert_eq "$(post /api/cancel '{"id":"a-1"}' -H "Authorization: Bearer $TOK" -H 'Sec-Fetch-Site: cross-site')" 403 "cancel with Sec-Fetch-Site: cross-site"
assert_eq "$(scale get a-1 --json | jq .deadline_ms)" "$d_a1" "a-1 untouched by refused writes"
assert_eq "$(post /api/cancel "{\"id\":\"$(head -c 5000 /dev/zero | tr '\0' x)\"}" -H "Authorization: Bearer $TOK")" 413 "a body past 4096 bytes"
assert_eq "$(post /api/cancel '{"id":' -H "Authorization: Bearer $TOK")" 400 "malformed JSON"
assert_eq "$(post /api/deadline '{"id":"a-1","in_ms":"soon"}' -H "Authorization: Bearer $TOK")" 400 "a deadline that is not a number"
assert_eq "$(post /api/cancel '{"id":"a b"}' -H "Authorization: Bearer $TOK")" 400 "an ID with a space"
assert_eq "$(post /api/cancel '{"id":"a\u0000b"}' -H "Authorization: Bearer $TOK")" 400 "an ID with a NUL byte"
# accepted: same-origin (Origin = Host) and a valid token
assert_eq "$(post /api/cancel '{"id":"a-1"}' -H "Authorization: Bearer $TOK" -H "Origin: http://127.0.0.1:$CONSOLE_PORT" -H 'Sec-Fetch-Site: same-origin')" 200 "cancel with the token"
assert_eq "$(scale get a-1 --json | jq -c '[.deadline_ms, .found]')" '[null,false]' "a-1 after the console's cancel"
now=$(now_ms)
capi /api/deadline -X POST -H "Authorization: Bearer other-token-0123456789" -d '{"id":"p-1","at_ms":'$((now + 120000))'}' >set.json
assert_eq "$(jq -c '[.ok, .action, .id, .by, .at_ms]' set.json)" "[true,\"deadline\",\"p-1\",\"bob\",$((now + 120000))]" "the deadline's answer"
assert_eq "$(scale get p-1 --json | jq .deadline_ms)" $((now + 120000)) "p-1's deadline after the console set it"
assert_file_match "$T/$CONSOLE.log" '^info lapse-console: cancel by alice: a-1$' "the cancel logged with the token's name"
assert_file_match "$T/$CONSOLE.log" "^info lapse-console: deadline by bob: p-1 @$((now + 120000))\$" "the deadline logged"
grep -q -- "$TOK" "$T/$CONSOLE.log" && fail "a token is in the console's log"
for p in / /api/status /api/console; do
    capi "$p" | grep -q -- "$TOK" && fail "a token is in the answer to $p"
done
assert_eq "$(capi /api/console | jq .writes)" true "/api/console says writes are on"
console_stop

# ---------------------------------------------------------------- refusals at start
refused() { # CONF WHAT: exit 2 with one line naming it
    local rc=0
    "$LAPSE_BIN/lapse-console" -c "$1" >start.out 2>start.err || rc=$?
    assert_eq "$rc" 2 "exit status: $2"
    assert_eq "$(grep -c . start.err)" 1 "lines on stderr: $2"
    [[ ! -s start.out ]] || fail "$2: something on stdout"
}
write_config none.conf
refused none.conf "no console group"
assert_file_match start.err 'console.port is 0 or there is no console group' "the message without a console group"
write_config zero.conf "console = { port = 0; };"
refused zero.conf "port = 0"
assert_file_match start.err 'console.port is 0' "the message for port 0"
write_config bad.conf "console = { port = 9480; colour = \"blue\"; };"
refused bad.conf "an unknown key"
assert_file_match start.err 'console.colour' "the unknown key named"
write_config missing.conf "console = { port = 9480; writes = true; tokens_file = \"$T/no-such-file\"; };"
refused missing.conf "a missing tokens file"
assert_file_match start.err 'no-such-file: No such file' "the missing file named"
: >empty-tokens
chmod 600 empty-tokens
write_config empty.conf "console = { port = 9480; writes = true; tokens_file = \"$T/empty-tokens\"; };"
refused empty.conf "an empty tokens file"
assert_file_match start.err 'holds no token' "the empty file's message"
write_config notok.conf "console = { port = 9480; writes = true; };"
refused notok.conf "writes without a tokens file"
assert_file_match start.err 'console.tokens_file: missing' "writes without a tokens file: the message"
chmod 644 tokens
write_config open.conf "console = { port = 9480; writes = true; tokens_file = \"$T/tokens\"; };"
refused open.conf "a tokens file others may read"
assert_file_match start.err 'others may read' "the world-readable file's message"
grep -q -- "$TOK" start.err && fail "the refusal quotes a token"
printf 'alice short\n' >short-tokens
chmod 600 short-tokens
write_config short.conf "console = { port = 9480; writes = true; tokens_file = \"$T/short-tokens\"; };"
refused short.conf "a token too short"
assert_file_match start.err 'short-tokens:1: a token has 16 to 256 bytes' "the short token's line"
