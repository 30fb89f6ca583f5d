# tests/bench/scanner-burst.sh — section 0 of `make bench-scanner` (sourced
# by tests/bench/scanner-run, whose helpers and Redis it uses): what Redis
# spends per fired ID when a burst falls due, against the least it can spend.
#
# BURST_N IDs (12 bytes, no payload) fall due within one second over
# BURST_SHARDS shards of the one Redis (deadlines spread evenly over 1000 ms),
# put straight into the shard zsets before the first one is due:
#   (a) the limit: the same members removed by one loop per shard, in
#       parallel, each call one script: ZRANGEBYSCORE -inf now LIMIT 0 1000
#       and one ZREM of what it read (lapse-bench-scanner-redis remove);
#   (b) lapse: BURST_SHARDS scanners, started (lease held, Kafka connected)
#       before the load, drain it: timed until every shard's zset and
#       in-flight records are empty (every ID claimed, sent, acknowledged,
#       settled); the events are read back for lateness, early and lost;
#   (c) with BURST_BASE_BIN=DIR (the bin/ of another build, e.g. the previous
#       commit in a `git worktree`): (b) with that build's scanners, in the
#       same run, on the same Redis.
# Redis CPU per fired ID is the INFO cpu delta (user + sys) over the drain /
# BURST_N; the scanners' own CPU is their /proc utime + stime over the same
# time / BURST_N. Drain = last event's fired_ms - the first deadline. The
# drain is watched every 50 ms (the watch's own commands count in Redis's
# CPU). BURST_ROUNDS rounds of (a), (b) (and (c)) in turn; the ratios are
# per round, the report gives each and their median: on a shared 2-core
# machine one round's figures move by a third.

BURST_N=${BURST_N:-$([[ $QUICK == 1 ]] && echo 200000 || echo 1000000)}
BURST_SHARDS=${BURST_SHARDS:-8}
BURST_ROUNDS=${BURST_ROUNDS:-$([[ $QUICK == 1 ]] && echo 1 || echo 3)}
BURST_BASE_BIN=${BURST_BASE_BIN:-}
[[ $BURST_N =~ ^[0-9]+$ ]] && ((BURST_N > 0 && BURST_N <= 5000000)) || die "BURST_N: 1 to 5000000"
[[ $BURST_SHARDS =~ ^(1|2|4|8|16|32)$ ]] || die "BURST_SHARDS: a power of two up to 32"
[[ $BURST_ROUNDS =~ ^[1-3]$ ]] || die "BURST_ROUNDS: 1 to 3" # (a topic each: bench.burst1..3)

