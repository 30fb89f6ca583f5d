#!/usr/bin/env bash
# 0605-sentinel-stale-primary: the sentinels replace a primary that did not
# die (SENTINEL FAILOVER here; in production a false failover, or a partition
# that healed), and every program leaves it by itself, although it goes on
# answering as a primary.
#
# Sentinel demotes a former primary only 8 s or more after it sees it again,
# and never while it cannot reach it; until then whatever a client writes
# there is lost. Here primary a cannot be demoted at all (its REPLICAOF and
# SLAVEOF are renamed away), so only a program that asks the sentinels by
# itself ever leaves it. One node "lapse-a" (a; replicas b, c; three
# sentinels), two shards with a scanner each, one long-running producer A.
# Checked:
#  - before: IDs written through A fire (from a);
#  - after the failover: both scanners say they leave a for the new primary,
#    and A's writes land on the new primary, none on a; they fire there,
#    once each, never early;
#  - every sentinel hung (SIGSTOP): A's writes are applied and fire, and
#    nobody leaves the primary (a confirmation that gets no answer keeps it);
#  - no connection of lapse's is left on a.
. "$(dirname "$0")/../lib.sh"

# lapse_clients_on PORT: the connections to that server that are not a
# sentinel's, a replica's or this query's own
lapse_clients_on() {
    redis-cli -p "$1" CLIENT LIST | tr -d '\r' |
        grep -v -e ' name=sentinel-' -e ' flags=S ' -e ' cmd=client|list ' | grep -c '^id='
}

# stored_on PORT PREFIX: how many IDs beginning with PREFIX the shard zsets hold there
stored_on() {
    redis-cli -p "$1" EVAL "local c = 0
        for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
            for _, m in ipairs(redis.call('ZRANGE', k, 0, -1)) do
                if string.sub(m, 1, #ARGV[2]) == ARGV[2] then c = c + 1 end
            end
        end
        return c" 0 "$NS" "$2"
}

sentinel_node --rename-command REPLICAOF '' --rename-command SLAVEOF ''
pa=$(redis_port a)
kafka_start --brokers 1
write_config
sentinel_config
scale init 2 >/dev/null || fail "init through Sentinel: exit status $?"
scanner_start 0
scanner_start 1
events_follow events.json
sp_producer A

seq -f 'e-%03g' 0 99 | awk '{ print "touch " $1 " +300" }' >early.txt
sp_feed A early.txt
events_wait_ids events.json 100 10000
((baseline = $(lapse_clients_on "$pa"))) || fail "no connection of lapse's on a before the failover"

assert_eq "$(redis-cli -p "${SENTINEL_PORTS[0]}" SENTINEL FAILOVER lapse-a)" OK "SENTINEL FAILOVER"
wait_until 10000 '[[ $(sentinel_primary lapse-a) != "$pa" ]]' ||
    fail "the sentinels still name a as the primary 10 s after SENTINEL FAILOVER"
pn=$(sentinel_primary lapse-a)
assert_eq "$(redis-cli -p "$pa" ROLE | head -n 1)" master "a's role after the failover (it cannot be demoted)"
note "failed over from $pa to $pn; $baseline connections of lapse's were on a"

# the scanners claim every poll_ms: each finds out at its next confirmation
wait_until 10000 'grep -q "sentinels now name 127.0.0.1:$pn as the primary" "$T/scanner-0.log" &&
    grep -q "sentinels now name 127.0.0.1:$pn as the primary" "$T/scanner-1.log"' ||
    fail "the scanners did not leave a within 10 s of the failover: $(grep -h 'sentinels now' "$T"/scanner-*.log)"

# A has been idle since the failover: its next write confirms the primary first
seq -f 'f-%03g' 0 99 | awk '{ print "touch " $1 " +1000" }' >after.txt
sp_feed A after.txt # (returns once they are on the primary the sentinels name)
assert_eq "$(stored_on "$pa" f-)" 0 "IDs written after the failover that landed on a"
events_wait_ids events.json 200 10000

# every sentinel hangs (SIGSTOP): that alone is no reason to leave the
# primary; A's writes go on, the scanners fire them, nobody reconnects
moves=$(cat "$T"/scanner-*.log | grep -c 'sentinels now name')
for n in "${SENTINEL_NAMES[@]}"; do kill -STOP "${_PID[$n]}"; done
_sp_ports() { echo "$pn"; } # (sp_feed's look-ups: the sentinels do not answer now)
seq -f 'g-%03g' 0 49 | awk '{ print "touch " $1 " +500" }' >hung.txt
sp_feed A hung.txt
events_wait_ids events.json 250 10000
for n in "${SENTINEL_NAMES[@]}"; do kill -CONT "${_PID[$n]}"; done
assert_eq "$(cat "$T"/scanner-*.log | grep -c 'sentinels now name')" "$moves" \
    "times the scanners left a primary (before the sentinels hung: $moves)"

proc_stop A 10
assert_eq "$PROC_RC" 0 "producer A's exit status"
wait_until 10000 '(($(lapse_clients_on "$pa") == 0))' ||
    fail "connections of lapse's left on a: $(redis-cli -p "$pa" CLIENT LIST | grep -v -e name=sentinel- -e 'cmd=client|list')"
scanner_stop
events_follow_stop
grep -e '"f-' -e '"g-' events.json >after.json
assert_once after.json
assert_never_early events.json
