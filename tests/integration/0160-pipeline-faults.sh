#!/usr/bin/env bash
# 0160-pipeline-faults: a streaming producer keeps several full batches in
# flight (their replies read later, oldest first). When a connection drops
# under them, the batch whose replies were lost is re-sent, and so is every
# later one, in order: each ID's operations still apply in order. The same
# random stream of touch, extend, repeat and cancel over 400 IDs (about
# ten operations each, in different batches, so both a lost batch and one
# applied out of order show in the end state) goes to
# namespace "cut" in batches of 5, fed in pieces while every connection of
# the producer is killed again and again (CLIENT KILL), and to "calm" in one
# batch; both must end identical. The producer of "cut" must have gone on
# (reconnected) and reported nothing.
. "$(dirname "$0")/../lib.sh"

redis_start main
random_ops 400 4000 >ops.txt

setup() { # NS BATCH
    write_config "$1.conf" "producer = { batch = $2; };"
    sed -i "s/^namespace = .*/namespace = \"$1\";/" "$1.conf"
    lapse_scale "$1.conf" init 4 >/dev/null
}

setup calm 100000
"$LAPSE_BIN/lapse-producer" -c calm.conf <ops.txt || fail "producer for calm failed"
ns_records calm >calm.dump
[[ -s calm.dump ]] || fail "nothing was written"

setup cut 5
# The stream in 40 pieces, 20 ms apart. Meanwhile, again and again, Redis
# holds back scripts for 50 ms (CLIENT PAUSE WRITE), so that the producer
# has batches in flight unanswered, and 25 ms into the pause every
# connection of the producer is killed (SKIPME: not the killer's own).
split -n l/40 ops.txt piece.
{ for f in piece.*; do cat "$f"; sleep 0.02; done; } |
    "$LAPSE_BIN/lapse-producer" -c cut.conf 2>cut.err &
prod=$!
# (the kills start once it is connected and writing: a producer that cannot
# load its scripts at start exits, by design, with the reason)
wait_until 5000 '[[ -n $(rcli --scan --pattern "cut:z:*" | head -n 1) ]] || ! _pid_alive "$prod"' ||
    fail "the producer for cut wrote nothing within 5 s"
kills=0
while _pid_alive "$prod"; do
    rcli CLIENT PAUSE 50 WRITE >/dev/null
    sleep 0.025
    n=$(rcli CLIENT KILL TYPE normal SKIPME yes 2>/dev/null || echo 0)
    kills=$((kills + ${n:-0}))
    sleep 0.04
done
wait "$prod" || fail "producer for cut failed (exit status $?): $(tail -n 3 cut.err)"
note "connections killed under the producer: $kills; $(grep -c "warn" cut.err) warnings; $(tail -n 1 cut.err)"
assert_ge "$kills" 5 "connections killed while it streamed"
! grep -q '^line ' cut.err || fail "the producer reported lines: $(grep -m3 '^line ' cut.err)"
grep -q ' 0 failed' cut.err || fail "the producer's counters: $(tail -n 1 cut.err)"
ns_records cut >cut.dump
diff cut.dump calm.dump >d.diff || fail "cut differs from calm (ops applied out of order?): $(head -n 10 d.diff)"
