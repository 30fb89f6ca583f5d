#!/usr/bin/env bash
# 0611-resend-repeat-earlier: a repeat sent again (apply.lua's flag G) is
# left as it is only when the ID holds that very repeat: the same period,
# its first point (or as many periods on as the record says it fired), and
# its payload. An earlier repeat of the ID on the same grid is not it: the
# copy sent first may never have run (held by CLIENT PAUSE, its client
# killed), and taking the earlier one for it lost the op.
#
# Catches: any repeat of the same period whose pending deadline lay on the
# grid from the new first point passed for the new one; under CPU load,
# 0160-pipeline-faults ended with an older repeat's deadline and payload
# (repeat @T+10 s pl-3140, later repeat @T pl-3809, both every 1 s: the
# later one, sent again with G, was skipped).
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale_init_one_zset 1 >/dev/null
epoch=$(shard_epoch 0)
b=$(($(now_ms) + 3600000)) # far ahead: nothing is due
apply() { lapse_lua apply 0 "$epoch" 0 "$@" >/dev/null; }
state() { echo "$(rcli ZSCORE "$NS:z:0" "$1") $(rcli HGET "$NS:p:0" "$1") $(rcli HGET "$NS:r:0" "$1")"; }

# 1. X repeats every 1 s from b + 10 s with payload A; a later repeat from
# b with payload B, sent again (G), whose first copy never ran: applied.
apply "rRP@$((b + 10000))" X 1000 A
assert_eq "$(state X)" "$((b + 10000)) A 1000:0" "X's first repeat"
apply "rRPG@$b" X 1000 B
assert_eq "$(state X)" "$b B 1000:0" "a later repeat on the grid of the earlier one, sent again"

# 2. The same without payloads: the first point tells them apart.
apply "rR@$((b + 10000))" Y 1000
apply "rRG@$b" Y 1000
assert_eq "$(state Y)" "$b  1000:0" "a later repeat without payload, sent again"

# 3. The repeat itself, sent again: left as it is, its count kept, whether
# it never fired (pending at its first point) or fired 3 times (3 periods
# or more on: the scanner skips missed fires).
apply "rRP@$b" Z 1000 C
apply "rRPG@$b" Z 1000 C
assert_eq "$(state Z)" "$b C 1000:0" "the same repeat sent again, never fired"
rcli ZADD "$NS:z:0" $((b + 5000)) Z >/dev/null
rcli HSET "$NS:r:0" Z 1000:3 >/dev/null
apply "rRPG@$b" Z 1000 C
assert_eq "$(state Z)" "$((b + 5000)) C 1000:3" "the same repeat sent again, fired 3 times"
# ... but not one whose payload differs, nor one fewer periods on than fired
apply "rRPG@$b" Z 1000 D
assert_eq "$(state Z)" "$b D 1000:0" "a repeat with another payload, sent again"
rcli ZADD "$NS:z:0" $((b + 2000)) Z >/dev/null
rcli HSET "$NS:r:0" Z 1000:3 >/dev/null
apply "rRG@$b" Z 1000
assert_eq "$(state Z)" "$b D 1000:0" "a deadline behind its fires: not this repeat"
