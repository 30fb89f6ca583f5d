# tests/lib/redis.sh — part of tests/lib.sh (sourced by it, never alone):
# throwaway redis-servers (plain, replicas, Sentinel, TLS) and the look-ups
# tests make in them (rcli, now_ms, where an ID is, what it holds).

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
# after DOWN_MS (default 1000) ms, each 250 ms later than the one before:
# sentinels started together ping in step, and when all of them find the
# primary down in the same millisecond each votes for itself and none is
# elected (seen under load: the failover then waits 2 x failover-timeout,
# kept at 4 s for that); returns once each knows the others and
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
                "sentinel down-after-milliseconds $master $((down + 250 * i))" \
                "sentinel failover-timeout $master 4000" \
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

# sentinel_node [ARGS...]: the Sentinel tests' node "lapse-a": primary a
# (ARGS: more redis-server arguments for it), replicas b and c, three
# sentinels (down after 2 s: with 1 s, on a loaded machine they often
# failed the new primary over too, a second later). From then on rcli and
# the sp_* look-ups follow the primary the sentinels name (during a failover
# the dead one, which refuses: waits go on).
sentinel_node() {
    redis_start a "$@"
    redis_replica_start a b c
    sentinels_start 3 lapse-a a 2000
    _sp_ports() { sentinel_primary lapse-a; }
    rcli() { redis-cli -h 127.0.0.1 -p "$(sentinel_primary lapse-a)" "$@" 2>/dev/null; }
}

# sentinel_config [REDIS_KEYS]: CONF (write_config's) reaches node lapse-a
# through its sentinels; REDIS_KEYS (libconfig text) go in the redis group
sentinel_config() {
    sed -i "s|^redis = .*|redis = { nodes = ( { sentinels = ( $SENTINELS ); master = \"lapse-a\"; } ); ${1:-} };|" "$CONF"
}

