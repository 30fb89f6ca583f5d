#!/usr/bin/env bash
# 0991-nemesis-client: the nemesis's workload writer and checker end to end,
# without faults: nemesis-client writes a seeded mix for 8 s against two
# shards with their scanners, the events are read back, and nemesis-check
# proves every rule over the run (hundreds of events). One pending ID is
# deleted behind lapse's back (a ZREM of its member): the checker must name
# it under never-lost and nothing else; without it, the same run passes.
. "$(dirname "$0")/../lib.sh"

if [[ $LAPSE_BIN == */build/*/bin ]]; then NM=${LAPSE_BIN%/bin}/tests/nemesis; else NM=$LAPSE_ROOT/build/plain/tests/nemesis; fi
[[ -x $NM/nemesis-client && -x $NM/nemesis-check ]] || fail "no $NM/nemesis-client or nemesis-check: make nemesis-tools"

redis_start main
kafka_start --brokers 1
write_config
scale init 2 >/dev/null
scanner_start 0
scanner_start 1
RUN=$T/run
mkdir -p "$RUN"
: >"$RUN/faults.jsonl"
events_follow "$RUN/events.jsonl"

seed=991
grace=3000
start=$(local_ms)
"$NM/nemesis-client" -c "$CONF" --seed $seed --writer client --prefix c- --ids 300 --rate 100 \
    --seconds 8 --history "$RUN/history-client.jsonl" 2>client.err || fail "nemesis-client: $(cat client.err)"
stop=$(local_ms)
ops=$(grep -c '"t":"op"' "$RUN/history-client.jsonl")
acks=$(grep -c '"t":"ack"' "$RUN/history-client.jsonl")
assert_ge "$ops" 600 "ops written in 8 s at 100/s"
assert_eq "$acks" "$ops" "acks (one per op)"
assert_eq "$(grep -c '"ok":false' "$RUN/history-client.jsonl" || true)" 0 "ops reported failed"

# the victim: an ID whose last op is a touch (every touch's deadline is
# owed an event), still pending 1.5 .. 8 s from now; its member goes
last_touch=$(jq -s -r 'reduce (.[] | select(.t == "op")) as $o ({}; .[$o.id] = $o.op)
    | to_entries[] | select(.value == "touch") | .key' "$RUN/history-client.jsonl" | sort)
now=$(now_ms)
victim=
while read -r key; do
    while read -r member; do
        if grep -qx -- "$member" <<<"$last_touch"; then victim=$member vkey=$key; break 2; fi
    done < <(rcli ZRANGEBYSCORE "$key" $((now + 1500)) $((now + 8000)))
done < <(rcli --scan --pattern "$NS:z:*")
[[ -n $victim ]] || fail "no pending ID whose last op is a touch (seed $seed)"
assert_eq "$(rcli ZREM "$vkey" "$victim")" 1 "ZREM $victim from $vkey"
note "deleted $victim from $vkey"

# every short deadline (up to 10 s after the last op) passed, and the grace
wait_until 30000 '(($(local_ms) >= stop + 10000 + grace + 500))' || fail "the clock did not move"
end=$(local_ms)
events_follow_stop
printf '{"seed":%d,"minutes":0,"ns":"%s","start_ms":%d,"stop_ms":%d,"end_ms":%d,"grace_ms":%d,"writers":["client"]}\n' \
    $seed "$NS" "$start" "$stop" "$end" $grace >"$RUN/meta.json"

rc=0
"$NM/nemesis-check" "$RUN" >check.out || rc=$?
cat check.out
assert_eq "$rc" 1 "nemesis-check's status with $victim deleted"
assert_eq "$(grep -c '^VIOLATION' check.out)" 1 "violated rules"
assert_file_match check.out "^VIOLATION never-lost: 1 \\(first: $victim: touch n=[0-9]+ acked ok"
assert_file_match check.out "^    seed $seed$"
assert_file_match check.out "^    history of $victim:$"

# the same run without the victim's records: every rule holds
mkdir -p clean
cp "$RUN/meta.json" "$RUN/faults.jsonl" clean/
jq -c --arg id "$victim" 'select(.id != $id)' "$RUN/events.jsonl" >clean/events.jsonl
jq -c --arg id "$victim" -s '(map(select(.t == "op" and .id == $id) | .n)) as $ns
    | .[] | select((.n as $n | $ns | index($n)) | not)' "$RUN/history-client.jsonl" \
    >clean/history-client.jsonl
"$NM/nemesis-check" clean >check.out || fail "nemesis-check failed on the clean run: $(cat check.out)"
cat check.out
assert_eq "$(grep -c '^ok ' check.out)" 8 "rules that hold"
checked=$(sed -n 's/^ok never-early (\([0-9]*\) timeout events checked)$/\1/p' check.out)
assert_ge "${checked:-0}" 100 "timeout events checked"
lost=$(sed -n 's/^ok never-lost (\([0-9]*\) deadlines checked.*/\1/p' check.out)
assert_ge "${lost:-0}" 100 "deadlines checked for never-lost"

# unreadable input: status 2
rc=0
"$NM/nemesis-check" "$T/nothing-here" >/dev/null 2>&1 || rc=$?
assert_eq "$rc" 2 "nemesis-check's status on a missing run"
