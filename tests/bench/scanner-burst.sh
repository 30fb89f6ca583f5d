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
#   (b) runs once per form of BENCH_FORMS: "one" (a zset per shard, loaded
#       as above) and "small" (small keys: `init --small-keys`, the IDs put
#       straight into the buckets a scanner grows the shards to, with their
#       index: lapse-bench-scanner-redis load-small; the drain is timed
#       until the zsets, the indexes and the in-flight records are empty,
#       and the timed phase starts only once every state key NS:k:S stayed
#       the same for 1 s, or warns when the first deadline came first);
#       both against the same (a) of the round;
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
# namespace in FORM (one, small; one by default); sets BURST_ROW
burst_lapse() {
    local name=$1 sbin=$2 topic=$3 form=${4:-one} conf=$tmp/burst-$1.conf due first c0 c1 s0 s1 out stats
    local margin=$((2500 + BURST_N / 200)) w_end grow=null
    [[ $form == small ]] && margin=$((margin + 2000 + BURST_N / 500)) # (sorting the load, and the wait for splits)
    write_conf "$conf" "$topic"
    reset_redis
    init_form "$conf" "$BURST_SHARDS" "$form"
    local keep_bin=$bin
    bin=$sbin
    for ((s = 0; s < BURST_SHARDS; s++)); do scanner_start "$conf" "$s"; done
    bin=$keep_bin
    scanners_active "$conf" "$BURST_SHARDS"
    due=$(($(now_ms) + margin))
    first=$((due - 999))
    out=$(timeout 120 "$hr" "$(hr_cmd load "$form")" 127.0.0.1 "$port" "$NS" "$BURST_SHARDS" "$BURST_N" "$due" burst- 1000) ||
        die "load failed"
    (($(now_ms) < first)) || echo "   WARNING: loading took longer than ${margin} ms; IDs were due before it ended"
    if [[ $form == small ]]; then
        local load_ms=$((margin - (due - $(now_ms))))
        wait_grown "$BURST_SHARDS" $((first - 300 - $(now_ms)))
        ((GROWN == 1)) || echo "   WARNING: small keys: the state keys still changed when the first ID fell due"
        grow=$(printf '{"settled":%s,"load_ms":%s,"wait_ms":%s,"states":%s}' "$([[ $GROWN == 1 ]] && echo true || echo false)" \
            "$load_ms" "$GROWN_MS" "$(json_str "$GROWN_STATES")")
    fi
    rc CONFIG RESETSTAT >/dev/null
    sleep_until_ms "$first"
    c0=$(redis_cpu)
    cpu_mark s0
    out=$(timeout 200 "$hr" "$(hr_cmd watch "$form")" 127.0.0.1 "$port" "$NS" "$BURST_SHARDS" "$first" 180000 50) ||
        die "the scanners did not drain $BURST_N IDs within 180 s"
    cpu_mark s1
    c1=$(redis_cpu)
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
    BURST_ROW=$(printf '{"name":"%s","form":"%s","small_keys":%s,"redis_cpu_us_per_id":%s,"scanner_cpu_us_per_id":%s,"drain_s":%s,"ids_per_s":%s,"events":%s,"cpu_cores":%s,"commands":%s}' \
        "$name" "$form" "$grow" "$redis_us" "$scan_us" "$drain" "$(fdiv "$BURST_N" "$drain")" "$stats" \
        "$(cpu_share "$s0" "$s1")" "$(cmdstats_json "$tmp/burst-$name.cmds" "$BURST_N" id)")
}

