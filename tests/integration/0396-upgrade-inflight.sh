#!/usr/bin/env bash
# 0396-upgrade-inflight: a scanner of this release starts on a shard that a
# scanner of the previous release (before 2026-11-26) left mid-flight.
#
# The previous release's claim (its claim.lua, kept in tests/lib/old/, run
# here on the shard's keys) left its claimed IDs in the zset with a lease
# score "<ms>.5" and one record per claim in f ("id deadline ..."), and its
# last lease in NS:c:0 as a bare number. Then that scanner died (kill -9)
# holding the lock, after:
#   - acknowledging U1 (its ack removed U1 and its payload; the record
#     stays, the other IDs of that claim still hold its lease),
#   - a producer resetting U2 to a minute later while in flight.
# The new scanner takes the shard over when the old lock runs out. Then:
# every other ID fires once with the deadline that fell due (U3 with its
# payload; R, repeating, with seq 1), none early; U1 does not fire again
# (an older record lists IDs that left its lease: only the holders are in
# flight); U2 keeps its reset; nothing is left in f; R is re-armed on its
# grid; and a new ID written afterwards fires through the new claim.
# One-zset form (scale_init_one_zset, also under LAPSE_TEST_SMALL_KEYS=1):
# it tests that form's internals (scores and records it crafts and reads
# in NS:z:I and its hashes).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
SCANNER_CFG="poll_ms = 10; lease_ms = 3000;"
write_config
scale_init_one_zset 1 >/dev/null
events_follow events.json
z=$NS:z:0 f=$NS:f:0 p=$NS:p:0 r=$NS:r:0
epoch=$(shard_epoch 0)

t=$(now_ms)
for i in $(seq 1 20); do echo "ZADD $z $((t - 1000 + i)) U$i"; done | rcli >/dev/null
rcli HSET "$p" U1 p1 U3 p3 >/dev/null
rcli ZADD "$z" $((t - 500)) R >/dev/null
rcli HSET "$r" R 60000:0 >/dev/null
rcli SET "$NS:l:0" old PX 2500 >/dev/null # the old scanner's lock: it dies holding it
old_claim() { # BATCH: one claim of the previous release
    rcli EVAL "$(cat "$LAPSE_ROOT/tests/lib/old/claim-2026-11-25.lua")" 8 "$z" "$p" "$f" "$r" \
        "$NS:m:0" "$NS:l:0" "$NS:e:0" "$NS:c:0" old "$1" 3000 1000 "$1" "$epoch" >/dev/null
}
old_claim 12
old_claim 20
leased=$(rcli ZRANGE "$z" 0 -1 WITHSCORES | paste - - | awk '$2 ~ /\.5$/' | wc -l)
assert_eq "$leased $(rcli HLEN "$f")" "21 2" "the old claims: 21 IDs on leases (x.5), two records"
[[ $(rcli GET "$NS:c:0") =~ ^[0-9]+$ ]] || fail "the old release's last lease: '$(rcli GET "$NS:c:0")'"
rcli ZREM "$z" U1 >/dev/null # acknowledged by the old scanner before it died
rcli HDEL "$p" U1 >/dev/null
echo "touch U2 +60000" | produce # reset while in flight
u2=$(rcli ZSCORE "$z" U2)

scanner_start 0
# U3..U20 and R: 19 IDs
events_wait_ids events.json 19 15000
echo "touch N +0 pn" | produce
events_wait_ids events.json 20 10000
sleep 0.3 # let a wrong extra event show
events_follow_stop

fired() { jq -r --arg id "$1" 'select(.id == $id) | "\(.deadline_ms)/\(.payload // "-")/\(.seq // 0)"' events.json | paste -sd' '; }
assert_eq "$(fired U1)" "" "U1 (acknowledged before the upgrade) does not fire again"
assert_eq "$(fired U2)" "" "U2 (reset before the upgrade) waits for its new deadline"
for i in $(seq 3 20); do
    want="$((t - 1000 + i))/-/0"
    ((i == 3)) && want="$((t - 1000 + i))/p3/0"
    assert_eq "$(fired "U$i")" "$want" "U$i's fire (deadline/payload/seq)"
done
assert_eq "$(fired R)" "$((t - 500))/-/1" "R's fire"
assert_eq "$(fired N)" "$(jq -r 'select(.id == "N") | .deadline_ms' events.json)/pn/0" "N, written after the upgrade"
assert_never_early events.json
wait_until 5000 '[[ $(rcli HLEN "$f") == 0 ]]' || fail "in-flight records left: $(rcli HKEYS "$f" | paste -sd' ')"
assert_eq "$(rcli ZCARD "$z") $(rcli ZSCORE "$z" U2) $(rcli ZSCORE "$z" R)" "2 $u2 $((t - 500 + 60000))" \
    "the zset: U2 with its reset, R re-armed on its grid"
assert_eq "$(rcli HGET "$r" R)" 60000:1 "R's fire count"
scanner_stop
