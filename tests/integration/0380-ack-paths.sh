#!/usr/bin/env bash
# 0380-ack-paths: ack.lua settles the IDs of a claim (claim.lua, run here by
# hand on the shard's keys). A claim takes its due one-shot IDs out of the
# zset into its record in f (field: its lease "<ms>.25"); a repeating ID
# stays in the zset with the lease as its score. Every outcome of an ID
# between its claim and its acknowledgement is checked, for a claim
# acknowledged whole (its lease and -size alone) and piece by piece (IDs
# listed):
#   untouched one-shot   -> settled: out of the record, its payload gone;
#   reset (in the zset)  -> kept with its new deadline and payload;
#   cancelled            -> nothing left;
#   claimed anew         -> its new claim's record keeps it (with its payload,
#                           should that claim come back);
#   repeating            -> re-armed at the next point of its period (from
#                           the deadline in the record), fire count + 1;
#   not in the acknowledgement -> stays in the record, which goes with its
#                           last ID.
# A wrong token changes nothing (fencing); a record that is gone (it came
# back meanwhile: a new holder, an expired lease) settles nothing.
# One-zset form (scale_init_one_zset, also under LAPSE_TEST_SMALL_KEYS=1):
# it tests that form's internals (scores and records it crafts and reads
# in NS:z:I and its hashes).
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale_init_one_zset 1 >/dev/null
z=$NS:z:0 f=$NS:f:0 p=$NS:p:0 r=$NS:r:0
rcli SET "$NS:l:0" tok >/dev/null
ack() { lapse_lua ack 0 "$@"; } # TOKEN [LEASE N ID...]...
calls() { # CMD: how often Redis ran CMD since the last CONFIG RESETSTAT
    rcli INFO commandstats | tr -d '\r' | sed -n "s/^cmdstat_$1:calls=\([0-9]*\),.*/\1/p" | grep . || echo 0
}
epoch=$(shard_epoch 0)
sha=$(rcli SCRIPT LOAD "$(lua_source claim)")
# (a lease of 60 s: claim.lua gives the lock 90 % of it to live, and this
# test's checks between two claims may take seconds on a loaded machine)
claim8() { # BATCH: claim.lua with the shard's keys and its lease record
    echo "EVALSHA $sha 8 $z $NS:p:0 $f $r $NS:m:0 $NS:l:0 $NS:e:0 $NS:c:0 tok $1 60000 1000 $1 $epoch"
}
claim() { claim8 "$1" | rcli | sed -n 2p; } # BATCH: the lease of a claim of up to BATCH IDs
rec_ids() { # LEASE: the IDs of its record, sorted, on one line
    rcli EVAL "$_CLAIM_OF_LUA
        local l = _claim_list(redis.call('HGET', KEYS[1], ARGV[1]) or cmsgpack.pack({}, {}))
        local o = {} for i = 1, #l, 2 do o[#o + 1] = l[i] end return o" 1 "$f" "$1" | sort | paste -sd' '
}

# setup P: 40 due IDs P0..P39 (deadlines d0 + i), claimed in one claim
# (LEASE); then the outcomes above for P1..P4
setup() {
    local pfx=$1 i
    rcli DEL "$z" "$f" "$p" "$r" "$NS:c:0" >/dev/null
    d0=$(($(now_ms) - 10000))
    for ((i = 0; i < 40; i++)); do echo "ZADD $z $((d0 + i)) $pfx$i"; done | rcli >/dev/null
    rcli HSET "$p" "${pfx}0" pay "${pfx}1" pay1 "${pfx}3" pay3 >/dev/null
    rcli HSET "$r" "${pfx}4" "1000:2" >/dev/null # repeating (period 1000, fired twice)
    LEASE=$(claim 40)
    [[ $LEASE == *.25 ]] || fail "$pfx: the claim's lease: '$LEASE'"
    assert_eq "$(rcli ZCARD "$z") $(rcli ZSCORE "$z" "${pfx}4")" "1 $LEASE" "$pfx: only the repeating ID left in the zset, on the lease"
    rcli ZADD "$z" $((d0 + 3600000)) "${pfx}1" >/dev/null # reset
    rcli HDEL "$p" "${pfx}2" >/dev/null                    # cancelled (not in the zset)
    rcli ZADD "$z" $((d0 - 5)) "${pfx}3" >/dev/null        # reset to a due time...
    NEW=$(claim 1)                                          # ...and claimed anew
    assert_eq "$(rec_ids "$NEW")" "${pfx}3" "$pfx: the second claim's record"
}

