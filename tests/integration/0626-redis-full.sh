#!/usr/bin/env bash
# 0626-redis-full: a Redis that is full under `maxmemory-policy noeviction`
# loses nothing. With scanners running and IDs due soon, a producer fills
# Redis with far-future IDs until it refuses writes (OOM): the producer
# reports each failed line and exits 1; the ingress commits no offset for
# signals Redis refused and keeps retrying; the scanners fire every ID
# acknowledged before (firing frees memory), after which the ingress's
# signals are applied and committed by themselves and a new write succeeds.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
N=3000 # IDs due soon, 200-byte payloads: firing them frees ~1 MB
redis_start main
kafka_start "$IN"
write_config "$CONF" "ingress = { topic = \"$IN\"; group = \"g-full\"; properties = ( $INGRESS_PROPS );
  rules = ( { time = \"field\"; timeout_ms = 3600000; } ); };"
# a failed write is reported after 300 ms rather than retried for a minute
sed -i 's/^redis = { nodes = \(.*\); };$/redis = { nodes = \1; retry_timeout_ms = 300; };/' "$CONF"
grep -q "retry_timeout_ms = 300" "$CONF" || fail "could not set redis.retry_timeout_ms"
assert_eq "$(rcli CONFIG GET maxmemory-policy | tail -n 1)" noeviction "the policy"
scale init 2 >/dev/null
scanners_start 2
ingress_start
ingress_wait_assigned
events_follow events.json

# IDs due in 15 s, acknowledged (exit 0), before Redis is full (filling it
# and the checks while it is full take 2-3 s, up to 9 s on a slow machine
# running the suite beside a CPU hog: firing before they end frees memory)
t0=$(now_ms)
due=$((t0 + 15000))
pd=$(head -c 200 /dev/zero | tr '\0' d)
for ((i = 0; i < N; i++)); do echo "touch due-$i @$((due + i / 2)) $pd"; done | produce ||
    fail "producer of the due IDs: exit status $?"

# a few MB of room, then far-future IDs with 1 kB payloads until Redis is
# full (bounded: 6000 lines, 6 MB)
used=$(rcli INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
rcli CONFIG SET maxmemory $((used + 3000000)) >/dev/null
pl=$(head -c 1000 /dev/zero | tr '\0' x)
rc=0
for ((i = 0; i < 6000; i++)); do echo "touch far-$i +3600000 $pl"; done | produce 2>fill.err || rc=$?
assert_eq "$rc" 1 "the filling producer's exit status"
nfailed=$(grep -c '^line [0-9]*: .*OOM' fill.err || true)
assert_ge "$nfailed" 1 "lines reported as refused (OOM)"
note "filled: $nfailed of 6000 lines refused ($(grep -m1 '^line' fill.err))"
(($(now_ms) < due)) || fail "filling took past the due time: make it smaller"
# The filler's own buffers (its pipelined batches) went with its connection,
# which leaves Redis a little room again: the limit follows used memory down
# so that Redis stays full until firing frees memory. 300 kB below: Redis
# also trims idle clients' buffers by itself (tens of kB), and firing frees
# ~1 MB.
used=$(rcli INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
rcli CONFIG SET maxmemory $((used - 300000)) >/dev/null
rc=0
echo "touch while-full +3600000" | produce 2>full.err || rc=$?
assert_eq "$rc" 1 "a write while Redis is full"
assert_file_match full.err "^line 1: .*OOM" "the refused write's report"

# the ingress: signals Redis refuses are not committed, and retried
kafka_committed "$IN" g-full | cut -d' ' -f1,2 >before
b=$(now_ms)
for ((i = 0; i < 20; i++)); do printf 's-%d\t{"ts":%d}\n' "$i" "$b"; done | kafka_put "$IN"
log=$T/$INGRESS.log
wait_until 5000 "grep -q 'not committed, reading them again' '$log'" ||
    fail "the ingress did not report a batch Redis refused"
kafka_committed "$IN" g-full | cut -d' ' -f1,2 >during
diff before during >c.diff || { cat c.diff >&2; fail "offsets committed for writes Redis refused"; }
[[ -z $(id_score s-0) ]] || fail "s-0 applied while Redis was full?"
(($(now_ms) < due)) || fail "the checks while full took past the due time (machine too slow)"

# the scanners fire every acknowledged due ID; that frees memory, and the
# ingress's signals and new writes go in by themselves
events_wait_ids events.json "$N" 30000
wait_until 20000 '[[ -n $(id_score s-19) ]]' || fail "the ingress's signals not applied after firing freed memory"
wait_until 10000 'kafka_all_committed "$IN" g-full' || fail "the ingress's signals not committed after firing freed memory"
proc_alive "$INGRESS" || fail "the ingress died"
echo "touch after-full +3600000" | produce 2>after.err || fail "a write after firing freed memory: exit status $? ($(cat after.err))"
for ((i = 0; i < N; i++)); do echo "due-$i"; done | sort >want
events_ids events.json | sort -u >got
comm -23 want got >lost
[[ ! -s lost ]] || fail "$(wc -l <lost) acknowledged IDs never fired, e.g. $(head -3 lost | tr '\n' ' ')"
scanner_stop
ingress_stop
events_follow_stop
assert_never_early events.json
