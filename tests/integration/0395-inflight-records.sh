#!/usr/bin/env bash
# 0395-inflight-records: f keeps one record per lease (common/lua/lib/
# inflight.lua): the IDs a claim or take leased with it and their
# deadlines. Sections 0-2 write the records of a take, and of a claim of
# lapse before 2026-11-26 (IDs holding a ".5" lease in the zset: what an
# upgrade finds); section 3 a claim's of now (".25": its IDs out of the
# zset). Records must neither lose a deadline nor pile up:
#   lookup: an ID's deadline is found in its lease's record also when the
#     ID is a suffix of another, all digits (equal to another's deadline),
#     or holds a tab;
#   acquire (a takeover): every ID still holding the lease of its record
#     gets that deadline back, an ID claimed anew under a later lease its
#     later record's, a reset or cancelled one nothing; an entry lapse wrote
#     before records (ID -> deadline) is honoured too, a dotted ID's also;
#     f is then empty;
#   claim: an expired lease's holder fires with its record's deadline, and
#     the records of expired leases that no ID holds any more go (all their
#     IDs reset, cancelled or claimed again), while an unexpired one and one
#     whose IDs are still due stay; a field that is not a lease (an old
#     entry) is left for acquire and breaks nothing;
#   a claim's record that runs out unsettled: its IDs not written since come
#     back (as an expired lease, claimed again with their deadlines and
#     marked returned; their payloads restored from the record), a reset
#     one keeps its reset; at a takeover every record's IDs get their
#     deadlines back and f is empty.
# One-zset form (scale_init_one_zset, also under LAPSE_TEST_SMALL_KEYS=1):
# it tests that form's internals (scores and records it crafts and reads
# in NS:z:I and its hashes).
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale_init_one_zset 1 >/dev/null
epoch=$(shard_epoch 0)
z=$NS:z:0 f=$NS:f:0
b=$(($(now_ms) + 3600000)) # far ahead: nothing of section 1 is due

# 0. lookup
tab=$(printf 'ta\tb')
l0="$((b + 50)).5"
inflight_set 0 "$l0" ax1 $((b + 7)) x1 $((b + 8)) 1795000000000 $((b + 9)) 17 1795000000000 "$tab" $((b + 10))
assert_eq "$(inflight_of x1 0) $(inflight_of ax1 0) $(inflight_of 17 0) $(inflight_of 1795000000000 0) $(inflight_of "$tab" 0)" \
    "$((b + 8)) $((b + 7)) 1795000000000 $((b + 9)) $((b + 10))" "deadlines found in a record"
rcli DEL "$z" "$f" >/dev/null

# 1. acquire
l1="$((b + 100)).5" l2="$((b + 200)).5"
inflight_set 0 "$l1" A $((b + 1)) B $((b + 2)) C $((b + 3)) D $((b + 4))
inflight_set 0 "$l2" C $((b + 33))           # C claimed anew (l1 ran out)
rcli ZADD "$z" $((b + 50)) B >/dev/null     # B reset
rcli ZREM "$z" D >/dev/null                 # D cancelled
rcli ZADD "$z" "$((b + 300)).5" E >/dev/null # E: an entry of lapse before records
rcli HSET "$f" E $((b + 5)) >/dev/null
rcli ZADD "$z" "$((b + 300)).5" dev.1 >/dev/null # and a dotted one
rcli HSET "$f" dev.1 $((b + 6)) >/dev/null
got=$(lapse_lua acquire 0 tok 5000 | paste -sd' ')
assert_eq "$got" "1 4" "acquired, 4 IDs recovered (A, C, E, dev.1)"
assert_eq "$(rcli ZMSCORE "$z" A B C D E dev.1 | paste -sd' ')" "$((b + 1)) $((b + 50)) $((b + 33))  $((b + 5)) $((b + 6))" \
    "deadlines back: A (its record), B (its reset), C (its later record), D (gone), E and dev.1 (old entries)"
assert_eq "$(rcli EXISTS "$f")" 0 "f after a takeover"

# 2. claim: records that go and records that stay
rcli FLUSHALL >/dev/null
scale_init_one_zset 1 >/dev/null
rcli SET "$NS:l:0" tok >/dev/null
t=$(now_ms)
gone1="$((t - 3000)).5" gone2="$((t - 2000)).5" due="$((t - 1000)).5" ahead="$((t + 60000)).5"
inflight_set 0 "$gone1" X1 $((t - 9000)) X2 $((t - 8999)) # both reset since
rcli ZADD "$z" $((t + 60000)) X1 >/dev/null
rcli ZREM "$z" X2 >/dev/null                               # and cancelled
inflight_set 0 "$due" Y1 $((t - 7000)) Y2 $((t - 6999))    # their holder died: due again
inflight_set 0 "$ahead" W $((t - 500))                     # not expired: kept, whoever holds it
rcli ZADD "$z" $((t + 1)) W >/dev/null
rcli HSET "$f" olddev $((t - 100)) >/dev/null              # not a lease: acquire's
rcli ZADD "$z" $((t + 40000)).5 olddev >/dev/null
rcli ZADD "$z" $((t + 30000)) gone2-holder >/dev/null
inflight_set 0 "$gone2" Z $((t - 5000))
rcli ZREM "$z" Z >/dev/null

