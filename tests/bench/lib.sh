# tests/bench/lib.sh — the helpers the benchmark drivers share (sourced by
# tests/bench/run and tests/bench/scanner-run after they set BENCH_NAME,
# the prefix of their messages; port and tmp are theirs too).

die() { echo "$BENCH_NAME: $*" >&2; exit 1; }

fdiv() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "null"; else printf "%.6f", a / b }'; }

fmt_int() { # 1234567.8 -> 1,234,568 (null or nothing: -)
    LC_ALL=C awk -v x="$1" 'BEGIN { if (x == "null" || x == "") { print "-"; exit }
        s = sprintf("%.0f", x); o = ""
        while (length(s) > 3) { o = "," substr(s, length(s) - 2) o; s = substr(s, 1, length(s) - 3) }
        print s o }'
}

json_str() { # a JSON string literal
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\t'/ }
    printf '"%s"' "$s"
}

# verdict VALUE OP LIMIT: "ok" when VALUE OP (>= or <=) LIMIT holds, else
# "MISSED"; "n/a" for a null VALUE (nothing measured)
verdict() {
    if [[ $1 == null ]]; then echo "n/a"; return; fi
    if awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { exit !((op == ">=") ? v >= l : v <= l) }'; then
        echo "ok"
    else
        echo "MISSED"
    fi
}

free_port() { # a TCP port in 20000-32767 that no socket uses now
    local i port hex
    for ((i = 0; i < 200; i++)); do
        port=$((20000 + RANDOM % 12768))
        printf -v hex ':%04X ' "$port"
        grep -qF -- "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null || { echo "$port"; return 0; }
    done
    die "no free port found"
}

rc() { timeout 60 redis-cli -h 127.0.0.1 -p "$port" "$@"; } # the driver's Redis

redis_cpu() { # Redis CPU seconds so far (user + sys, main and background threads)
    rc INFO cpu | tr -d '\r' | awk -F: '$1 == "used_cpu_user" || $1 == "used_cpu_sys" { s += $2 }
        END { printf "%.6f", s }'
}

redis_calls() { # "CALLS USEC" so far: every command's calls and Redis µs in them (INFO commandstats)
    rc INFO commandstats | tr -d '\r' | awk -F'[=,]' '/^cmdstat_/ { c += $2; u += $4 }
        END { printf "%d %d", c, u }'
}

calls_since() { # "CALLS USEC" of a redis_calls earlier: "N calls, U µs each" since
    local now
    now=$(redis_calls)
    awk -v a="$now" -v b="$1" 'BEGIN { split(a, x, " "); split(b, y, " "); n = x[1] - y[1]
        printf "%d calls, %.0f us each", n, (n > 0 ? (x[2] - y[2]) / n : 0) }'
}

self_cpu() { # SELF_CPU = CPU s of this shell and the children it waited for
    times >"$tmp/times" # call it not in $(...): a subshell's times start at zero
    SELF_CPU=$(tr 'ms\n' '   ' <"$tmp/times" |
        awk '{ s = 0; for (i = 1; i < NF; i += 2) s += $i * 60 + $(i + 1); printf "%.2f", s }')
}
