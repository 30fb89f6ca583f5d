# tests/lib/split.sh — part of tests/lib.sh (sourced by it, never alone):
# the split tests' nodes, producers, workload (sp_workload) and its checks
# (sp_wait_delivered, sp_check).

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
                if s then r[#r + 1] = (string.match(k, ':z:(%d+)') or string.match(k, ':(%d+)}')) .. ' ' .. s end
            end
            return r" 0 "$NS" "$1"
    done | sed '/^$/d' # (a node without it answers an empty line)
}

# sp_where_all ID...: "ID SHARD SCORE" for every (ID, shard zset of NS) that
# holds it, one EVAL per node: a snapshot of many IDs at one moment (calling
# sp_where per ID takes tens of ms each, long enough for IDs to fire meanwhile).
# With SP_WHERE_PAYLOAD=1 a fourth field says whether the shard holds a
# payload for it (1) or not (0).
sp_where_all() {
    local p
    for p in $(_sp_ports); do
        sp_cli "$p" EVAL "local r = {}
            for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
                local sh = (string.match(k, ':z:(%d+)') or string.match(k, ':(%d+)}'))
                local pk = string.gsub(k, ':z:', ':p:', 1)
                for i = 3, #ARGV do
                    local s = redis.call('ZSCORE', k, ARGV[i])
                    if s then
                        local line = ARGV[i] .. ' ' .. sh .. ' ' .. s
                        if ARGV[2] == '1' then line = line .. ' ' .. redis.call('HEXISTS', pk, ARGV[i]) end
                        r[#r + 1] = line
                    end
                end
            end
            return r" 0 "$NS" "${SP_WHERE_PAYLOAD:-0}" "$@"
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
# (producer/lib/send.c). A test can run both ways (e.g. 0551 runs 0550).
# SP_INIT_ARGS go to init (0501: --small-keys).
sp_start() {
    redis_start main
    kafka_start --brokers 1
    if [[ ${SP_TWO_NODES:-0} == 1 ]]; then
        redis_start two
        SP_PORTS=("$(redis_port main)")
        sp_write_config
        scale init 2 ${SP_INIT_ARGS:-} >/dev/null
        SP_PORTS+=("$(redis_port two)")
        sp_write_config
    else
        write_config
        scale init 2 ${SP_INIT_ARGS:-} >/dev/null
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
    # one write(2) per line: a pipe write that short is atomic, so lines
    # another writer sends meanwhile (a test's background stream) land
    # between these, never inside one (cat's large writes get split)
    awk '{ print; fflush() }' "$file" >&"$fd"
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

# ---------------------------------------------------------------- merge helpers
# (tests/integration/059N-merge-*.sh: a merge is the split run backwards, so
# its tests use the split's workload and checks with OLD_N 4 and NEW_N 2)

# sp_merge_start: sp_start, then a split 2 -> 4 (its new shards on redis
# "two" with SP_TWO_NODES=1: each pair of the merge then spans two nodes)
# finished at once, scanners on all 4 shards: a stable namespace of 4
# shards, ready to merge back into 2.
sp_merge_start() {
    sp_start
    sp_split >/dev/null || fail "split 2 -> 4: exit status $?"
    scanner_start 2
    scanner_start 3
    scale finish >/dev/null || fail "finish 2 -> 4: exit status $?"
    assert_eq "$(sp_status '[.state, .shards] | @tsv' | tr '\t' ' ')" "stable 4" "layout before the merge"
}

# sp_finish_merge SHARDS EPOCH: as sp_finish, for a merge: `finish` until it
# succeeds (the retiring shards' last claims settle within a Kafka round
# trip), within 10 s
sp_finish_merge() {
    wait_until 5000 '[[ $(sp_status .to_move) == 0 ]]' ||
        fail "IDs still in retiring shards: $(scale status)"
    wait_until 10000 'scale finish >finish.out 2>finish.err' ||
        fail "finish: $(cat finish.err)"
    assert_eq "$(sp_status '[.state, .shards, .prev_shards, .epoch] | @tsv' | tr '\t' ' ')" \
        "stable $1 $1 $2" "state, shards, prev_shards, epoch after finish"
}

# sp_wait_retired SHARD...: every scanner of each SHARD stops by itself,
# exit status 0, within 10 s (a merge retired the shard), saying why
sp_wait_retired() {
    local s n pid rc
    for s in "$@"; do
        for n in "${_NAMES[@]}"; do
            [[ $n == scanner-$s || $n == scanner-$s.* ]] || continue
            [[ ${_WATCH[$n]} == 1 ]] || continue
            _WATCH[$n]=0
            pid=${_PID[$n]}
            wait_until 10000 "! _pid_alive $pid" || fail "$n still runs 10 s after its shard retired"
            rc=0
            wait "$pid" 2>/dev/null || rc=$?
            assert_eq "$rc" 0 "$n's exit status once its shard retired"
            assert_file_match "$T/$n.log" "retired by a merge" "$n's last word"
        done
    done
}

sp_get() { # KEY: its value on whichever node of the test holds it
    local p
    for p in $(_sp_ports); do sp_cli "$p" GET "$1"; done | sed '/^$/d' | head -n 1
}

# sp_retired_keys SHARD: the keys of SHARD left on any node (a retired
# shard keeps its epoch fence NS:e:SHARD only; its lock goes with its scanner)
sp_retired_keys() {
    local p
    for p in $(_sp_ports); do
        sp_cli "$p" EVAL "local r = {}
            for _, pat in ipairs({ ARGV[1] .. ':?:' .. ARGV[2], ARGV[1] .. ':?:' .. ARGV[2] .. ':*',
                                   ARGV[1] .. ':?:{' .. ARGV[1] .. ':' .. ARGV[2] .. '}*' }) do
                for _, k in ipairs(redis.call('KEYS', pat)) do r[#r + 1] = k end
            end
            return r" 0 "$NS" "$1"
    done | sed '/^$/d' | sort -u
}
