# tests/bench/scanner-split.sh — section 3 of tests/bench/scanner-run
# (sourced by it, never alone): what an online split does to a loaded
# pipeline. Its helpers and globals (tmp, port, the scanners, the CPU
# accounting) are scanner-run's.

# feed_phase PROGRESS FROM TO: "rate worst_1s max_lag_ms" of the feeder over
# [FROM, TO): lines/s over the phase; the fewest lines/s in any window of at
# least 1 s between two samples that ends inside the phase (a stalled
# producer shows there even when the feeder catches up afterwards); the
# largest lag.
feed_phase() {
    awk -v a="$2" -v b="$3" '{ t[NR] = $1; n[NR] = $2; lag[NR] = $3 }
        END { na = 0; nb = 0; min = -1; ml = 0; i = 0
              for (j = 1; j <= NR; j++) {
                  if (t[j] <= a) na = n[j]; if (t[j] <= b) nb = n[j]
                  if (t[j] >= a && t[j] < b && lag[j] > ml) ml = lag[j]
                  if (t[j] <= a || t[j] > b) continue
                  while (i + 1 < j && t[i + 1] <= t[j] - 1000) i++
                  if (i < 1 || t[i] > t[j] - 1000) continue
                  r = (n[j] - n[i]) * 1000 / (t[j] - t[i]); if (min < 0 || r < min) min = r
              }
              printf "%.1f %.1f %d\n", (nb - na) * 1000 / (b - a), min, ml }' "$1"
}

# feed_seconds PROGRESS FROM TO: the feeder's lines/s in each second from
# FROM (the last sample at or before each second's end), e.g. "41k 96k 130k"
feed_seconds() {
    awk -v a="$2" -v b="$3" '{ t[NR] = $1; n[NR] = $2 }
        END { j = 1; prev = -1
              for (s = a; s <= b; s += 1000) {
                  while (j < NR && t[j + 1] <= s) j++
                  if (prev >= 0) printf "%s%.0fk", (s > a + 1000 ? " " : ""), (n[j] - prev) / 1000
                  prev = n[j]
              }
              print "" }' "$1"
}

