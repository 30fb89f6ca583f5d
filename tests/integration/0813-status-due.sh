#!/usr/bin/env bash
# 0813-status-due: lapse-scale status --due [--json], the histogram of
# pending deadlines.
#
# 2 shards, 33 IDs: 3 overdue, 4 due within a minute, 5 within 10 minutes,
# 6 within an hour, 7 within a day, 8 later. Each shard's row and the total
# give exactly those counts (where each ID sits read from Redis), in text
# and in --json, and pending is their sum.
# Then a scanner serves a shard that holds overdue IDs, with the only
# broker down: it claims them and holds them in flight, in a claim's record
# (out of the sorted set). They leave "overdue", show as inflight, and are
# counted in no range ("1 min" stays what it was). The other shard's row does not change. --due goes with status
# only, and not with --watch. During a split (2 -> 4) every ID is counted
# in the shard that stores it (an old one), and the text says so.
# The text's columns say their range (overdue, <1m, 1m..10m, 10m..1h,
# 1h..1d, >1d), --json's .ranges name each key with that header and its
# edges; the next deadline to come, per shard and in total, in the text
# ("next due" column, "in N s"; a "next deadline:" line with its ISO time
# and shard) and in --json (next_due_ms, total.next_due_shard): the
# earliest score after now among the shard's IDs, read from Redis.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
SCANNER_CFG="poll_ms = 10; lease_ms = 3000;"
write_config
scale init 2 >/dev/null

# bucket prefix -> count, ms from now
names=(overdue next_1m next_10m next_1h next_1d later)
counts=(3 4 5 6 7 8)
offsets=(-5000 30000 300000 1800000 18000000 259200000)
now=$(now_ms)
for b in 0 1 2 3 4 5; do
    for ((i = 0; i < counts[b]; i++)); do echo "touch ${names[b]}-$i @$((now + offsets[b]))"; done
done | produce 2>/dev/null || fail "producer: exit status $?"

# want SHARD BUCKET: how many of the bucket's IDs shard SHARD holds
want() { shard_ids "$1" | grep -c "^$2-" || true; }

scale status --due --json >due.json || fail "status --due --json: exit status $?"
scale status --due >due.txt || fail "status --due: exit status $?"
for s in 0 1; do
    row=$(awk -v s=$s '$1 == s' due.txt)
    text=($row)
    sum=0
    for b in 0 1 2 3 4 5; do
        w=$(want $s "${names[b]}")
        sum=$((sum + w))
        assert_eq "$(jq ".shard_info[$s].${names[b]}" due.json)" "$w" "shard $s ${names[b]} (--json)"
        assert_eq "${text[b + 2]}" "$w" "shard $s ${names[b]} (text: $row)"
    done
    assert_eq "$(jq ".shard_info[$s] | [.inflight, .pending] | @tsv" -r due.json)" "0	$sum" \
        "shard $s inflight, pending (--json)"
    assert_eq "${text[8]} ${text[9]}" "0 $sum" "shard $s inflight, pending (text)"
done
assert_eq "$(jq -c '[.total | .overdue, .next_1m, .next_10m, .next_1h, .next_1d, .later, .inflight, .pending]' due.json)" \
    "[3,4,5,6,7,8,0,33]" "total (--json)"
assert_file_match due.txt '^total +3 +4 +5 +6 +7 +8 +0 +33 +in [0-9]+\.[0-9] s$' "total (text)"
assert_eq "$(awk '$1 == "shard"' due.txt | tr -s ' ')" "shard node overdue <1m 1m..10m 10m..1h 1h..1d >1d inflight pending next due" \
    "the text's columns"
assert_eq "$(jq -c '[.ranges[] | [.name, .header, .from_ms, .to_ms]]' due.json)" \
    '[["overdue","overdue",null,0],["next_1m","<1m",0,60000],["next_10m","1m..10m",60000,600000],["next_1h","10m..1h",600000,3600000],["next_1d","1h..1d",3600000,86400000],["later",">1d",86400000,null]]' \
    "--json's ranges"
