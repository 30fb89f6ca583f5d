#!/usr/bin/env bash
# 0380-ack-paths: ack.lua settles the IDs of a claim that still hold its
# lease, by either of its two ways of asking: the range of the lease's exact
# score (a group that is most of the IDs holding it) or ZMSCORE per ID (a
# small part of a large claim). For both, every outcome of an ID between its
# claim and its acknowledgement is checked:
#   still leased         -> removed, with its payload;
#   reset (integer)      -> kept with its new deadline;
#   cancelled (gone)     -> nothing to do;
#   claimed anew (another lease, after its own ran out) -> kept;
#   repeating            -> re-armed at the next point of its period (from
#                           the deadline in the lease's record), fire count + 1;
#   leased but not in the acknowledgement -> untouched, with the lease's
#                           record (f), which goes with the last ID holding it.
# And a wrong token changes nothing (fencing). Then whole claims (section 4):
# a claim sent as its lease and size alone.
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale init 1 >/dev/null
z=$NS:z:0 f=$NS:f:0 p=$NS:p:0 r=$NS:r:0
rcli SET "$NS:l:0" tok >/dev/null
b=$(($(now_ms) + 3600000))
ack() { lapse_lua ack 0 "$@"; } # TOKEN [LEASE N ID...]...
calls() { # CMD: how often Redis ran CMD since the last CONFIG RESETSTAT
    rcli INFO commandstats | tr -d '\r' | sed -n "s/^cmdstat_$1:calls=\([0-9]*\),.*/\1/p" | grep . || echo 0
}

# case P LEASE: a claim of 40 IDs P0..P39 holding LEASE (its record in f:
# their deadlines), then the outcomes above for some of them
setup() {
    local pfx=$1 lease=$2 i
    for ((i = 0; i < 40; i++)); do
        echo "ZADD $z $lease $pfx$i"
    done | rcli >/dev/null
    inflight_set 0 "$lease" $(for ((i = 0; i < 40; i++)); do echo "$pfx$i $((b + i))"; done)
    rcli HSET "$p" "${pfx}0" pay >/dev/null              # leased, with a payload
    rcli ZADD "$z" $((b + 5000)) "${pfx}1" >/dev/null     # reset
    rcli ZREM "$z" "${pfx}2" >/dev/null                   # cancelled
    rcli ZADD "$z" "$((b + 9000)).5" "${pfx}3" >/dev/null # claimed anew
    rcli HSET "$r" "${pfx}4" "1000:2" >/dev/null          # repeating (period 1000, fired twice)
}

check() { # PFX LEASE WHAT: after an ack of (at least) P0..P9, not P10
    local pfx=$1 lease=$2 what=$3
    assert_eq "$(rcli ZSCORE "$z" "${pfx}0")$(rcli HEXISTS "$p" "${pfx}0")" 0 "$what: leased ID (score, payload)"
    assert_eq "$(rcli ZSCORE "$z" "${pfx}1")" "$((b + 5000))" "$what: reset ID"
    assert_eq "$(rcli ZSCORE "$z" "${pfx}3")" "$((b + 9000)).5" "$what: ID claimed anew"
    assert_eq "$(rcli ZSCORE "$z" "${pfx}4") $(rcli HGET "$r" "${pfx}4")" "$((b + 4 + 1000)) 1000:3" "$what: repeating ID (score, record)"
    for i in 5 6 7 8 9; do
        assert_eq "$(rcli ZSCORE "$z" "$pfx$i")" "" "$what: acknowledged $pfx$i"
    done
    assert_eq "$(rcli ZSCORE "$z" "${pfx}10") $(inflight_of "${pfx}10" 0)" "$lease $((b + 10))" \
        "$what: leased ID not acknowledged (score, deadline in the lease's record)"
}

