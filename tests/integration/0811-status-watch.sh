#!/usr/bin/env bash
# 0811-status-watch: lapse-scale status --watch.
#
# 2 shards, no scanners, 2000 IDs an hour ahead.
#  - not a terminal, --count 2: exit 0, exactly two blocks, each opening
#    with "[<ISO-8601 UTC>]" and the namespace line, with a row per shard
#    (pending, and "none" for the missing scanner);
#  - on a terminal (script(1)): the screen is cleared before each refresh;
#  - SIGTERM ends a watch without --count with status 0 (SIGINT too);
#  - during a split: the blocks say how many IDs are left to check in the
#    old shards (the count status --json gives as .to_move); while
#    `finish --drain --rate 300` moves them, a later block gives the rate
#    they go down at and when that ends ("going down R/s, ends in ~N s").
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale init 2 >/dev/null
D=$(($(now_ms) + 3600000))
for ((i = 0; i < 2000; i++)); do echo "touch w-$i @$D"; done | produce 2>/dev/null || fail "producer: exit status $?"

blocks() { grep -cE '^\[20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z\] namespace demo: ' "$1" || true; }
scale status --watch --count 2 --interval 0.2 >w1.out || fail "status --watch --count 2: exit status $?"
assert_eq "$(blocks w1.out)" 2 "blocks printed by --count 2"
assert_eq "$(grep -cE '^[01] +127\.0\.0\.1:[0-9]+ +[0-9]+ +0 +0 .* none$' w1.out)" 4 "shard rows (2 a block)"
assert_eq "$(awk '$1 ~ /^[01]$/ { s += $3 } END { print s }' w1.out)" 4000 "pending over both blocks"
! grep -q $'\033' w1.out || fail "escape sequences in output that is not a terminal"

if command -v script >/dev/null 2>&1; then
    timeout 20 script -qfec "$LAPSE_SCRIPTS/lapse-scale -c $CONF status --watch --count 2 --interval 0.2" /dev/null >tty.out ||
        fail "status --watch on a terminal: exit status $?"
    assert_eq "$(grep -o $'\033\\[H\033\\[2J' tty.out | wc -l)" 2 "screen clears on a terminal (one per refresh)"
else
    note "script(1) missing: terminal output not checked"
fi

for sig in TERM INT; do
    SPAWN_WATCH=0 spawn watch "$LAPSE_SCRIPTS/lapse-scale" -c "$CONF" status --watch --interval 0.2
    w=$SPAWNED
    wait_until 10000 '(($(blocks "$T/$w.log") >= 1))' || fail "no block from a running watch within 10 s"
    proc_stop "$w" 5 "$sig"
    assert_eq "$PROC_RC" 0 "exit status of status --watch after SIG$sig"
done

scale split >split.out || fail "split: exit status $?"
left=$(scale status --json | jq .to_move)
assert_ge "$left" 500 "IDs to move after the split"
scale status --watch --count 2 --interval 0.2 >w2.out || fail "status --watch during a split: exit status $?"
assert_eq "$(blocks w2.out)" 2 "blocks during a split"
assert_eq "$(grep -c "^split 2 -> 4: $left IDs left to check in the old shards" w2.out)" 2 "split progress lines"
assert_file_match w2.out 'splitting 2 -> 4' "the namespace line during a split"

SPAWN_WATCH=0 spawn drain "$LAPSE_SCRIPTS/lapse-scale" -c "$CONF" finish --drain --rate 300
wait_until 10000 '(($(scale status --json | jq .to_move) < left))' || fail "the drain moved nothing within 10 s"
scale status --watch --count 3 --interval 0.5 >w3.out || fail "status --watch during a drain: exit status $?"
assert_eq "$(blocks w3.out)" 3 "blocks during a drain"
assert_file_match w3.out '^split 2 -> 4: [0-9]+ IDs left to check in the old shards; going down [0-9.]+/s, ends in ~[0-9]+ s' "rate and end estimate during a drain"
wait_until 30000 '! proc_alive drain' || fail "finish --drain still running after 30 s"