# burst_lapse NAME BIN TOPIC [FORM]: (b) with the scanners of BIN, the
# namespace in one zset a shard; with FORM small (d) in small keys: the IDs
# loaded as for (b) are moved into their buckets before the first is due
# (lib/bucket.lua's bk_drain and bk_grow, untimed); sets BURST_ROW
burst_lapse() {
    local name=$1 sbin=$2 topic=$3 form=${4:-one} conf=$tmp/burst-$1.conf due first c0 c1 s0 s1 out stats
    local margin=$((2500 + BURST_N / 200)) w_end
    [[ $form == one ]] || margin=$((margin + BURST_N / 40))
    write_conf "$conf" "$topic"
    reset_redis
    scale -c "$conf" init "$BURST_SHARDS" $([[ $form == one ]] && echo --one-zset) >/dev/null ||
        die "lapse-scale init failed"
    local keep_bin=$bin
    bin=$sbin
    for ((s = 0; s < BURST_SHARDS; s++)); do scanner_start "$conf" "$s"; done
    bin=$keep_bin
    scanners_active "$conf" "$BURST_SHARDS"
    due=$(($(now_ms) + margin))
    first=$((due - 999))
    out=$(timeout 120 "$hr" load 127.0.0.1 "$port" "$NS" "$BURST_SHARDS" "$BURST_N" "$due" burst- 1000) ||
        die "load failed"
    if [[ $form != one ]]; then
        local drain_lua s n
        # (and grown as a producer's writes would have had them: bk_grow)
        drain_lua="$(sh scripts/lua-source common/lua/lib/bucket.lua)
local sh = bk_open(KEYS[1], KEYS[2])
return bk_drain(sh, tonumber(ARGV[1])) + bk_grow(sh, 64)"
        for ((s = 0; s < BURST_SHARDS; s++)); do
            for ((n = 0; n < 100000; n++)); do
                [[ $(rc EVAL "$drain_lua" 2 "$NS:z:$s" "$NS:p:$s" 5000) == 0 ]] && break
            done
        done
    fi
    (($(now_ms) < first)) || echo "   WARNING: loading took longer than ${margin} ms; IDs were due before it ended"
    rc CONFIG RESETSTAT >/dev/null
    sleep_until_ms "$first"
    c0=$(redis_cpu)
    cpu_mark s0
    out=$(timeout 200 "$hr" watch 127.0.0.1 "$port" "$NS" "$BURST_SHARDS" "$first" 180000 50) ||
        die "the scanners did not drain $BURST_N IDs within 180 s"
    cpu_mark s1
    c1=$(redis_cpu)
    local left
    left=$(rc EVAL "local n = 0
        for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do n = n + redis.call('ZCARD', k) end
        return n" 0 "$NS")
    ((left == 0)) || echo "   WARNING: $left IDs still pending when the watch saw none ($(rc GET "$NS:k:0"), top index $(rc ZCARD "$NS:x:0"), records $(rc HLEN "$NS:f:0"))"
    commandstats >"$tmp/burst-$name.cmds"
    scanners_stop
    read_events "$topic" "$BURST_N" "$tmp/burst-$name.events"
    stats=$("$bin/lapse-bench-scanner-stats" <"$tmp/burst-$name.events" | head -n 1)
    rm -f "$tmp/burst-$name.events"
    local redis_us scan_us last drain
    redis_us=$(awk -v a="$c0" -v b="$c1" -v n="$BURST_N" 'BEGIN { printf "%.3f", (b - a) * 1e6 / n }')
    scan_us=$(awk -v hz="$clk_tck" -v a="$s0" -v b="$s1" -v n="$BURST_N" \
        'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.3f", (y[4] - x[4]) / hz * 1e6 / n }')
    last=$(stat_field "$stats" last_fired_ms)
    drain=$(awk -v l="$last" -v f="$first" 'BEGIN { if (l == "-" || l == "null") print "null"; else printf "%.3f", (l - f) / 1000 }')
    BURST_ROW=$(printf '{"name":"%s","redis_cpu_us_per_id":%s,"scanner_cpu_us_per_id":%s,"drain_s":%s,"ids_per_s":%s,"events":%s,"cpu_cores":%s,"commands":%s}' \
        "$name" "$redis_us" "$scan_us" "$drain" "$(fdiv "$BURST_N" "$drain")" "$stats" \
        "$(cpu_share "$s0" "$s1")" "$(cmdstats_json "$tmp/burst-$name.cmds" "$BURST_N" id)")
}

burst_line() { # ROW: one report line
    jq -r --argjson n "$BURST_N" '"\(.name): Redis \(.redis_cpu_us_per_id) us/ID, scanners \(.scanner_cpu_us_per_id) us/ID; drained in \(.drain_s) s (\(.ids_per_s | floor) IDs/s); lateness p50 \(.events.p50_ms) ms, p99 \(.events.p99_ms) ms; events \(.events.events), distinct \(.events.distinct) (lost \($n - .events.distinct)), early \(.events.early)"' <<<"$1"
}

# burst_remove: (a) once; sets REMOVE_US and REMOVE_CMDS
burst_remove() {
    local due c0 c1 s pids=() ids
    reset_redis
    due=$(($(now_ms) + 1500 + BURST_N / 200))
    timeout 120 "$hr" load 127.0.0.1 "$port" "$NS" "$BURST_SHARDS" "$BURST_N" "$due" burst- 1000 >/dev/null ||
        die "load failed"
    rc CONFIG RESETSTAT >/dev/null
    sleep_until_ms "$due"
    c0=$(redis_cpu)
    for ((s = 0; s < BURST_SHARDS; s++)); do
        "$hr" remove 127.0.0.1 "$port" "$NS" "$s" "$due" 1000 120000 >"$tmp/remove-$s.out" 2>&1 &
        pids+=("$!")
        bg_pids+=("$!")
    done
    for s in "${pids[@]}"; do wait_pid "$s" 150 || die "removal loop failed: $(cat "$tmp"/remove-*.out)"; done
    c1=$(redis_cpu)
    commandstats >"$tmp/burst-remove.cmds"
    ids=$(cat "$tmp"/remove-*.out | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "ids") n += kv[2] } } END { print n + 0 }')
    ((ids == BURST_N)) || echo "   WARNING: the removal loops removed $ids of $BURST_N IDs"
    rm -f "$tmp"/remove-*.out
    REMOVE_US=$(awk -v a="$c0" -v b="$c1" -v n="$BURST_N" 'BEGIN { printf "%.3f", (b - a) * 1e6 / n }')
    REMOVE_CMDS=$(cmdstats_json "$tmp/burst-remove.cmds" "$BURST_N" id)
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "null" }'; }