# 1. the claim acknowledged whole but for P10 (the "not in the ack" case):
# 39 IDs acked, 37 holding the lease -> range path
lease_a="$((b + 100)).5"
setup A "$lease_a"
ids=$(for i in $(seq 0 39); do ((i == 10)) || echo "A$i"; done)
assert_eq "$(ack wrong "$lease_a" 39 $ids)" -1 "ack with a wrong token"
assert_eq "$(rcli ZCOUNT "$z" "$lease_a" "$lease_a")" 37 "IDs on lease A after the fenced ack"
rcli CONFIG RESETSTAT >/dev/null
assert_eq "$(ack tok "$lease_a" 39 $ids)" 36 "settled (range path: 37 on the lease, 39 acked)"
assert_eq "$(calls zrangebyscore) $(calls zmscore)" "1 0" "range path: ZRANGEBYSCORE, ZMSCORE calls"
check A "$lease_a" "range path"

# 1b. the claim acknowledged whole: every ID still holding the lease is in
# the ack, so the range goes in one ZREMRANGEBYSCORE (no ZREM), the repeating
# ID re-armed out of it first; the payloads and the lease's record go too
lease_w="$((b + 150)).5"
setup W "$lease_w"
rcli CONFIG RESETSTAT >/dev/null
assert_eq "$(ack tok "$lease_w" 40 $(seq -f 'W%g' 0 39))" 37 "settled (whole claim: 37 on the lease, 40 acked)"
assert_eq "$(calls zremrangebyscore) $(calls zrem)" "1 0" "whole claim: ZREMRANGEBYSCORE, ZREM calls"
assert_eq "$(rcli ZCOUNT "$z" "$lease_w" "$lease_w")" 0 "IDs left on lease W"
assert_eq "$(rcli ZSCORE "$z" W0)$(rcli HEXISTS "$p" W0)" 0 "whole claim: leased ID (score, payload)"
assert_eq "$(rcli ZSCORE "$z" W1)" "$((b + 5000))" "whole claim: reset ID"
assert_eq "$(rcli ZSCORE "$z" W3)" "$((b + 9000)).5" "whole claim: ID claimed anew"
assert_eq "$(rcli ZSCORE "$z" W4) $(rcli HGET "$r" W4)" "$((b + 4 + 1000)) 1000:3" "whole claim: repeating ID (score, record)"
for i in 5 17 39; do
    assert_eq "$(rcli ZSCORE "$z" "W$i")" "" "whole claim: acknowledged W$i"
done
assert_eq "$(rcli HEXISTS "$f" "$lease_w")" 0 "whole claim: the lease's record" 
# a foreign ID on the same score, not in the ack: the range is not removed
lease_v="$((b + 160)).5"
setup V "$lease_v"
rcli ZADD "$z" "$lease_v" foreign >/dev/null
rcli CONFIG RESETSTAT >/dev/null
assert_eq "$(ack tok "$lease_v" 40 $(seq -f 'V%g' 0 39))" 37 "settled (whole claim and a foreign ID on its lease)"
assert_eq "$(calls zremrangebyscore)" 0 "foreign ID on the lease: no ZREMRANGEBYSCORE"
assert_eq "$(rcli ZSCORE "$z" foreign)" "$lease_v" "the foreign ID on the lease is kept"
rcli ZREM "$z" foreign >/dev/null

# 2. a small part of a claim: P0..P9 -> per-ID path (10 acked, 37 holding the lease)
lease_b="$((b + 200)).5"
setup B "$lease_b"
rcli CONFIG RESETSTAT >/dev/null
assert_eq "$(ack tok "$lease_b" 10 $(seq -f 'B%g' 0 9))" 7 "settled (ZMSCORE path: 37 on the lease, 10 acked)"
assert_eq "$(calls zrangebyscore) $(calls zmscore)" "0 1" "per-ID path: ZRANGEBYSCORE, ZMSCORE calls"
check B "$lease_b" "per-ID path"
assert_eq "$(rcli ZCOUNT "$z" "$lease_b" "$lease_b") $(rcli HEXISTS "$f" "$lease_b")" "30 1" \
    "IDs left on lease B (B10..B39), its record"
