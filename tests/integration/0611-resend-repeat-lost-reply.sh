#!/usr/bin/env bash
# 0611-resend-repeat-lost-reply: a repeat sent again after its answer was
# lost with the connection says it may have been applied already (apply.lua's
# flag G), so an application that did land keeps its count.
#
# Writes are paused (CLIENT PAUSE WRITE) when the producer sends `repeat rp
# @<past> 250`: its call waits in Redis, unanswered; the producer's
# connection is killed (CLIENT KILL), the pause lifted, and the producer
# sends the call again, not knowing whether the first copy was applied (in
# a batch in flight sent again after a disconnect, it may well have been).
# The copy Redis runs (MONITOR) carries G.
#
# Catches: only a repeat whose application Redis had answered was flagged:
# one sent again after a lost answer started its count over if its first
# copy had landed, seq 1 again and then a second deadline for seq 2 (found
# by the nemesis, seed 23, batches in flight sent again during a slot move).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
write_config "$CONF" 'producer = { batch = 1; };'
scale init 1 >/dev/null || fail "init: exit status $?"

mkfifo lines
exec {LINES}<>lines
SPAWN_STDIN=$T/lines spawn producer "$LAPSE_BIN/lapse-producer" -c "$CONF"
SPAWN_OUT=$T/monitor.txt SPAWN_WATCH=0 spawn monitor redis-cli -p "$REDIS_PORT" MONITOR
echo 'touch warm +600000' >&"$LINES"
wait_until 10000 '[[ -n $(id_score warm) ]] && grep -q "\"warm\"" monitor.txt' ||
    fail "the producer did not start (or MONITOR saw nothing)"

rcli CLIENT PAUSE 20000 WRITE >/dev/null
echo "repeat rp @$(($(now_ms) - 100)) 250" >&"$LINES"
# the producer's call, held by the pause: a blocked client running EVALSHA
held() { rcli CLIENT LIST | grep 'flags=b ' | grep 'cmd=evalsha' | sed -n 's/^id=\([0-9]*\) .*/\1/p' | head -n 1; }
wait_until 10000 '[[ -n $(held) ]]' || fail "the producer's call was not held by the pause: $(rcli CLIENT LIST)"
rcli CLIENT KILL ID "$(held)" >/dev/null
rcli CLIENT UNPAUSE >/dev/null
wait_until 20000 'grep -q "\"rp\"" monitor.txt' ||
    fail "rp's call never ran after the pause: $(tail -n 3 "$T/producer.log")"

# the head argument before the ID: "rR...@<ms>", G among its flags
heads=$(grep '"rp"' monitor.txt | grep -o '"r[A-Z]*@[0-9]*" "rp"' | cut -d' ' -f1)
[[ -n $heads ]] || fail "no apply.lua call of rp in MONITOR's output: $(grep '"rp"' monitor.txt | head -n 2)"
assert_eq "$(grep -vc G <<<"$heads")" 0 "rp's calls sent again without G: $(paste -sd' ' <<<"$heads")"
assert_eq "$(rcli HGET "$NS:r:0" rp)" "250:0" "rp's repeat record"
