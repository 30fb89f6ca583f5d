#!/usr/bin/env bash
# 0066-watchdog-example: producer/examples/watchdog.c, the embedding example
# that gets copied into production (make builds it into
# build/<plain|SANITIZE>/examples/watchdog).
#  - a 700-byte line between two IDs is refused once, as a whole, naming
#    line 2: no ID is made of its tail (read in 600-byte pieces, its last
#    101 bytes passed as an ID); the IDs around it are applied; exit 1;
#  - good lines only (a blank one, one ending in CRLF): exit 0, quiet;
#  - a lone line on a stream that stays open is applied within 2 s (the
#    queue is flushed once no more input waits), not held back until the
#    batch fills or the input ends.
. "$(dirname "$0")/../lib.sh"

if [[ $LAPSE_BIN == */build/*/bin ]]; then WD=${LAPSE_BIN%/bin}/examples/watchdog; else WD=$LAPSE_ROOT/build/plain/examples/watchdog; fi
[[ -x $WD ]] || fail "$WD is not built (make)"

redis_start main
write_config
scale init 2 >/dev/null
ids() { ns_dump | awk '{ printf "%s ", $1 }'; }

long=$(head -c 700 /dev/zero | tr '\0' a)
rc=0
printf 'dev-1\n%s\ndev-2\n' "$long" | timeout 20 "$WD" "$CONF" >wd.out 2>wd.err || rc=$?
assert_eq "$rc" 1 "exit status after a refused line ($(cut -c1-200 wd.err))"
assert_eq "$(grep -c '^line [0-9]*: ' wd.err)" 1 "lines reported ($(cut -c1-200 wd.err))"
assert_file_match wd.err '^line 2: refused: 700 bytes' "the refusal"
assert_eq "$(ids)" "dev-1 dev-2 " "IDs in Redis"

rc=0
printf 'dev-3\n\ndev-4\r\n' | timeout 20 "$WD" "$CONF" >wd.out 2>wd.err || rc=$?
assert_eq "$rc" 0 "exit status with good lines only ($(cut -c1-200 wd.err))"
assert_eq "$(cat wd.err)" "" "stderr with good lines only"
assert_eq "$(ids)" "dev-1 dev-2 dev-3 dev-4 " "IDs in Redis"

mkfifo wd.fifo
SPAWN_WATCH=0 SPAWN_STDIN=wd.fifo spawn wd "$WD" "$CONF"
exec {fd}>wd.fifo # (opened after the spawn: the example holds no writer, it sees the end)
printf 'dev-5\n' >&"$fd"
wait_until 2000 '[[ -n $(id_score dev-5) ]]' || fail "a lone line was not applied within 2 s, the input still open"
exec {fd}>&-
wait_until 5000 '! proc_alive wd' || fail "the example still runs 5 s after its input ended"
proc_stop wd
assert_eq "$PROC_RC" 0 "exit status of the streaming example"