section_burst() {
    local rows=() r ratio round ratios_b="" ratios_c="" ratios_d="" rates="" removes=""
    echo "0. burst: $(fmt_int "$BURST_N") IDs (12 bytes, no payload) due within one second over $BURST_SHARDS shards, $BURST_ROUNDS round(s)"
    echo "   (a) limit: the same members removed, 1000 a call (ZRANGEBYSCORE -inf now LIMIT 0 1000 + ZREM), $BURST_SHARDS loops"
    echo "   (b) lapse: $BURST_SHARDS scanners started beforehand, timed until every zset and in-flight record is empty"
    echo "   (d) the same with the namespace in small keys (the IDs moved into their buckets beforehand)"
    if [[ -n $BURST_BASE_BIN ]]; then
        mkdir -p "$tmp/base-bin" # a private copy, as of bin/
        cp "$BURST_BASE_BIN/lapse-scanner" "$tmp/base-bin/" || die "BURST_BASE_BIN: no lapse-scanner in $BURST_BASE_BIN"
        echo "   (c) base: the same with the scanners of $BURST_BASE_BIN"
    fi
    for ((round = 1; round <= BURST_ROUNDS; round++)); do
        burst_remove
        removes+="$REMOVE_US "
        echo "   round $round: (a) removal alone: Redis $REMOVE_US us/ID"
        echo "       Redis per ID: $(jq -r '[.[:4][] | "\(.cmd) \(.calls_per_id)x \(.us_per_id)us"] | join(", ")' <<<"$REMOVE_CMDS")"
        # ((d) first: it reads its events back from a fresher Kafka)
        burst_lapse small "$bin" "bench.burstsmall$round" small
        local row_b= row_c= row_d=$BURST_ROW
        burst_lapse lapse "$bin" "bench.burst$round"
        row_b=$BURST_ROW
        if [[ -n $BURST_BASE_BIN ]]; then
            burst_lapse base "$tmp/base-bin" "bench.burstbase$round"
            row_c=$BURST_ROW
        fi
        for r in "$row_b" d $([[ -n $row_c ]] && echo c); do
            [[ $r == c ]] && r=$row_c
            [[ $r == d ]] && r=$row_d
            ratio=$(awk -v a="$(jq -r .redis_cpu_us_per_id <<<"$r")" -v b="$REMOVE_US" 'BEGIN { printf "%.2f", a / b }')
            r=$(jq -c --argjson x "$ratio" --argjson u "$REMOVE_US" --argjson k "$round" '. + {round: $k, remove_redis_cpu_us_per_id: $u, ratio: $x}' <<<"$r")
            rows+=("$r")
            printf '   round %s: (%s) %s\n' "$round" "$(case $(jq -r .name <<<"$r") in lapse) echo b ;; small) echo d ;; *) echo c ;; esac)" "$(burst_line "$r")"
            printf '       Redis per fired ID / removal alone: %.2f\n' "$ratio"
            echo "       $(cpu_line "$(jq -c .cpu_cores <<<"$r")")"
            echo "       Redis per ID: $(jq -r '[.commands[:6][] | "\(.cmd) \(.calls_per_id)x \(.us_per_id)us"] | join(", ")' <<<"$r")"
            case $(jq -r .name <<<"$r") in
            lapse) ratios_b+="$ratio " ;;
            small) ratios_d+="$ratio " ;;
            *) ratios_c+="$ratio " ;;
            esac
        done
        if [[ -n $row_c ]]; then
            rates+="$(awk -v a="$(jq -r .ids_per_s <<<"$row_b")" -v b="$(jq -r .ids_per_s <<<"$row_c")" 'BEGIN { printf "%.2f", a / b }') "
        fi
    done
    local med_b med_c med_rate
    med_b=$(median <<<"$ratios_b")
    printf '   Redis per fired ID / removal alone, (b) lapse: %s; median %s  (target <= 1.3: %s)\n' \
        "$ratios_b" "$med_b" "$(verdict "$med_b" '<=' 1.3)"
    local med_d
    med_d=$(median <<<"$ratios_d")
    printf '   Redis per fired ID / removal alone, (d) small keys: %s; median %s  (over (b): %s, target <= 1.2)\n' \
        "$ratios_d" "$med_d" "$(awk -v d="$med_d" -v b="$med_b" 'BEGIN { printf "%.2f", d / b }')"
    if [[ -n $BURST_BASE_BIN ]]; then
        med_c=$(median <<<"$ratios_c")
        med_rate=$(median <<<"$rates")
        printf '   Redis per fired ID / removal alone, (c) base: %s; median %s\n' "$ratios_c" "$med_c"
        printf '   drain rate (b) / (c): %s; median %s  (target >= 1.25: %s)\n' "$rates" "$med_rate" "$(verdict "$med_rate" '>=' 1.25)"
    fi
    echo
    burst_json=$(printf '{"ids":%s,"shards":%s,"rounds":%s,"remove_redis_cpu_us_per_id":[%s],"remove_commands":%s,"target_ratio":1.3,"median_ratio":%s,"median_ratio_small":%s,"median_ratio_base":%s,"median_drain_rate_over_base":%s,"runs":[%s]}' \
        "$BURST_N" "$BURST_SHARDS" "$BURST_ROUNDS" "$(tr ' ' '\n' <<<"$removes" | grep . | paste -sd,)" "$REMOVE_CMDS" \
        "$med_b" "${med_d:-null}" "${med_c:-null}" "${med_rate:-null}" "$(IFS=,; echo "${rows[*]}")")
}
