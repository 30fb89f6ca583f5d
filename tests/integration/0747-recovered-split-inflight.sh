#!/usr/bin/env bash
# 0747-recovered-split-inflight: a watched ID whose timeout is in flight in
# its old shard when its first write lands in its new shard still gets its
# recovered event (lib/watch.lua, "busy record").
#
# 18 IDs that move to a new shard in a 2 -> 4 split are written with
# `watch` while every broker is down, so their timeouts are claimed and
# sent, not acknowledged: A, 12 from old shard 1, and B, 6 from old shard 0,
# whose scanner is then killed (kill -9: B's timeouts are never delivered).
# The split starts (SP_TWO_NODES=1, test 0748: the new shards on a second
# Redis) and every ID signals again: its first write in its new shard finds
# its twin in flight and leaves a busy record in the old one. The brokers
# come back and shard 0 gets a scanner again. Each A ends with either its
# timeout and then one recovered event for the same deadline (Kafka took
# the timeout: the old shard's ack queues the recovered event), or neither
# (librdkafka gave it up: claimed again, stale, dropped) - never a timeout
# alone, which would leave a consumer thinking the device down for good.
# Each B ends with neither: claimed again once the lease ran out, stale,
# dropped with its busy record. C, 4 more from old shard 1, are cancelled
# instead of signalling: never a recovered event. D, 4 more, are touched
# (busy records, as A) and then cancelled by the same producer, which knows
# them settled in their new shard by then: the cancel forgets recovery, so
# the busy record goes too and no recovered event follows (as in one shard,
# where the ack finds no record). Nobody is offline, no busy record is
# left.
#
# Catches: the old shard's ack finding no watch record (the recovered event
# lost), a busy record shown as offline, moved by finish, or left behind;
# a cancel of an ID settled in its new shard leaving its busy record in the
# old one (the producer's moved-ID cache sent it straight to the new shard,
# or take answered no record for it and drop was not told), so that the ack
# sent a recovered event for an ID whose recovery was off.
. "$(dirname "$0")/../lib.sh"

command -v xxhsum >/dev/null || fail "xxhsum is needed (scripts/install-deps)"
# A's timeouts must still be queued in librdkafka when the brokers return:
# message.timeout.ms follows the lease (lease - 1 s), and the steps between
# the claim and the return (split, scanners, three producers) take ~8 s
# under a sanitizer on a loaded 2-core machine, more than 14 s beside a
# nemesis run; at the default 5 s lease librdkafka gave every one up first
SCANNER_CFG="poll_ms = 10; lease_ms = 25000;"
sp_start
s0=$(_scanner_names 0)

a=() b=() c=() d=()
for i in $(seq 1 400); do
    case $(hash_shard "bz-$i" 4) in
    3) if ((${#a[@]} < 12)); then a+=("bz-$i"); elif ((${#c[@]} < 4)); then c+=("bz-$i")
       elif ((${#d[@]} < 4)); then d+=("bz-$i"); fi ;;
    2) ((${#b[@]} < 6)) && b+=("bz-$i") ;;
    esac
    ((${#a[@]} == 12 && ${#b[@]} == 6 && ${#c[@]} == 4 && ${#d[@]} == 4)) && break
done
inflight() { scale status --json | jq '[.shard_info[].inflight] | add'; }
busy() { # busy records in every shard's watch records (either form)
    local port key
    for port in "${SP_PORTS[@]:-$(redis_port main)}"; do
        redis-cli -p "$port" --scan --pattern "$NS:o:*" | while read -r key; do
            redis-cli -p "$port" HVALS "$key"
        done
    done | grep -c '^B ' || true
}
events_of() { jq -R -r --arg id "$1" 'fromjson? | select(.id == $id) | "\(.type) \(.deadline_ms)"' events.json | paste -sd' '; }

kafka_ctl "down 1"
printf 'watch %s +50\n' "${a[@]}" "${b[@]}" "${c[@]}" "${d[@]}" | produce 2>/dev/null || fail "producer: $?"
wait_until 10000 '(( $(inflight) >= 26 ))' || fail "in flight: $(inflight), not 26"
proc_kill9 "$s0"
sp_split >split.out || fail "split: exit status $?"
scanner_start 2
scanner_start 3
printf 'extend %s +600000\n' "${a[@]}" "${b[@]}" | produce 2>/dev/null || fail "producer: $?"
printf 'cancel %s\n' "${c[@]}" | produce 2>/dev/null || fail "producer: $?"
assert_eq "$(busy)" 18 "busy records of the IDs in flight (none for the cancelled)"
sp_producer pd
printf 'touch %s +600000\n' "${d[@]}" >touch-d
sp_feed pd touch-d
assert_eq "$(busy)" 22 "busy records after D's touch"
printf 'cancel %s\n' "${d[@]}" >cancel-d
sp_feed pd cancel-d
assert_eq "$(busy)" 18 "busy records after D's cancel (the same producer: D settled in its new shard)"
assert_eq "$(scale_offline)" "" "offline (a busy record is not)"
kafka_ctl "up 1"
scanner_start 0

wait_until 70000 '(( $(inflight) == 0 && $(busy) == 0 ))' ||
    fail "in flight $(inflight), busy records $(busy): not settled"
sleep 0.5 # a recovered event queued by the last ack goes out
pairs=0
for id in "${a[@]}"; do
    ev=$(events_of "$id")
    [[ -z $ev ]] && continue # given up, then stale and dropped: neither event
    read -r t1 d1 t2 d2 rest <<<"$ev"
    [[ $t1 == timeout && $t2 == recovered && $d1 == "$d2" && -z $rest ]] ||
        fail "$id's events: '$ev' (a timeout alone, or out of order)"
    pairs=$((pairs + 1))
done
note "$pairs of ${#a[@]} IDs had their timeout delivered and a recovered event; the rest neither"
((pairs > 0)) || fail "no timeout was delivered after the brokers came back: the race was not exercised"
for id in "${b[@]}"; do assert_eq "$(events_of "$id")" "" "$id's events (never delivered, then stale)"; done
for id in "${c[@]}" "${d[@]}"; do
    [[ $(events_of "$id") =~ recovered ]] && fail "$id (cancelled) got a recovered event: $(events_of "$id")"
done
assert_eq "$(scale_offline)" "" "offline at the end"
scale finish >finish.out || fail "finish: exit status $? ($(cat finish.out))"
assert_eq "$(scale_offline)" "" "offline after finish"