assert_eq "$(ack tok "$lease_b" 30 $(seq -f 'B%g' 10 39))" 30 "settled (the rest of claim B)"
assert_eq "$(rcli HEXISTS "$f" "$lease_b")" 0 "claim B's record, once no ID holds its lease"

# 3. both groups in one call, each taking its own path
rcli DEL "$z" "$f" "$p" "$r" >/dev/null
setup C "$lease_a"
setup D "$lease_b"
assert_eq "$(ack tok "$lease_a" 10 $(seq -f 'C%g' 0 9) "$lease_b" 39 $(for i in $(seq 0 39); do ((i == 10)) || echo "D$i"; done))" \
    $((7 + 36)) "settled (two groups)"
check C "$lease_a" "per-ID path, two groups"
check D "$lease_b" "range path, two groups"

# 4. whole claims: the scanner sends a claim all of whose events Kafka
# acknowledged as its lease and -size alone (no IDs). If the lease's range
# holds all of them, it is the claim: settled in one ZREMRANGEBYSCORE with
# payloads and its record (re-armed one by one when the shard has repeating
# IDs). If one was reset or cancelled meanwhile, the group is answered back
# (its number after the count settled) and nothing of it changes: the
# scanner sends it again with its IDs. A producer's take during a split
# leases with .75, never on a claim's score.
whole() { # PFX LEASE N: N IDs PFX0.. holding LEASE, with its record
    local i
    for ((i = 0; i < $3; i++)); do
        echo "ZADD $z $2 $1$i"
    done | rcli >/dev/null
    inflight_set 0 "$2" $(for ((i = 0; i < $3; i++)); do echo "$1$i $((b + i))"; done)
}
rcli DEL "$z" "$f" "$p" "$r" >/dev/null
lease_k="$((b + 300)).5" lease_m="$((b + 310)).5"
whole K "$lease_k" 40
whole M "$lease_m" 20
rcli HSET "$p" K0 pay >/dev/null
rcli ZADD "$z" "$((b + 300)).75" taken >/dev/null # a twin taken in the same ms
rcli ZADD "$z" $((b + 5000)) M3 >/dev/null       # M3 reset while in flight
assert_eq "$(ack wrong "$lease_k" -40)" -1 "whole claim with a wrong token"
rcli CONFIG RESETSTAT >/dev/null
assert_eq "$(ack tok "$lease_k" -40 "$lease_m" -20 | paste -sd' ')" "40 2" \
    "whole claims K (settled) and M (M3 reset: answered back as group 2)"
assert_eq "$(calls zremrangebyscore) $(calls zrem)" "1 0" "whole claims: ZREMRANGEBYSCORE, ZREM calls"
assert_eq "$(rcli ZCOUNT "$z" "$lease_k" "$lease_k") $(rcli HEXISTS "$p" K0) $(rcli HEXISTS "$f" "$lease_k")" \
    "0 0 0" "claim K: IDs on its lease, K0's payload, its record"
assert_eq "$(rcli ZSCORE "$z" taken)" "$((b + 300)).75" "the taken twin beside claim K"
assert_eq "$(rcli ZCOUNT "$z" "$lease_m" "$lease_m") $(inflight_of M7 0)" "19 $((b + 7))" "claim M untouched (19 on its lease, its record)"
assert_eq "$(ack tok "$lease_m" 20 $(seq -f 'M%g' 0 19))" 19 "claim M sent again with its IDs"
assert_eq "$(rcli ZSCORE "$z" M3) $(rcli HLEN "$f")" "$((b + 5000)) 0" "M3 kept with its reset; no record left"
rcli CONFIG RESETSTAT >/dev/null
whole S "$lease_k" 30
assert_eq "$(ack tok "$lease_k" -30)" 30 "a whole claim in a shard without payloads or repeating IDs"
assert_eq "$(calls zrangebyscore) $(calls zcount) $(calls zremrangebyscore) $(rcli HLEN "$f")" "0 1 1 0" \
    "without payloads or repeating IDs: no ID read (ZRANGEBYSCORE, ZCOUNT, ZREMRANGEBYSCORE calls; records)"