# the next deadline: per shard the earliest score after now (now_ms: the
# shard's clock when read), in total the earliest of those
for s in 0 1; do
    n=$(jq ".shard_info[$s].now_ms" due.json)
    w=$(rcli EVAL "$_SK_LUA
        local t
        for _, k in ipairs(_sk_keys(KEYS[1])) do
            local r = redis.call('ZRANGEBYSCORE', k, '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
            if r[2] and (not t or tonumber(r[2]) < t) then t = tonumber(r[2]) end
        end
        return t and string.format('%d', t) or 'null'" 1 "$NS:z:$s" "$n")
    assert_eq "$(jq ".shard_info[$s].next_due_ms" due.json)" "$w" "shard $s next_due_ms"
done
first=$(jq '[.shard_info[].next_due_ms | numbers] | min' due.json)
assert_eq "$(jq -c '[.total.next_due_ms, (.shard_info[.total.next_due_shard].next_due_ms)]' due.json)" "[$first,$first]" \
    "total next_due_ms and the shard it is in"
assert_le "$first" $((now + 30000)) "the next deadline (a <1m ID's)"
assert_file_match due.txt "^next deadline: 20[0-9-]{8}T[0-9:]{8}\\.[0-9]{3}Z \\(in [0-9]+\\.[0-9] s\\), shard $(jq .total.next_due_shard due.json)\$" \
    "the text's next deadline"
assert_eq "$(jq -c '[.state, .shards, .edges_ms]' due.json)" '["stable",2,[0,60000,600000,3600000,86400000]]' \
    "state, shards, edges"

# in flight: the overdue IDs of a shard S that has some, held by its
# scanner while Kafka is down
kafka_ctl "down 1"
S=0
(($(want 0 overdue) > 0)) || S=1
U=$((1 - S))
oS=$(want $S overdue) # (read before the scanner takes them out of the set)
mS=$(want $S next_1m)
scanner_start $S
held() { scale status --due --json >due2.json && [[ $(jq ".shard_info[$S].inflight" due2.json) == "$oS" ]]; }
wait_until 10000 held || fail "shard $S never showed $oS in flight: $(jq -c ".shard_info[$S]" due2.json)"
assert_eq "$(shard_count "$S" "($now" "+inf")" "$(shard_card "$S")" \
    "shard $S's scores all ahead of the writes (the in-flight ones left the set)"
assert_eq "$(jq -c ".shard_info[$S] | [.overdue, .next_1m, .inflight]" due2.json)" "[0,$mS,$oS]" \
    "shard $S overdue, next_1m (the leases not in it), inflight"
assert_eq "$(jq -c ".shard_info[$U] | del(.now_ms)" due2.json)" "$(jq -c ".shard_info[$U] | del(.now_ms)" due.json)" \
    "shard $U, untouched"
assert_eq "$(jq -c '[.total | .overdue, .next_1m, .inflight, .pending]' due2.json)" \
    "[$((3 - oS)),4,$oS,33]" "total overdue, next_1m, inflight, pending"
scale status --due >due2.txt || fail "status --due: exit status $?"
assert_file_match due2.txt "^$S +127\\.0\\.0\\.1:[0-9]+ +0 +$mS .* $oS +$(jq ".shard_info[$S].pending" due2.json) +(in [0-9.]+ s|-)\$" \
    "shard $S's row in text"

# options
scale status --due --watch >/dev/null 2>err.txt && fail "status --due --watch was accepted"
assert_file_match err.txt 'without --json or --due' "--due --watch refused"
scale check --due >/dev/null 2>err.txt && fail "check --due was accepted"
assert_file_match err.txt 'option --due does not go with check' "--due with check refused"
kafka_ctl "up 1"
# the held IDs are delivered and settled before the scanner stops (a stop
# while they are in flight leaves them leased, counted pending but in no zset)
settled() { scale status --due --json >due2b.json && [[ $(jq .total.inflight due2b.json) == 0 ]]; }
wait_until 15000 settled || fail "the held IDs not settled within 15 s of the broker's return: $(jq -c .total due2b.json)"
scanner_stop

# a split: the IDs stay where they are stored, in the old shards, and are
# counted there; the new shards show none, the total is unchanged
left=$(($(shard_card 0) + $(shard_card 1))) # (the broker back, the held IDs fired)
scale split >/dev/null || fail "split: exit status $?"
scale status --due --json >due3.json || fail "status --due --json while splitting: exit status $?"
scale status --due >due3.txt || fail "status --due while splitting: exit status $?"
assert_eq "$(jq -c '[.state, .shards, .prev_shards, .total.pending, .shard_info[2].pending, .shard_info[3].pending]' due3.json)" \
    "[\"splitting\",4,2,$left,0,0]" "state, shards, total and new shards while splitting"
assert_file_match due3.txt '^split: an ID not moved yet is counted in the old shard that holds it$' \
    "the text says where IDs of a split are counted"

# the scripts go by SHA1 (tools/scale/evalsha.h): each is ~34 KB, and an
# EVAL sends and hashes it whole every call. Known to this server by now,
# another status --due and status send none of them whole again (every
# command logged: SLOWLOG at 0 us; an EVAL shows its script's first line).
scale status --json >/dev/null || fail "status: exit status $?" # (health.lua's first call here)
rcli CONFIG SET slowlog-max-len 100000 >/dev/null
rcli CONFIG SET slowlog-log-slower-than 0 >/dev/null
rcli SLOWLOG RESET >/dev/null
scale status --due --json >/dev/null || fail "status --due again: exit status $?"
scale status --json >/dev/null || fail "status again: exit status $?"
rcli CONFIG SET slowlog-log-slower-than 10000 >/dev/null
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --json SLOWLOG GET 100000 >slow.json
assert_eq "$(jq '[.[] | select(.[3][0] == "EVALSHA")] | length > 0' slow.json)" true "status calls its scripts by SHA1"
assert_eq "$(jq -r '[.[] | select(.[3][0] == "EVAL") | .[3][1] | split("\n")[0]] | unique | join(", ")' slow.json)" "" \
    "scripts a status --due and a status sent whole to a server that knows them"