burst_line() { # ROW: one report line
    jq -r --argjson n "$BURST_N" '"\(.name)\(if .form == "small" then " (small keys)" else "" end): Redis \(.redis_cpu_us_per_id) us/ID, scanners \(.scanner_cpu_us_per_id) us/ID; drained in \(.drain_s) s (\(.ids_per_s | floor) IDs/s); lateness p50 \(.events.p50_ms) ms, p99 \(.events.p99_ms) ms, max \(.events.max_ms) ms; events \(.events.events), distinct \(.events.distinct) (lost \($n - .events.distinct)), early \(.events.early)"' <<<"$1"
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
    local rows=() r ratio round ratios_b="" ratios_s="" ratios_c="" rates="" removes="" f row_b row_c tag
    echo "0. burst: $(fmt_int "$BURST_N") IDs (12 bytes, no payload) due within one second over $BURST_SHARDS shards, $BURST_ROUNDS round(s)"
    echo "   (a) limit: the same members removed, 1000 a call (ZRANGEBYSCORE -inf now LIMIT 0 1000 + ZREM), $BURST_SHARDS loops"
    echo "   (b) lapse: $BURST_SHARDS scanners started beforehand, timed until every zset and in-flight record is empty;"
    echo "       forms: $BENCH_FORMS (one = a zset per shard, small = small keys: buckets + index, grown before the timing)"
    if [[ -n $BURST_BASE_BIN ]]; then
        mkdir -p "$tmp/base-bin" # a private copy, as of bin/
        cp "$BURST_BASE_BIN/lapse-scanner" "$tmp/base-bin/" || die "BURST_BASE_BIN: no lapse-scanner in $BURST_BASE_BIN"
        echo "   (c) base: the same with the scanners of $BURST_BASE_BIN (one zset)"
    fi
    for ((round = 1; round <= BURST_ROUNDS; round++)); do
        burst_remove
        removes+="$REMOVE_US "
        echo "   round $round: (a) removal alone: Redis $REMOVE_US us/ID"
        echo "       Redis per ID: $(jq -r '[.[:4][] | "\(.cmd) \(.calls_per_id)x \(.us_per_id)us"] | join(", ")' <<<"$REMOVE_CMDS")"
        local round_rows=()
        row_b=
        for f in $BENCH_FORMS; do
            if [[ $f == one ]]; then
                burst_lapse lapse "$bin" "bench.burst$round" one
                row_b=$BURST_ROW
            else
                burst_lapse small "$bin" "bench.burstsmall$round" small
            fi
            round_rows+=("$BURST_ROW")
        done
        row_c=
        if [[ -n $BURST_BASE_BIN ]]; then
            burst_lapse base "$tmp/base-bin" "bench.burstbase$round" one
            row_c=$BURST_ROW
            round_rows+=("$row_c")
        fi
        for r in "${round_rows[@]}"; do
            ratio=$(awk -v a="$(jq -r .redis_cpu_us_per_id <<<"$r")" -v b="$REMOVE_US" 'BEGIN { printf "%.2f", a / b }')
            r=$(jq -c --argjson x "$ratio" --argjson u "$REMOVE_US" --argjson k "$round" '. + {round: $k, remove_redis_cpu_us_per_id: $u, ratio: $x}' <<<"$r")
            rows+=("$r")
            case $(jq -r .name <<<"$r") in
            lapse) tag=b ratios_b+="$ratio " ;;
            small) tag=b ratios_s+="$ratio " ;;
            *) tag=c ratios_c+="$ratio " ;;
            esac
            printf '   round %s: (%s) %s\n' "$round" "$tag" "$(burst_line "$r")"
            printf '       Redis per fired ID / removal alone: %.2f\n' "$ratio"
            [[ $(jq -r .form <<<"$r") == small ]] &&
                echo "       small keys: $(jq -r '.small_keys | "state keys (b s) \(.states); loaded in \(.load_ms) ms, then \(.wait_ms) ms until they stayed the same\(if .settled then "" else " (NOT SETTLED)" end)"' <<<"$r")"
            echo "       $(cpu_line "$(jq -c .cpu_cores <<<"$r")")"
            echo "       Redis per ID: $(jq -r '[.commands[:6][] | "\(.cmd) \(.calls_per_id)x \(.us_per_id)us"] | join(", ")' <<<"$r")"
        done
        if [[ -n $row_c && -n $row_b ]]; then
            rates+="$(awk -v a="$(jq -r .ids_per_s <<<"$row_b")" -v b="$(jq -r .ids_per_s <<<"$row_c")" 'BEGIN { printf "%.2f", a / b }') "
        fi
    done
    local med_b med_s med_c med_rate
    med_b=$(median <<<"$ratios_b")
    med_s=$(median <<<"$ratios_s")
    [[ -n $ratios_b ]] && printf '   Redis per fired ID / removal alone, (b) lapse, one zset: %s; median %s  (target <= 1.3: %s)\n' \
        "$ratios_b" "$med_b" "$(verdict "$med_b" '<=' 1.3)"
    [[ -n $ratios_s ]] && printf '   Redis per fired ID / removal alone, (b) lapse, small keys: %s; median %s  (target <= 1.3: %s)\n' \
        "$ratios_s" "$med_s" "$(verdict "$med_s" '<=' 1.3)"
    if [[ -n $BURST_BASE_BIN ]]; then
        med_c=$(median <<<"$ratios_c")
        med_rate=$(median <<<"$rates")
        printf '   Redis per fired ID / removal alone, (c) base: %s; median %s\n' "$ratios_c" "$med_c"
        [[ -n $rates ]] && printf '   drain rate (b) / (c): %s; median %s  (target >= 1.25: %s)\n' "$rates" "$med_rate" "$(verdict "$med_rate" '>=' 1.25)"
    fi
    # the forms side by side: medians over the rounds
    printf '   %-11s %14s %8s %9s %9s %9s %9s %16s\n' form "Redis us/ID" "ratio" "drain s" "p50 ms" "p99 ms" "max ms" "other+steal CPU"
    local all
    all=$(printf '%s\n' "${rows[@]}" | jq -s -c .)
    for f in $BENCH_FORMS; do
        jq -r --arg f "$f" 'def med: sort | .[(length - 1) / 2 | floor];
            [.[] | select(.form == $f and .name != "base")] |
            [([.[].redis_cpu_us_per_id] | med), ([.[].ratio] | med), ([.[].drain_s] | med),
             ([.[].events.p50_ms] | med), ([.[].events.p99_ms] | med), ([.[].events.max_ms] | med),
             ([.[] | .cpu_cores.other + .cpu_cores.steal] | med)] | @tsv' <<<"$all" |
            while IFS=$'\t' read -r u x d p50 p99 mx o; do
                printf '   %-11s %14s %8s %9s %9s %9s %9s %16.2f\n' "$(form_label "$f")" "$u" "$x" "$d" "$p50" "$p99" "$mx" "$o"
            done
    done
    echo "   (medians over the rounds; ratio = Redis per fired ID / removal alone of the same round)"
    echo
    burst_json=$(printf '{"ids":%s,"shards":%s,"rounds":%s,"forms":%s,"remove_redis_cpu_us_per_id":[%s],"remove_commands":%s,"target_ratio":1.3,"median_ratio":%s,"median_ratio_small":%s,"median_ratio_base":%s,"median_drain_rate_over_base":%s,"runs":[%s]}' \
        "$BURST_N" "$BURST_SHARDS" "$BURST_ROUNDS" "$(json_str "$BENCH_FORMS")" "$(tr ' ' '\n' <<<"$removes" | grep . | paste -sd,)" "$REMOVE_CMDS" \
        "$med_b" "$med_s" "${med_c:-null}" "${med_rate:-null}" "$(IFS=,; echo "${rows[*]}")")
}
