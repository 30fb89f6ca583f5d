#!/usr/bin/env bash
# 0025-clock-skew: deadlines follow the shard's Redis clock, not the clocks
# of the machines lapse runs on (guarantee 1: never early "as the shard's
# Redis clock reads"). The scanners run with their clock 3 s ahead of
# Redis's, a producer with its clock 3 s behind (faketime). Checked:
#  - "+MS" deadlines count from Redis's clock: each stored deadline is MS
#    after a Redis TIME taken around the write, not 3 s off;
#  - no event arrives while Redis's clock reads less than the first
#    deadline (a scanner going by its own clock would fire 3 s early);
#  - then every ID fires once, fired_ms >= deadline_ms.
. "$(dirname "$0")/../lib.sh"
# libfaketime preloaded into the program itself (env execs it: the faketime
# wrapper would stay between it and the test's signals)
ft_lib=$(dpkg -L libfaketime 2>/dev/null | grep -m 1 '/libfaketime\.so\.1$' || true)
[[ -n $ft_lib ]] || fail "libfaketime is needed (package libfaketime: scripts/install-deps installs it)"
# "${skew[@]}" FAKETIME=OFFSET CMD...: CMD with its clock OFFSET off (under
# AddressSanitizer too, whose runtime otherwise insists on coming first)
skew=(env "LD_PRELOAD=$ft_lib" "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")

redis_start main
kafka_start --brokers 1
write_config
scale init 2 >/dev/null || fail "init: exit status $?"
for s in 0 1; do spawn "scanner-$s" "${skew[@]}" FAKETIME=+3s "$LAPSE_BIN/lapse-scanner" -c "$CONF" --shard "$s"; done
events_follow events.json

# relative deadlines, written by a producer whose clock is 3 s behind
t0=$(now_ms)
seq 0 49 | awk '{ print "touch rel-" $1 " +" (2500 + $1 * 10) }' |
    "${skew[@]}" FAKETIME=-3s "$LAPSE_BIN/lapse-producer" -c "$CONF" || fail "producer (clock 3 s behind): exit status $?"
t1=$(now_ms)
{ shard_z 0; shard_z 1; } >scores.txt
assert_eq "$(_lines scores.txt)" 50 "IDs stored"
bad=$(awk -v t0="$t0" -v t1="$t1" '{ i = substr($1, 5) + 0; want = 2500 + i * 10
        if ($2 < t0 + want || $2 > t1 + want) print $1 " at " $2 " (want " t0 + want ".." t1 + want ")" }' scores.txt)
[[ -z $bad ]] || fail "relative deadlines not counted from Redis's clock: $(head -3 <<<"$bad" | tr '\n' ' ')"

# nothing before Redis's clock reaches the first deadline
first=$(awk '{ print $2 }' scores.txt | sort -n | head -n 1)
wait_until 10000 '[[ -s events.json ]] || (($(now_ms) >= first))' || fail "Redis's clock did not reach the first deadline"
now=$(now_ms)
if [[ -s events.json ]] && ((now < first)); then
    fail "an event arrived while Redis's clock read $now, before the first deadline $first: $(head -n 1 events.json)"
fi
events_wait_ids events.json 50 15000
sleep 0.5 # (a second fire shows)
# (killed: under libfaketime a timed wait on the real-time clock lasts the
# skew longer, so a clean stop takes seconds; stopping is not what this tests)
for s in 0 1; do proc_kill9 "scanner-$s"; done
events_follow_stop
assert_once events.json
assert_never_early events.json
