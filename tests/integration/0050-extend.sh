#!/usr/bin/env bash
# 0050-extend: extend sets a new ID, moves a pending one only later, and
# leaves deadline and payload alone when it does not apply (earlier or
# equal); touch moves either way; a payload replaces the stored one only
# when its line applies, a line without one keeps it. Lines of one producer
# run apply in order. No scanner runs: all deadlines are far ahead.
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale init 4 >/dev/null

b=$(($(now_ms) + 600000))
step() { # LINE SCORE PAYLOAD: apply LINE, then e1 must have SCORE and PAYLOAD
    echo "$1" | produce || fail "'$1': exit status $?"
    assert_eq "$(id_score e1)" "$2" "score of e1 after '$1'"
    assert_eq "$(id_payload e1)" "$3" "payload of e1 after '$1'"
}
step "extend e1 @$b p1"                $b            p1 # new ID: set
step "extend e1 @$((b + 1000))"        $((b + 1000)) p1 # later: moved, payload kept
step "extend e1 @$((b + 500)) p2"      $((b + 1000)) p1 # earlier: nothing changes
step "extend e1 @$((b + 1000)) p3"     $((b + 1000)) p1 # equal: nothing changes
step "extend e1 @$((b + 2000)) p4"     $((b + 2000)) p4 # later with payload
step "touch e1 @$((b - 100000))"       $((b - 100000)) p4 # touch earlier: moved
step "touch e1 @$((b - 100000)) p5"    $((b - 100000)) p5 # same deadline, new payload
step "touch e1 @$((b + 50000))"        $((b + 50000))  p5 # touch later

# relative times, on the Redis clock
t1=$(now_ms)
echo "extend e2 +600000" | produce
t2=$(now_ms)
s=$(id_score e2)
assert_ge "$s" $((t1 + 600000)) "extend e2 +600000"
assert_le "$s" $((t2 + 600000)) "extend e2 +600000"
! id_has_payload e2 || fail "e2 has a payload though none was given"
echo "extend e2 +1000 px" | produce
assert_eq "$(id_score e2)" "$s" "e2 after an earlier extend"
! id_has_payload e2 || fail "e2 got the payload of an extend that did not apply"
echo "touch e2 +300000" | produce
s2=$(id_score e2)
assert_le "$s2" $(($(now_ms) + 300000)) "e2 after touch +300000 (earlier)"
assert_ge "$s2" $((t2 + 300000)) "e2 after touch +300000"

# in one run, lines apply in order
printf '%s\n' "touch e3 @$((b + 5000)) first" "extend e3 @$((b + 1000)) second" \
    "touch e4 @$b" "cancel e4" "cancel e5" "extend e5 @$((b + 7)) five" \
    "extend e6 @$((b + 10))" "extend e6 @$((b + 20))" "extend e6 @$((b + 15))" | produce
assert_eq "$(id_score e3)" $((b + 5000)) "e3"
assert_eq "$(id_payload e3)" first "e3's payload"
assert_eq "$(id_score e4)" "" "e4 (touched, then cancelled)"
assert_eq "$(id_score e5)" $((b + 7)) "e5 (cancelled, then extended)"
assert_eq "$(id_payload e5)" five "e5's payload"
assert_eq "$(id_score e6)" $((b + 20)) "e6 after extends to +10, +20, +15"
