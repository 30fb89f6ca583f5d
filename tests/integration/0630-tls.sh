#!/usr/bin/env bash
# 0630-tls: lapse over TLS (mutual: the server demands our certificate),
# as an ACL user with the default user off: init, produce, fire, cancel,
# status. Certificates are made here with openssl: a CA, the server's
# (for IP 127.0.0.1), ours, and a second CA nobody trusts. Refused, each
# with one line naming the node and status 78, at start: a server whose
# certificate another CA signed, TLS to a plain port, no client
# certificate, a CA file that does not exist. A plain connection to the
# TLS port is waited for up to redis.retry_timeout_ms, then status 1 (the
# server only hangs up: it looks like one going away). A certificate for
# another name than the host is refused, unless redis.tls.server_name
# names it.
. "$(dirname "$0")/../lib.sh"

# ------------------------------------------------------------ certificates
tls_mkcert ca ca
tls_mkcert server ca "IP:127.0.0.1"
tls_mkcert client ca
tls_mkcert rogue-ca rogue-ca
tls_mkcert rogue rogue-ca "IP:127.0.0.1"

# tls_redis NAME CERT: a redis-server with only a TLS port, demanding a
# client certificate signed by ca; its port in TLS_PORT
declare -A TLS_PORT=()
tls_redis() {
    free_port >/dev/null
    local port=$FREE_PORT dir=$T/redis-$1
    mkdir -p "$dir"
    spawn "redis-$1" redis-server --bind 127.0.0.1 --port 0 --tls-port "$port" --dir "$dir" \
        --tls-cert-file "$T/$2.crt" --tls-key-file "$T/$2.key" --tls-ca-cert-file "$T/ca.crt" \
        --tls-auth-clients yes --save '' --appendonly no --logfile ''
    wait_until 10000 "[[ \$(tcli $port --insecure PING 2>/dev/null) == PONG ]]" ||
        fail "redis-server $1 (TLS) did not start"
    TLS_PORT[$1]=$port
}
tcli() { # PORT ARGS...: redis-cli over TLS with our client certificate
    local port=$1
    shift
    redis-cli -h 127.0.0.1 -p "$port" --tls --cacert "$T/ca.crt" --cert "$T/client.crt" \
        --key "$T/client.key" "$@"
}

tls_redis main server
REDIS_PORT=${TLS_PORT[main]}
tcli "$REDIS_PORT" ACL SETUSER lapse on '>pw-tls' "~$NS:*" '&*' +@all -@dangerous >/dev/null
tcli "$REDIS_PORT" ACL SETUSER admin on '>pw-admin' '~*' '&*' +@all >/dev/null
tcli "$REDIS_PORT" ACL SETUSER default off >/dev/null
rcli() { tcli "$REDIS_PORT" --user admin --pass pw-admin --no-auth-warning "$@"; }
assert_eq "$(rcli PING)" PONG "the admin user over TLS"

kafka_start --brokers 1
write_config
tls_group="tls = { ca_file = \"$T/ca.crt\"; cert_file = \"$T/client.crt\"; key_file = \"$T/client.key\"; };"
node="{ host = \"127.0.0.1\"; port = $REDIS_PORT; username = \"lapse\"; password = \"pw-tls\"; tls = true; }"
sed -i "s|^redis = .*|redis = { nodes = ( $node ); $tls_group };|" "$CONF"
scale init 2 >/dev/null || fail "init over TLS: exit status $?"
scanners_start 2
events_follow events.json
t0=$(now_ms)
{
    for i in $(seq 0 19); do echo "touch tls-$i @$((t0 + 500 + i * 10)) pl-$i"; done
    echo "touch gone @$((t0 + 800))"
    echo "cancel gone"
} | produce 2>produce.err || fail "producer over TLS: exit status $?: $(cat produce.err)"
events_wait_ids events.json 20 10000
scale status >status.txt || fail "status over TLS: exit status $?"
assert_match "$(cat status.txt)" "127\.0\.0\.1:$REDIS_PORT +plain, tls " "status: how the node is reached"
assert_eq "$(scale status --json | jq -c '.nodes[0] | [.via, .tls]')" '["plain",true]' "status --json: via, tls"
# a marker due after the cancelled ID's deadline: once it fired, the
# scanner has claimed past it, so a fire of it would have shown
echo "touch tls-marker @$((t0 + 1000))" | produce 2>marker.err || fail "the marker: exit status $?"
events_wait_ids events.json 21 10000
scanner_stop
events_follow_stop
assert_eq "$(events_ids events.json | grep -c '^gone$')" 0 "events of the cancelled ID"
assert_eq "$(jq -r 'select(.id == "tls-7") | .payload' events.json)" pl-7 "tls-7's payload"
assert_never_early events.json
assert_eq "$(grep -c 'pw-tls' "$T"/*.log status.txt produce.err | awk -F: '{ s += $NF } END { print s }')" 0 \
    "lines showing the password"