# sentinel_failovers: how many primaries the sentinels switched to (the
# distinct new addresses of "+switch-master" in their logs). More than the
# test caused means a loaded machine made them fail over once more (a new
# primary missed their pings for down-after-milliseconds, and a failover
# leaves the old one a stale primary until they reconfigure it): claims and
# acknowledgements not yet replicated are lost with it, so IDs fire again,
# and producers send again writes no WAIT confirmed (at least once holds;
# "once" does not).
sentinel_failovers() {
    grep -h '+switch-master' "$T"/sentinel-*.log | awk '{ print $NF }' | sort -u | wc -l
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

# A shard's z, p or r in either form (docs/protocol.md "Small keys"): the one key
# K (NS:z:I, or NS:z:{NS:I} on a Cluster) and its buckets K:J (a shard in
# small keys). (Lua, pasted into the helpers' scripts; KEYS: tests only.)
#   _sk_keys(K): K and every K:J that exists, K first
#   _sk_get(CMD, K, ID): CMD (ZSCORE, HGET, HEXISTS ...) of ID in K, then in
#     each K:J: the first answer that is not nil (or 0), and the key
#   _sk_range(K): ZRANGE WITHSCORES of K and of each K:J, concatenated
#   _sk_shard(NS, KEY): the shard I of a key NS:X:I, NS:X:I:J,
#     NS:X:{NS:I} or NS:X:{NS:I}:J (a bucket key ends in :J: the last
#     number of the name is not the shard); nil for any other key
_SK_LUA="
local function _sk_keys(k)
    local out = { k }
    local b = redis.call('KEYS', k .. ':*')
    table.sort(b)
    for _, x in ipairs(b) do
        if string.match(string.sub(x, #k + 2), '^%d+$') then out[#out + 1] = x end
    end
    return out
end
local function _sk_get(cmd, k, id)
    for _, x in ipairs(_sk_keys(k)) do
        local v = redis.call(cmd, x, id)
        if v and v ~= 0 then return v, x end
    end
    return nil
end
local function _sk_range(k)
    local out = {}
    for _, x in ipairs(_sk_keys(k)) do
        local m = redis.call('ZRANGE', x, 0, -1, 'WITHSCORES')
        for i = 1, #m do out[#out + 1] = m[i] end
    end
    return out
end
local function _sk_shard(ns, k)
    if string.sub(k, 1, #ns + 1) ~= ns .. ':' then return nil end
    local rest = string.sub(k, #ns + 2)
    local s = string.match(rest, '^%a+:(%d+)$') or string.match(rest, '^%a+:(%d+):%d+$') or
        string.match(rest, '^%a+:{.*:(%d+)}$') or string.match(rest, '^%a+:{.*:(%d+)}:%d+$')
    return s and tonumber(s)
end
"

# id_where ID: prints "SHARD SCORE" for the shard zset (or bucket) of
# namespace NS that holds ID (shards taken from NS:layout), nothing when
# none does.
id_where() {
    rcli EVAL "$_SK_LUA
        local n = tonumber(redis.call('HGET', ARGV[1] .. ':layout', 'shards') or '0')
        local p = tonumber(redis.call('HGET', ARGV[1] .. ':layout', 'prev_shards') or '0')
        if p > n then n = p end
        for s = 0, n - 1 do
            local sc = _sk_get('ZSCORE', ARGV[1] .. ':z:' .. s, ARGV[2])
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

# inflight_of ID [SHARD]: the deadline being dispatched for ID, from the
# record of the claim (or take) holding it (common/lua/lib/inflight.lua),
# or nothing when the ID is not in flight; SHARD: the ID's home shard by
# default (an ID a claim took holds no place in a zset)
inflight_of() {
    local s=${2:-$(id_home "$1")}
    [[ -n $s ]] || return 0
    rcli EVAL "$(lua_source lib/inflight)$_CLAIM_OF_LUA
        local l = _claim_of(KEYS[1], KEYS[2], ARGV[1])
        if not l then return false end
        local d = inflight_deadline(KEYS[2], l, ARGV[1])
        return d and string.format('%d', d) or false" 2 "$NS:z:$s" "$NS:f:$s" "$1"
}

# The lease under which an ID is in flight in shard z/f: a claim's (".25")
# whose record lists it and which it did not leave for the zset since (a
# reset), or the lease it holds as its score (".5", ".75", a repeating ID's
# ".25"); nil when none; z: the shard's zset NS:z:I, its buckets NS:z:I:J
# are read too. (Lua, pasted into the helpers' scripts; it holds $_SK_LUA.)
_CLAIM_OF_LUA="$_SK_LUA
local function _claim_list(rec) -- a claim's record: { id, deadline, ... }
    local groups, flat = cmsgpack.unpack(rec)
    local list = {}
    for g = 1, #groups, 2 do
        for _, id in ipairs(groups[g + 1]) do list[#list + 1] = id; list[#list + 1] = groups[g] end
    end
    for i = 1, #flat do list[#list + 1] = flat[i] end
    return list
end
local function _claim_of(z, f, id)
    local s = _sk_get('ZSCORE', z, id)
    if s and string.find(s, '.', 1, true) then return s end
    if s then return nil end
    for _, l in ipairs(redis.call('HKEYS', f)) do
        if string.sub(l, -3) == '.25' then
            local list = _claim_list(redis.call('HGET', f, l))
            for i = 1, #list, 2 do
                if list[i] == id then return l end
            end
        end
    end
    return nil
end"
# id_home ID: the shard whose zset or in-flight records hold ID, or nothing
id_home() {
    local w
    w=$(id_where "$1")
    if [[ -n $w ]]; then echo "${w%% *}"; return; fi
    rcli EVAL "$_CLAIM_OF_LUA
        local n = tonumber(redis.call('HGET', ARGV[1] .. ':layout', 'shards') or '0')
        local p = tonumber(redis.call('HGET', ARGV[1] .. ':layout', 'prev_shards') or '0')
        if p > n then n = p end
        for s = 0, n - 1 do
            if _claim_of(ARGV[1] .. ':z:' .. s, ARGV[1] .. ':f:' .. s, ARGV[2]) then return s end
        end
        return ''" 0 "$NS" "$1"
}

# id_claimed ID: the lease under which ID is in flight (a scanner's claim:
# "<ms>.25", or ".5" / ".75" scores), nothing when it is not
id_claimed() {
    local s
    s=$(id_home "$1")
    [[ -n $s ]] || return 0
    rcli EVAL "$_CLAIM_OF_LUA
        return _claim_of(KEYS[1], KEYS[2], ARGV[1]) or ''" 2 "$NS:z:$s" "$NS:f:$s" "$1"
}

# inflight_ids SHARD: the IDs of SHARD in flight (in a claim's record, or
# leased: a fractional score), one per line
inflight_ids() {
    rcli EVAL "$_CLAIM_OF_LUA
        local out, seen, all = {}, {}, _sk_range(KEYS[1])
        for i = 1, #all, 2 do
            if string.find(all[i + 1], '.', 1, true) then out[#out + 1] = all[i]; seen[all[i]] = true end
        end
        for _, l in ipairs(redis.call('HKEYS', KEYS[2])) do
            if string.sub(l, -3) == '.25' then
                local list = _claim_list(redis.call('HGET', KEYS[2], l))
                for i = 1, #list, 2 do
                    if not seen[list[i]] and not _sk_get('ZSCORE', KEYS[1], list[i]) then
                        out[#out + 1] = list[i]; seen[list[i]] = true
                    end
                end
            end
        end
        return out" 2 "$NS:z:$1" "$NS:f:$1"
}

# inflight_set SHARD LEASE ID DEADLINE [ID DEADLINE ...]: leases those IDs
# (score LEASE) and adds them to LEASE's record in f, in one call, as
# claim.lua or take.lua would (a record without its IDs is garbage to the
# next claim); in a shard in small keys each into its bucket (bk_write)
inflight_set() {
    local s=$1 lease=$2
    shift 2
    rcli EVAL "$(lua_source lib/bucket)$(lua_source lib/inflight)
        local sh, zs = bk_open(KEYS[1], KEYS[3]), {}
        for i = 2, #ARGV, 2 do zs[#zs + 1] = ARGV[1]; zs[#zs + 1] = ARGV[i] end
        bk_write(sh, 'ZADD', 'z', zs)
        inflight_add(KEYS[2], ARGV[1], { unpack(ARGV, 2) })" 3 "$NS:z:$s" "$NS:f:$s" "$NS:p:$s" "$lease" "$@" >/dev/null
}

id_payload() { # ID: its stored payload (empty when none or not pending)
    local s
    s=$(id_shard "$1")
    [[ -z $s ]] || rcli EVAL "$_SK_LUA
        return _sk_get('HGET', KEYS[1], ARGV[1])" 1 "$NS:p:$s" "$1"
}

_sk_cli() { # PORT ARGS...: redis-cli against PORT, or rcli (the test's redis) when PORT is empty
    local p=$1
    shift
    if [[ -n $p ]]; then redis-cli -h 127.0.0.1 -p "$p" "$@"; else rcli "$@"; fi
}

# shard_z SHARD [PORT]: "ID SCORE" of every ID in SHARD's zset or buckets
# (on the server on PORT; default the test's redis), one a line (unsorted);
# shard_ids SHARD [PORT]: the IDs alone
shard_z() {
    _sk_cli "${2:-}" EVAL "$_SK_LUA
        local m, out = _sk_range(KEYS[1]), {}
        for i = 1, #m, 2 do out[#out + 1] = m[i] .. ' ' .. m[i + 1] end
        return out" 1 "$NS:z:$1"
}
shard_ids() { shard_z "$@" | cut -d' ' -f1; }

# shard_card SHARD [PORT]: how many IDs SHARD's zset or buckets hold (on
# the server on PORT; default the test's redis)
shard_card() {
    _sk_cli "${2:-}" EVAL "$_SK_LUA
        local c = 0
        for _, k in ipairs(_sk_keys(KEYS[1])) do c = c + redis.call('ZCARD', k) end
        return c" 1 "$NS:z:$1"
}

# shard_count SHARD MIN MAX: ZCOUNT over SHARD's zset or buckets
shard_count() {
    rcli EVAL "$_SK_LUA
        local c = 0
        for _, k in ipairs(_sk_keys(KEYS[1])) do c = c + redis.call('ZCOUNT', k, ARGV[1], ARGV[2]) end
        return c" 1 "$NS:z:$1" "$2" "$3"
}

# shard_get CMD KIND SHARD ID [PORT]: CMD (ZSCORE, HGET, HEXISTS, HSTRLEN)
# of ID in SHARD's key of KIND (z, p, r) or the bucket holding it; nothing
# (ZSCORE, HGET) or 0 when none holds it
shard_get() {
    _sk_cli "${5:-}" EVAL "$_SK_LUA
        local v = _sk_get(ARGV[1], KEYS[1], ARGV[2])
        if v == nil and (ARGV[1] == 'HEXISTS' or ARGV[1] == 'HSTRLEN') then return 0 end
        return v" 1 "$NS:$2:$3" "$1" "$4"
}

# shard_zrem SHARD ID: ZREM of ID from SHARD's zset or the bucket holding it
# (its payload and repeat record stay, as a plain ZREM leaves them)
shard_zrem() {
    rcli EVAL "$_SK_LUA
        local v, k = _sk_get('ZSCORE', KEYS[1], ARGV[1])
        return k and redis.call('ZREM', k, ARGV[1]) or 0" 1 "$NS:z:$1" "$2"
}

# random_ops IDS COUNT > FILE: COUNT random touch/extend/repeat/cancel lines
# (and watch with RANDOM_OPS_WATCH=1) over IDS IDs (id-0..), absolute times
# an hour or more ahead (nothing fires), 40 % with payloads; for tests that
# compare one stream applied two ways
random_ops() {
    local kinds="touch extend extend repeat cancel touch"
    [[ ${RANDOM_OPS_WATCH:-0} == 1 ]] && kinds+=" watch watch"
    awk -v seed="$RANDOM" -v base="$(($(now_ms) + 3600000))" -v ids="$1" -v n="$2" -v kinds="$kinds" 'BEGIN {
        srand(seed)
        nk = split(kinds, ops, " ")
        for (i = 0; i < n; i++) {
            op = ops[int(rand() * nk) + 1]; id = "id-" int(rand() * ids)
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
# and watch records), one a line ":z:I ID SCORE", sorted: two namespaces
# with equal output hold equal deadlines, payloads, repeats and recovery
# (a bucket's records under its shard's key: where the buckets split does
# not count)
ns_records() {
    local k sk
    for k in $(rcli --scan --pattern "$1:[zpro]:*" | sort); do
        sk=${k#"$1"}
        [[ $sk =~ ^(:[zpro]:[0-9]+):[0-9]+$ ]] && sk=${BASH_REMATCH[1]}
        case $k in
        *:z:*) rcli ZRANGE "$k" 0 -1 WITHSCORES | paste - - | sed "s|^|$sk |" ;;
        *) rcli HGETALL "$k" | paste - - | sed "s|^|$sk |" ;;
        esac
    done | sort
}

# ids_state ID...: "ID SCORE HAS_PAYLOAD" per ID (SCORE "-" when no shard
# holds it, HAS_PAYLOAD 0/1), one EVAL for all: a snapshot taken fast enough
# that deadlines do not pass while a loaded machine checks ID after ID
ids_state() {
    rcli EVAL "$_SK_LUA
        local n = tonumber(redis.call('HGET', ARGV[1] .. ':layout', 'shards') or '0')
        local p = tonumber(redis.call('HGET', ARGV[1] .. ':layout', 'prev_shards') or '0')
        if p > n then n = p end
        local out = {}
        for i = 2, #ARGV do
            local sc, pl = '-', 0
            for s = 0, n - 1 do
                sc = _sk_get('ZSCORE', ARGV[1] .. ':z:' .. s, ARGV[i]) or sc
                pl = math.max(pl, _sk_get('HEXISTS', ARGV[1] .. ':p:' .. s, ARGV[i]) or 0)
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

# SCORE: a lease (a claim's "<ms>.25"; ".5": a claim of lapse before
# 2026-11-26; not a take's ".75")
is_lease() { [[ $1 == *.5 || $1 == *.25 ]]; }

ns_leases() { # how many IDs of NS are claimed right now (in a claim's record, or score x.5)
    rcli EVAL "$_CLAIM_OF_LUA
        local c = 0
        for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
            local m = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
            for i = 2, #m, 2 do
                if string.sub(m[i], -2) == '.5' then c = c + 1 end
            end
        end
        for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':f:*')) do
            for _, l in ipairs(redis.call('HKEYS', k)) do
                if string.sub(l, -3) == '.25' then
                    c = c + #_claim_list(redis.call('HGET', k, l)) / 2
                end
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

# ids_held PORT: "ID SCORE" of every ID in a shard zset of NS that the
# server on PORT holds, one a line
ids_held() {
    redis-cli -p "$1" EVAL "local out = {}
        for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
            local z = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
            for i = 1, #z, 2 do out[#out + 1] = z[i] .. ' ' .. z[i + 1] end
        end return out" 0 "$NS"
}

# ids_by_node LOST HEALTHY N: the sorted IDs the servers named LOST and
# HEALTHY hold into on_lost.txt and on_healthy.txt; fails unless they hold
# N between them and each holds some
ids_by_node() {
    ids_held "$(redis_port "$1")" | cut -d' ' -f1 | sort >on_lost.txt
    ids_held "$(redis_port "$2")" | cut -d' ' -f1 | sort >on_healthy.txt
    assert_eq "$(cat on_lost.txt on_healthy.txt | sort -u | wc -l)" "$3" "IDs on $1 and $2"
    assert_ge "$(wc -l <on_lost.txt)" 1 "IDs on $1"
    assert_ge "$(wc -l <on_healthy.txt)" 1 "IDs on $2"
}

# zset_of NAME ID SHARDS: sets ZSET to the key of the shard zset (of
# 0..SHARDS-1), or of the bucket of a shard in small keys, that holds ID on
# the server named NAME; fails when none does
zset_of() {
    local s k
    for ((s = 0; s < $3; s++)); do
        k=$(redis-cli -p "$(redis_port "$1")" EVAL "$_SK_LUA
            local v, k = _sk_get('ZSCORE', KEYS[1], ARGV[1])
            return k or ''" 1 "$NS:z:$s" "$2")
        [[ -n $k ]] && { ZSET=$k; return 0; }
    done
    fail "no shard of $1 holds $2"
}