# split_run NAME RATE PHASE_S: one online split 2 -> 4 under a producer
# resetting SPLIT_POP IDs at RATE lines/s (0: as fast as it takes them), with
# PHASE_S s before, during and after; prints a table and sets SPLIT_ROW (JSON).
# With RATE 0 nothing is meant to fire (every deadline is pushed on before it
# falls due): that run measures the producer's capacity per phase only.
split_run() {
    local name=$1 rate=$2 phase=$3 conf=$tmp/split-$1.conf topic=bench.split$1 cycle hold fire_every
    local s prod feed mports=() t_feed tb0 tb1 td0 td1 ta0 ta1 split_ms finish_ms sb0 sb1 sd0 sd1 sa0 sa1
    local lateness=1
    if ((rate > 0)); then
        cycle=$((SPLIT_POP * 1000 / rate))
        hold=$((cycle + 2000))
        fire_every=$SPLIT_FIRE_EVERY
    else
        lateness=0 cycle=null hold=10000 fire_every=1000000
    fi
    reset_redis
    for s in 0 1 2 3; do
        mports[s]=$(free_port)
        write_conf "$tmp/split-$name-$s.conf" "$topic" "${mports[s]}"
    done
    write_conf "$conf" "$topic"
    scale -c "$conf" init 2 >/dev/null || die "lapse-scale init failed"
    scanner_start "$tmp/split-$name-0.conf" 0
    scanner_start "$tmp/split-$name-1.conf" 1
    scanners_active "$conf" 2

    rm -f "$tmp/split.fifo"
    mkfifo "$tmp/split.fifo"
    "$bin/lapse-producer" -c "$conf" <"$tmp/split.fifo" 2>"$tmp/split-$name-producer.err" &
    prod=$!
    bg_pids+=("$prod")
    # SECONDS is an upper bound: the feeder is stopped by SIGTERM
    FEED_PROGRESS=$tmp/split-$name.progress "$bin/lapse-bench-scanner-feed" resets "$SPLIT_POP" "$rate" \
        $((SPLIT_WARM_S + 3 * phase + 60)) "$SPLIT_FIRE_LEAD_MS" "$hold" "$fire_every" sp- \
        >"$tmp/split.fifo" 2>"$tmp/split-$name-feed.err" &
    feed=$!
    bg_pids+=("$feed")
    producer_pids=("$prod" "$feed")
    t_feed=$(now_ms)

    tb0=$((t_feed + SPLIT_WARM_S * 1000))
    sleep_until_ms "$tb0"
    cpu_mark sb0
    rc CONFIG RESETSTAT >/dev/null
    tb1=$((tb0 + phase * 1000))
    sleep_until_ms "$tb1"
    cpu_mark sb1
    commandstats >"$tmp/split-$name-before.cmds"
    rc CONFIG RESETSTAT >/dev/null

    td0=$(now_ms)
    sd0=$sb1
    scale -c "$conf" split >"$tmp/split-$name.out" 2>&1 || die "lapse-scale split failed: $(tail -n 3 "$tmp/split-$name.out")"
    split_ms=$(($(now_ms) - td0))
    scanner_start "$tmp/split-$name-2.conf" 2
    scanner_start "$tmp/split-$name-3.conf" 3
    td1=$((td0 + phase * 1000))
    sleep_until_ms "$td1"
    cpu_mark sd1
    commandstats >"$tmp/split-$name-during.cmds"

    scale -c "$conf" finish --drain >"$tmp/finish-$name.out" 2>&1 ||
        die "lapse-scale finish --drain failed: $(tail -n 3 "$tmp/finish-$name.out")"
    ta0=$(now_ms)
    finish_ms=$((ta0 - td1))
    cpu_mark sa0
    rc CONFIG RESETSTAT >/dev/null
    ta1=$((ta0 + phase * 1000))
    sleep_until_ms "$ta1"
    cpu_mark sa1
    commandstats >"$tmp/split-$name-after.cmds"
    producer_pids=()

    kill -TERM "$feed" 2>/dev/null || true
    wait_pid "$feed" 10 || die "the feeder failed: $(tail -n 2 "$tmp/split-$name-feed.err")"
    local st=0
    wait_pid "$prod" 60 || st=$?
    ((st == 0)) || die "lapse-producer exited with status $st: $(tail -n 3 "$tmp/split-$name-producer.err")"
    local acked=0 a all=null
    if ((lateness)); then
        # (the feeder ended by cancelling every ID: only claimed ones still fire)
        timeout 90 "$hr" watch 127.0.0.1 "$port" "$NS" 4 "$(now_ms)" $((hold + 30000)) >/dev/null ||
            echo "   WARNING: IDs left in Redis $((hold / 1000 + 30)) s after the feed ended"
        sleep 1 # the acknowledgements of IDs cancelled while in flight
        for s in 0 1 2 3; do
            a=$(metric "${mports[s]}" events_acked_total)
            acked=$((acked + ${a:-0}))
        done
    fi
    scanners_stop
    if ((lateness)); then
        read_events "$topic" "$acked" "$tmp/split-$name.events"
        "$bin/lapse-bench-scanner-stats" before "$tb0" "$tb1" during "$td0" "$td1" after "$ta0" "$ta1" \
            <"$tmp/split-$name.events" >"$tmp/split-$name.stats"
        all=$(head -n 1 "$tmp/split-$name.stats")
    fi

    local rows=() ph f t s0 s1 st_json cpu r fp_rate fp_min fp_lag secs lines
    declare -A rate_of=() min_of=() p99_of=()
    if ((lateness)); then
        printf '   %-7s %5s %9s %6s %9s %8s %8s %6s %6s %7s %6s\n' "phase" "secs" "lines/s" "of" "worst 1s" \
            "stall" "fires/s" "p50" "p99" "p99.9" "max"
    else
        printf '   %-7s %5s %9s %9s %8s\n' "phase" "secs" "lines/s" "worst 1s" "stall"
    fi
    for ph in before during after; do
        case $ph in
        before) f=$tb0 t=$tb1 s0=$sb0 s1=$sb1 ;;
        during) f=$td0 t=$td1 s0=$sd0 s1=$sd1 ;;
        after) f=$ta0 t=$ta1 s0=$sa0 s1=$sa1 ;;
        esac
        read -r fp_rate fp_min fp_lag <<<"$(feed_phase "$tmp/split-$name.progress" "$f" "$t")"
        secs=$(fdiv $((t - f)) 1000)
        cpu=$(cpu_share "$s0" "$s1")
        rate_of[$ph]=$fp_rate
        min_of[$ph]=$fp_min
        st_json=null
        if ((lateness)); then
            st_json=$(grep "\"name\":\"$ph\"" "$tmp/split-$name.stats")
            p99_of[$ph]=$(stat_field "$st_json" p99_ms)
            printf '   %-7s %5.1f %9s %6s %9s %5s ms %8s %6s %6s %7s %6s\n' "$ph" "$secs" \
                "$(fmt_int "$fp_rate")" "$(pct "$(fdiv "$fp_rate" "$rate")")" "$(fmt_int "$fp_min")" "$fp_lag" \
                "$(fmt_int "$(fdiv "$(stat_field "$st_json" events)" "$secs")")" \
                "$(stat_field "$st_json" p50_ms)" "$(stat_field "$st_json" p99_ms)" \
                "$(stat_field "$st_json" p999_ms)" "$(stat_field "$st_json" max_ms)"
        else
            printf '   %-7s %5.1f %9s %9s %5s ms\n' "$ph" "$secs" "$(fmt_int "$fp_rate")" "$(fmt_int "$fp_min")" "$fp_lag"
        fi
        lines=$(awk -v r="$fp_rate" -v s="$secs" 'BEGIN { printf "%.0f", r * s }')
        rows+=("$(printf '{"phase":"%s","from_ms":%s,"to_ms":%s,"lines_per_s":%s,"worst_1s_lines_per_s":%s,"feed_max_lag_ms":%s,"lateness":%s,"cpu_cores":%s,"redis_cpu_us_per_line":%s,"commands":%s}' \
            "$ph" "$f" "$t" "$fp_rate" "$fp_min" "$fp_lag" "$st_json" "$cpu" \
            "$(jq -r --argjson n "$lines" 'if $n > 0 then (.redis * .wall_s * 1e6 / $n * 100 | round / 100) else null end' <<<"$cpu")" \
            "$(cmdstats_json "$tmp/split-$name-$ph.cmds" "$lines" line)")")
    done
    for r in "${rows[@]}"; do
        echo "   $(jq -r .phase <<<"$r"): $(cpu_line "$(jq -c .cpu_cores <<<"$r")")"
        echo "           $(wait_line "$(jq -c .cpu_cores <<<"$r")")"
        echo "           Redis per line: $(jq -r '"\(.redis_cpu_us_per_line) us CPU; " + ([.commands[:7][] | "\(.cmd) \(.calls_per_line)x \(.us_per_line)us"] | join(", "))' <<<"$r")"
    done
    local dip dip1 p99_delta=null
    dip=$(awk -v d="${rate_of[during]}" -v b="${rate_of[before]}" 'BEGIN { printf "%.4f", (b > 0 ? 1 - d / b : 0) }')
    dip1=$(awk -v d="${min_of[during]}" -v b="${rate_of[before]}" 'BEGIN { printf "%.4f", (b > 0 && d >= 0 ? 1 - d / b : 0) }')
    printf '   split took %s ms, finish --drain %s ms (%s)\n' "$split_ms" "$finish_ms" \
        "$(grep -o 'drained [0-9]* IDs' "$tmp/finish-$name.out" || echo '?')"
    if ((lateness)); then
        p99_delta=$(awk -v d="${p99_of[during]}" -v b="${p99_of[before]}" 'BEGIN { if (d == "-" || b == "-") print "null"; else print d - b }')
        printf '   achieved during / before: %s (dip %s; worst 1 s during: %s below before)\n' \
            "$(pct "$(fdiv "${rate_of[during]}" "${rate_of[before]}")")" "$(pct "$dip")" "$(pct "$dip1")"
        printf '   lateness p99 during - before: %s ms (target: unchanged): %s\n' "$p99_delta" \
            "$(verdict "${p99_delta#-}" '<=' 5)"
        printf '   all events: %s read back in %.1f s (distinct (id, deadline) %s, early %s; scanners acknowledged %s)\n' \
            "$(fmt_int "$(stat_field "$all" events)")" "$(fdiv "$READ_MS" 1000)" "$(fmt_int "$(stat_field "$all" distinct)")" \
            "$(stat_field "$all" early)" "$(fmt_int "$acked")"
    else
        printf '   throughput dip during the split: %s (target <= 20%%: %s); worst 1 s during: %s below before\n' \
            "$(pct "$dip")" "$(verdict "$dip" '<=' 0.2)" "$(pct "$dip1")"
    fi
    printf '   lines/s in each second during the split: %s\n' "$(feed_seconds "$tmp/split-$name.progress" "$td0" "$td1")"
    printf '   feeder: %s\n' "$(tail -n 1 "$tmp/split-$name-feed.err")"
    SPLIT_ROW=$(printf '{"name":"%s","offered_lines_per_s":%s,"population":%s,"cycle_ms":%s,"fire_every":%s,"fire_lead_ms":%s,"hold_lead_ms":%s,"phase_s":%s,"split_ms":%s,"finish_drain_ms":%s,"dip":%s,"worst_1s_dip":%s,"p99_during_minus_before_ms":%s,"phases":[%s],"all_events":%s,"acked":%s,"feeder":%s}' \
        "$name" "$rate" "$SPLIT_POP" "$cycle" "$fire_every" "$SPLIT_FIRE_LEAD_MS" "$hold" "$phase" \
        "$split_ms" "$finish_ms" "$dip" "$dip1" "$p99_delta" "$(IFS=,; echo "${rows[*]}")" "$all" "$acked" \
        "$(json_str "$(tail -n 1 "$tmp/split-$name-feed.err")")")
}