check() { # PFX WHAT: after an ack of P0..P9 (at least), not P10
    local pfx=$1 what=$2 t1 rep
    t1=$(now_ms) # (the ack ran before: its next point is this one's, or the one before)
    rep=$(rcli ZSCORE "$z" "${pfx}4")
    assert_eq "$(rcli ZSCORE "$z" "${pfx}0")$(rcli HEXISTS "$p" "${pfx}0")" 0 "$what: settled ID (score, payload)"
    assert_eq "$(rcli ZSCORE "$z" "${pfx}1") $(rcli HGET "$p" "${pfx}1")" "$((d0 + 3600000)) pay1" "$what: reset ID (score, payload)"
    assert_eq "$(rcli ZSCORE "$z" "${pfx}2")$(rcli HEXISTS "$p" "${pfx}2")" 0 "$what: cancelled ID"
    assert_eq "$(rec_ids "$NEW")" "${pfx}3" "$what: the ID claimed anew, in its new claim's record"
    local next=$((d0 + 4 + 1000 * ((t1 - d0 - 4) / 1000 + 1)))
    [[ $rep == "$next" || $rep == "$((next - 1000))" ]] ||
        fail "$what: repeating ID's score: got '$rep', want the next point of its period after the ack ($((next - 1000)) or $next)"
    assert_eq "$(rcli HGET "$r" "${pfx}4")" "1000:3" "$what: repeating ID's record"
    for i in 5 6 7 8 9; do
        assert_eq "$(rcli ZSCORE "$z" "$pfx$i")" "" "$what: acknowledged $pfx$i"
    done
}

# 1. a claim acknowledged whole, in a shard with payloads and repeating IDs:
# its record goes, the IDs settle one by one (ZMSCORE: which were written
# since)
setup W
assert_eq "$(ack wrong "$LEASE" -40)" "FENCED lock not held" "ack with a wrong token"
assert_eq "$(rcli HEXISTS "$f" "$LEASE")" 1 "the record after the fenced ack"
rcli CONFIG RESETSTAT >/dev/null
assert_eq "$(ack tok "$LEASE" -40)" 39 "settled (whole claim: 40 claimed, 1 reset since)"
check W "whole claim"
assert_eq "$(rcli HEXISTS "$f" "$LEASE") $(rcli HEXISTS "$p" W3)" "0 0" "whole claim: its record; W3's payload (in its new record)"
assert_eq "$(rcli EVAL "local _, _, pl = cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1])) return pl and pl[2] or ''" 1 "$f" "$NEW")" pay3 \
    "whole claim: W3's payload kept in its new claim's record"
assert_eq "$(calls zmscore) $(calls zrem)" "1 0" "whole claim: one ZMSCORE, no ZREM"
assert_eq "$(ack tok "$LEASE" -40)" 0 "the same claim again: its record is gone, nothing settled"

# 2. piece by piece: P0..P9 (listed), then the rest
setup B
assert_eq "$(ack tok "$LEASE" 10 $(seq -f 'B%g' 0 9))" 9 "settled (10 listed, 1 reset since)"
check B "listed"
assert_eq "$(rec_ids "$LEASE")" "$(seq -f 'B%g' 10 39 | sort | paste -sd' ')" "the record: the IDs not acknowledged yet"
assert_eq "$(ack tok "$LEASE" 30 $(seq -f 'B%g' 10 39))" 30 "settled (the rest of claim B)"
assert_eq "$(rcli HEXISTS "$f" "$LEASE")" 0 "claim B's record, once its last ID settled"