# with repeating IDs in the shard: one by one, the repeating one re-armed
whole R "$lease_k" 5
rcli HSET "$r" R2 "1000:0" >/dev/null
assert_eq "$(ack tok "$lease_k" -5)" 5 "whole claim in a shard with repeating IDs"
assert_eq "$(rcli ZCARD "$z") $(rcli ZSCORE "$z" R2) $(rcli HGET "$r" R2) $(rcli HLEN "$f")" \
    "3 $((b + 2 + 1000)) 1000:1 0" "only R2 left (re-armed) beside M3 and the taken twin; f empty"

# Every claim's lease is later than the previous claim's (the shard keeps
# its last lease, claim.lua's KEYS[8]), even within one millisecond: else an
# ID reset to a due time and claimed again under the same lease would be
# settled by the first claim's ack before its second event was acknowledged.
# A claim whose reply the scanner never read still ran, and the next one
# must not get its lease either (a whole-claim ack would otherwise take the
# lost claim's IDs, never sent, with its own).
epoch=$(shard_epoch 0)
sha=$(rcli SCRIPT LOAD "$(lua_source claim)")
claim8() { # BATCH: claim.lua with the shard's keys and its lease record
    echo "EVALSHA $sha 8 $z $NS:p:0 $f $r $NS:m:0 $NS:l:0 $NS:e:0 $NS:c:0 tok $1 5000 1000 10 $epoch"
}
far=$(($(now_ms) + 10000000)) # a previous lease far ahead: the next one must follow it
rcli SET "$NS:c:0" "$far" >/dev/null
rcli ZADD "$z" $(($(now_ms) - 1000)) X >/dev/null
l1=$(claim8 10 | rcli | sed -n 2p)
assert_eq "$l1" "$((far + 1)).5" "the lease after a previous one of $far.5"
assert_eq "$(rcli ZSCORE "$z" X)" "$l1" "X claimed"
rcli ZADD "$z" $(($(now_ms) - 500)) X >/dev/null # reset to a due time
l2=$(claim8 10 | rcli | sed -n 2p)
assert_eq "$l2" "$((far + 2)).5" "the next claim's lease"
assert_eq "$(ack tok "$l1" 1 X)" 0 "the first claim's ack settles nothing (X is the second's now)"
assert_eq "$(ack tok "$l2" 1 X)" 1 "the second claim's ack settles X"

# Two claims in one MULTI (one millisecond), as after a lost reply:
rcli DEL "$NS:c:0" >/dev/null
rcli ZADD "$z" $(($(now_ms) - 1000)) Y1 $(($(now_ms) - 999)) Y2 >/dev/null
out=$({ echo MULTI; claim8 1; claim8 1; echo EXEC; } | rcli)
mapfile -t leases < <(grep -E '^[0-9]+\.5$' <<<"$out")
((${#leases[@]} == 2)) || fail "two claims in one MULTI: leases '${leases[*]}' from: $out"
[[ ${leases[0]} != "${leases[1]}" ]] || fail "two claims with the same previous lease got one lease: ${leases[0]}"
assert_eq "$(rcli ZSCORE "$z" Y1) $(rcli ZSCORE "$z" Y2)" "${leases[0]} ${leases[1]}" "Y1, Y2 each on its claim's lease"
assert_eq "$(ack tok "${leases[1]}" -1)" 1 "the second claim acknowledged whole settles its own ID only"
assert_eq "$(rcli ZSCORE "$z" Y1)" "${leases[0]}" "Y1 (the first claim's) kept"