section_split() {
    local rows=() cycle
    cycle=$((SPLIT_POP * 1000 / SPLIT_RATE))
    echo "3. online split 2 -> 4 shards under load: a producer resets $(fmt_int "$SPLIT_POP") IDs round-robin (a watchdog);"
    echo "   ${SPLIT_PHASE_S} s before, \`lapse-scale split\` (+ scanners 2, 3) and ${SPLIT_PHASE_S} s during, \`finish --drain\`, ${SPLIT_PHASE_S} s after."
    echo "   Lines/s = lines the producer took (it applies each within ~10 ms); worst 1 s = the slowest 1 s"
    echo "   window; stall = how far the paced feeder fell behind (the producer blocked)."
    if [[ " $SPLIT_RUNS " == *" fixed "* ]]; then
        echo " (a) fixed offered load $(fmt_int "$SPLIT_RATE") lines/s (one round ${cycle} ms): $((SPLIT_FIRE_EVERY - 1)) resets in $SPLIT_FIRE_EVERY \"extend ID @now+$((cycle + 2000))\""
        echo "   (pushed on before due), 1 in $SPLIT_FIRE_EVERY \"touch ID @now+${SPLIT_FIRE_LEAD_MS}\" (fires); lateness by the phase the deadline fell in"
        split_run fixed "$SPLIT_RATE" "$SPLIT_PHASE_S"
        rows+=("$SPLIT_ROW")
    fi
    if [[ " $SPLIT_RUNS " == *" max "* ]]; then
        echo " (b) unbounded: the same IDs as fast as the producer takes them (nothing fires): its capacity per phase"
        split_run max 0 "$SPLIT_MAX_PHASE_S"
        rows+=("$SPLIT_ROW")
    fi
    echo
    split_json=$(printf '{"target":{"max_dip":0.2,"p99":"unchanged"},"runs":[%s]}' "$(IFS=,; echo "${rows[*]}")")
}