# one ID per claim: Y1 first (its record stays: Y2 still holds the lease)
claimq() { # BATCH LEASE_MS: claim.lua's reply (the claimed IDs: cmsgpack)
    rcli EVAL "$(lua_source claim)" 8 "$z" "$NS:p:0" "$f" "$NS:r:0" "$NS:m:0" "$NS:l:0" "$NS:e:0" "$NS:c:0" \
        tok "$1" "$2" 1000 "$1" "$epoch"
}
rec_pairs() { # LEASE: its record's IDs and deadlines, one line
    rcli EVAL "$_CLAIM_OF_LUA
        return table.concat(_claim_list(redis.call('HGET', KEYS[1], ARGV[1])), ' ')" 1 "$f" "$1"
}
claim() { # up to N (1) IDs: "ID DEADLINE ... | PLACES" (places in `returned`: back from an expired lease)
    rcli EVAL "local function claim_run()
$(lua_source claim)
end
$_CLAIM_OF_LUA
local o = claim_run()
local l = o[6] ~= '' and _claim_list(o[6]) or {}
return table.concat(l, ' ') .. ' | ' .. table.concat(o[7], ' ')" 8 "$z" "$NS:p:0" "$f" "$NS:r:0" "$NS:m:0" "$NS:l:0" "$NS:e:0" "$NS:c:0" \
        tok "${1:-1}" 5000 1000 "${1:-1}" "$epoch"
}
assert_eq "$(claim)" "Y1 $((t - 7000)) | 1" "the first claim: Y1 with its record's deadline, returned"
assert_eq "$(rcli HEXISTS "$f" "$gone1") $(rcli HEXISTS "$f" "$gone2") $(rcli HEXISTS "$f" "$due")" "0 0 1" \
    "records of expired leases: X's and Z's gone (no holder), Y's kept (Y2 holds it)"
assert_eq "$(claim)" "Y2 $((t - 6999)) | 1" "the second claim: Y2 with its record's deadline, returned"
assert_eq "$(rcli HEXISTS "$f" "$due") $(rcli HEXISTS "$f" "$ahead") $(rcli HGET "$f" olddev)" "0 1 $((t - 100))" \
    "Y's record gone with its last holder; the unexpired lease's and the old entry kept"
assert_eq "$(inflight_of Y1 0) $(inflight_of Y2 0)" "$((t - 7000)) $((t - 6999))" \
    "Y1 and Y2 in flight again, each in its new claim's record"
# lapse-scale status counts the IDs holding a recorded lease (Y1, Y2), not
# the records (three: Y1's claim, Y2's, the unexpired one nobody holds)
assert_eq "$(scale status --json | jq -r '.shard_info[0].inflight') $(rcli HLEN "$f")" "2 4" \
    "status: IDs in flight (and f's fields: three records and the old entry)"

# 3. a claim's record (".25", its IDs out of the zset) that runs out
rcli FLUSHALL >/dev/null
scale_init_one_zset 1 >/dev/null
rcli SET "$NS:l:0" tok >/dev/null
t=$(now_ms)
rcli ZADD "$z" $((t - 3000)) K1 $((t - 2999)) K2 $((t - 2998)) K3 $((t - 2997)) K4 >/dev/null
rcli HSET "$NS:p:0" K1 pay1 K4 pay4 >/dev/null
rcli HSET "$NS:r:0" K3 1000:0 >/dev/null
la=$(claimq 10 300 | sed -n 2p)
[[ $la == *.25 ]] || fail "a claim's lease: '$la'"
assert_eq "$(rec_pairs "$la")" "K1 $((t - 3000)) K2 $((t - 2999)) K3 $((t - 2998)) K4 $((t - 2997))" "the claim's record"
assert_eq "$(rcli ZCARD "$z") $(rcli ZSCORE "$z" K3)" "1 $la" "the zset: only the repeating K3, on the lease"
rcli ZADD "$z" $((t + 60000)) K2 >/dev/null # reset while in flight
rcli HDEL "$NS:p:0" K1 >/dev/null           # (as the ack of K1 claimed anew would)
assert_eq "$(scale status --json | jq -r '.shard_info[0].inflight')" 3 "status: K1, K3, K4 in flight"
wait_until 3000 '(($(now_ms) > ${la%.*}))' || fail "the lease did not run out"
rcli SET "$NS:l:0" tok >/dev/null # (the lock lived 90 % of that short lease)
assert_eq "$(claim 10)" "K1 $((t - 3000)) K3 $((t - 2998)) K4 $((t - 2997)) | 1 2 3" \
    "the next claim: K1, K3, K4 back with their deadlines, all returned"
assert_eq "$(rcli ZSCORE "$z" K2) $(rcli HMGET "$NS:p:0" K1 K4 | paste -sd' ')" "$((t + 60000)) pay1 pay4" \
    "K2 keeps its reset; K1's payload restored from the record"
assert_eq "$(rcli HLEN "$f")" 1 "f: the new claim's record only"
rcli ZADD "$z" $(($(now_ms) - 10)) K5 >/dev/null
claim >/dev/null
assert_eq "$(lapse_lua acquire 0 tok2 5000 | paste -sd' ')" "0 tok" "the lock is held"
rcli DEL "$NS:l:0" >/dev/null
assert_eq "$(lapse_lua acquire 0 tok2 5000 | paste -sd' ')" "1 4" "a takeover: 4 IDs recovered (K1, K3, K4, K5)"
assert_eq "$(rcli ZMSCORE "$z" K1 K2 K3 K4 | paste -sd' ') $(rcli EXISTS "$f")" \
    "$((t - 3000)) $((t + 60000)) $((t - 2998)) $((t - 2997)) 0" "deadlines back (K2: its reset), f empty"
