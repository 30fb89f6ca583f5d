#!/usr/bin/env bash
# 0394-idle-fences: a napping scanner's lease renewal (sleep.lua) meets
# both fences, as every script answers them (common/script.h):
#  1. its lock taken by another token while it naps: the renewal answers
#     FENCED, the scanner counts itself fenced and goes back to standby
#     (it takes the shard again once the lock is free), no Redis error;
#  2. a split begun while it naps: the renewal answers STALE, the scanner
#     claims, reads the new layout and says so, no Redis error.
# Catches: a renewal's fence read as an unexpected reply (a Redis error
# counted and logged, the fence noticed only by a later claim, or not at
# all while the scanner naps).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
metrics_config "lease_ms = 10000; idle_ms = 2000;"
scale init 1 >/dev/null
scanner_start 0
S=$SCANNER
wait_until 5000 '[[ $(lock_pid 0) == $(proc_pid $S) ]]' || fail "the scanner did not take the lock"
napping() { [[ $(rcli GET "$NS:s:0") == inf ]]; }
wait_until 5000 napping || fail "the scanner set no mark"

# ---- 1. the lock taken while it naps
rcli SET "$NS:l:0" "someone-else" PX 6000 >/dev/null
wait_until 5000 '(( $(metric "$mp" fenced_total) >= 1 ))' ||
    fail "the napping scanner did not find its lock taken (fenced_total $(metric "$mp" fenced_total))"
assert_eq "$(metric "$mp" redis_errors_total)" 0 "Redis errors after the lock fence"
assert_file_match "$T/$S.log" "shard 0: lost the lease" "the scanner's line"
wait_until 15000 '[[ $(lock_pid 0) == $(proc_pid $S) ]]' || fail "the scanner did not take the shard again"
wait_until 5000 napping || fail "no mark after taking the shard again"

# ---- 2. a split begun while it naps
scale split >split.out || fail "split: exit status $?"
wait_until 5000 "grep -q 'shard 0: layout epoch [0-9]*: 2 shards, splitting' '$T/$S.log'" ||
    fail "the napping scanner did not read the split's layout: $(tail -n 3 "$T/$S.log")"
assert_eq "$(metric "$mp" redis_errors_total)" 0 "Redis errors after the layout fence"
