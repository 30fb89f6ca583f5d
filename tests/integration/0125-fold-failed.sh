#!/usr/bin/env bash
# 0125-fold-failed: an op folded into another of the same batch shares its
# fate: when the write that carries both fails, both are reported (the
# stdin producer names both lines), never one taken for applied.
#
# `extend d +60000` then `extend d +5000` in one batch: the second adds
# nothing (the first's deadline is later) and is folded away. Redis refuses
# the write (maxmemory 1: OOM) until redis.retry_timeout_ms (300) runs out.
#
# Catches: a folded op's tag dropped: its line counted as applied while the
# write it rode on failed (found by the nemesis, seed 27: an extend +991 ms
# folded into one that failed during a slot move, then "acked", so a
# deadline it should have moved fired).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
write_config "$CONF" ""
sed -i "s|^redis = { nodes = \(.*\); };$|redis = { nodes = \1; retry_timeout_ms = 300; };|" "$CONF"
grep -q "retry_timeout_ms = 300" "$CONF" || fail "could not set redis.retry_timeout_ms"
scale init 1 >/dev/null || fail "init: exit status $?"
echo "touch warm +600000" | produce 2>/dev/null || fail "the first write failed"

rcli CONFIG SET maxmemory 1 >/dev/null
rc=0
printf 'extend d +60000\nextend d +5000\ntouch e +60000\n' | produce >out.txt 2>err.txt || rc=$?
rcli CONFIG SET maxmemory 0 >/dev/null
assert_eq "$rc" 1 "the producer's exit status (writes failed)"
assert_file_match err.txt '^(error lapse-producer: )?line 1: ' "line 1 reported"
assert_file_match err.txt '^(error lapse-producer: )?line 2: ' "line 2 (folded into line 1) reported"
assert_file_match err.txt '^(error lapse-producer: )?line 3: ' "line 3 reported"
assert_eq "$(id_score d)" "" "d after the refused writes"