# ------------------------------------------------------------ refused
tls_redis rogue rogue
expect_refused "a certificate another CA signed" \
    "nodes = ( { host = \"127.0.0.1\"; port = ${TLS_PORT[rogue]}; tls = true; } ); $tls_group" \
    "127\\.0\\.0\\.1:${TLS_PORT[rogue]}.*TLS handshake.*certificate"
redis_start plain
expect_refused "TLS to a plain port" \
    "nodes = ( { host = \"127.0.0.1\"; port = $(redis_port plain); tls = true; } ); $tls_group" \
    "127\\.0\\.0\\.1:$(redis_port plain).*TLS handshake"
# (a TLS port that hangs up on plain bytes looks like a server going away:
# waited for, then status 1)
expect_unreachable "plain to the TLS port" \
    "nodes = ( { host = \"127.0.0.1\"; port = $REDIS_PORT; username = \"lapse\"; password = \"pw-tls\"; } ); retry_timeout_ms = 1000;" \
    "127\\.0\\.0\\.1:$REDIS_PORT.*(closed|reset|lost|timed out)"
expect_refused "no client certificate" \
    "nodes = ( $node ); tls = { ca_file = \"$T/ca.crt\"; };" \
    "127\\.0\\.0\\.1:$REDIS_PORT.*(TLS|closed|reset)"
expect_refused "a CA file that does not exist" \
    "nodes = ( $node ); tls = { ca_file = \"$T/nope.crt\"; };" \
    "127\\.0\\.0\\.1:$REDIS_PORT.*ca_file.*nope\\.crt"

# ------------------------------------------------------------ server_name
# a certificate the trusted CA signed for a name, not for 127.0.0.1: refused
# when connecting to 127.0.0.1 (the name is checked), accepted once
# redis.tls.server_name names it
tls_mkcert named ca "DNS:redis.lapse.test"
tls_redis named named
named_node="{ host = \"127.0.0.1\"; port = ${TLS_PORT[named]}; tls = true; }"
expect_refused "a certificate for another name" \
    "nodes = ( $named_node ); $tls_group" \
    "127\\.0\\.0\\.1:${TLS_PORT[named]}.*TLS handshake.*(certificate|hostname|name)" "producer scale"
sed "s|^redis = .*|redis = { nodes = ( $named_node ); tls = { ca_file = \"$T/ca.crt\"; cert_file = \"$T/client.crt\"; key_file = \"$T/client.key\"; server_name = \"redis.lapse.test\"; }; };|" \
    "$CONF" >named.conf
lapse_scale named.conf init 1 >/dev/null 2>named.err ||
    fail "init with server_name = the certificate's name: exit status $? ($(cat named.err))"
echo "touch named-1 +600000" | "$LAPSE_BIN/lapse-producer" -c named.conf 2>>named.err ||
    fail "producer with server_name: exit status $? ($(cat named.err))"
# (the test's own redis-cli skips the name check: --insecure)
assert_match "$(tcli "${TLS_PORT[named]}" --insecure EVAL "$_SK_LUA return _sk_get('ZSCORE', KEYS[1], ARGV[1])" \
    1 "$NS:z:0" named-1)" '^[0-9]+$' \
    "named-1 stored through server_name"
