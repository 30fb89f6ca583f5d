#!/usr/bin/env bash
# 0545-split-fence-sigterm: SIGTERM still ends programs that a hung split
# (fenced, never published: see 0540) holds up.
#
# With the shards fenced at epoch + 1 and no layout published, a scanner and
# a long-running producer with a write in hand (it retries on STALE, 0540)
# get SIGTERM. The contract: SIGTERM ends every program cleanly, with a
# non-zero status and a reason when something could not be done. So the
# scanner exits 0, and the producer exits within a bounded time (3 s here,
# redis.retry_timeout_ms = 1000), non-zero, naming the line it could not
# apply (it was not applied: the split never completed).
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
SP_REDIS_EXTRA="command_timeout_ms = 1000; retry_timeout_ms = 1000;"
sp_write_config
scale init 2 >/dev/null
scanner_start 0
sp_producer P
printf 'touch a +60000\n' >a.txt
sp_feed P a.txt

# a split that died after its fence
sp_dead_split_fence

printf 'touch b +60000\n' >&"${SP_FD[P]}"
sleep 0.5
assert_eq "$(sp_where b)" "" "b while fenced"
proc_alive P || fail "the producer exited before SIGTERM"

scanner_stop 0 # SIGTERM; exit status 0 within 10 s

pid=$(proc_pid P)
_WATCH[P]=0
kill -TERM "$pid"
if ! wait_until 3000 "! _pid_alive $pid"; then
    fail "producer paused by a fenced, unpublished layout still running 3 s after SIGTERM" \
        "(the STALE retry in producer_send needs a bound)"
fi
rc=0
wait "$pid" 2>/dev/null || rc=$?
assert_eq "$(sp_where b)" "" "b after the producer exited (the layout is still fenced)"
((rc != 0 && rc < 128)) || fail "producer exit status $rc after SIGTERM with a line not applied"
assert_file_match P.log 'line [0-9]+' "the producer's report of the line not applied"