# 3. both kinds in one call
setup C
lease_c=$LEASE
rcli ZADD "$z" $(($(now_ms) - 100)) D0 $(($(now_ms) - 99)) D1 >/dev/null
lease_d=$(claim 10)
assert_eq "$(ack tok "$lease_c" 10 $(seq -f 'C%g' 0 9) "$lease_d" -2)" $((9 + 2)) "settled (two groups)"
check C "two groups"
assert_eq "$(rcli HEXISTS "$f" "$lease_d")" 0 "the whole claim's record"

# 4. a shard without payloads or repeating IDs: a whole claim is one HDEL,
# nothing per ID
rcli DEL "$z" "$f" "$p" "$r" >/dev/null
for ((i = 0; i < 30; i++)); do echo "ZADD $z $(($(now_ms) - 1000 + i)) S$i"; done | rcli >/dev/null
lease_s=$(claim 30)
rcli CONFIG RESETSTAT >/dev/null
assert_eq "$(ack tok "$lease_s" -30)" 30 "a whole claim in a shard without payloads or repeating IDs"
assert_eq "$(calls zmscore) $(calls hget) $(calls hdel) $(rcli HLEN "$f") $(rcli ZCARD "$z")" "0 0 1 0 0" \
    "without payloads or repeating IDs: ZMSCORE, HGET, HDEL calls; records; zset"

# Every claim's lease is later than the previous claim's (the shard keeps
# its last lease, claim.lua's KEYS[8]), even within one millisecond: else
# two claims would share one record, and the first one's ack would settle
# the second's IDs before their events were acknowledged. A claim whose
# reply the scanner never read still ran, and the next one must not get its
# lease either.
far=$(($(now_ms) + 10000000)) # a previous lease far ahead: the next one must follow it
rcli SET "$NS:c:0" "$far" >/dev/null
rcli ZADD "$z" $(($(now_ms) - 1000)) X >/dev/null
l1=$(claim 10)
assert_eq "$l1" "$((far + 1)).25" "the lease after a previous one of $far"
assert_eq "$(rec_ids "$l1")" X "X claimed"
rcli ZADD "$z" $(($(now_ms) - 500)) X >/dev/null # reset to a due time
l2=$(claim 10)
assert_eq "$l2" "$((far + 2)).25" "the next claim's lease"
assert_eq "$(ack tok "$l1" -1) $(rec_ids "$l2")" "1 X" "the first claim's ack settles its own record only"
assert_eq "$(ack tok "$l2" -1) $(rcli HLEN "$f")" "1 0" "the second claim's ack settles X"

# Two claims in one MULTI (one millisecond), as after a lost reply:
rcli DEL "$NS:c:0" >/dev/null
rcli ZADD "$z" $(($(now_ms) - 1000)) Y1 $(($(now_ms) - 999)) Y2 >/dev/null
out=$({ echo MULTI; claim8 1; claim8 1; echo EXEC; } | rcli)
mapfile -t leases < <(grep -E '^[0-9]+\.25$' <<<"$out")
((${#leases[@]} == 2)) || fail "two claims in one MULTI: leases '${leases[*]}' from: $out"
[[ ${leases[0]} != "${leases[1]}" ]] || fail "two claims with the same previous lease got one lease: ${leases[0]}"
assert_eq "$(rec_ids "${leases[0]}") $(rec_ids "${leases[1]}")" "Y1 Y2" "Y1, Y2 each in its claim's record"
assert_eq "$(ack tok "${leases[1]}" -1)" 1 "the second claim acknowledged whole settles its own ID only"
assert_eq "$(rec_ids "${leases[0]}")" Y1 "Y1 (the first claim's) kept"
