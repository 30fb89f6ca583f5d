#!/usr/bin/env bash
# 0085-two-namespaces: two namespaces, "demo" (2 shards) and "other" (4),
# share one Redis and one topic, with the same IDs in both. Checked:
#  - each ID fires once per namespace, with that namespace's ns, deadline
#    and payload; a cancel in one leaves the other's ID alone;
#  - a split of demo (2 -> 4, finish) leaves other's layout, epoch and
#    pending IDs as they were, and both go on firing afterwards;
#  - every key in Redis belongs to one of the two namespaces.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start --brokers 1
write_config
sed "s/^namespace = .*/namespace = \"other\";/" "$CONF" >other.conf
scale init 2 >/dev/null || fail "init demo: exit status $?"
lapse_scale other.conf init 4 >/dev/null || fail "init other: exit status $?"
scanners_start 2
for s in 0 1 2 3; do spawn "other-$s" "$LAPSE_BIN/lapse-scanner" -c other.conf --shard "$s"; done
events_follow events.json

t0=$(now_ms)
for i in $(seq 0 49); do echo "touch x-$i @$((t0 + 600 + i * 10)) demo-$i"; done >demo.txt
for i in $(seq 0 49); do echo "touch x-$i @$((t0 + 900 + i * 10)) other-$i"; done >other.txt
echo "touch x-far @$((t0 + 3600000))" >>other.txt
echo "cancel x-7" >>demo.txt
produce <demo.txt || fail "producer of demo: exit status $?"
"$LAPSE_BIN/lapse-producer" -c other.conf <other.txt || fail "producer of other: exit status $?"
wait_until 15000 '(($(jq -s length events.json) >= 99))' || fail "$(jq -s length events.json) of 99 events within 15 s"

demo_got=$(jq -r 'select(.ns == "demo") | [.id, .payload, .deadline_ms] | @tsv' events.json | sort)
demo_want=$(awk '$1 == "touch" && $2 != "x-7" { print $2 "\t" $4 "\t" substr($3, 2) }' demo.txt | sort)
assert_eq "$demo_got" "$demo_want" "demo's events (ID, payload, deadline)"
other_got=$(jq -r 'select(.ns == "other") | [.id, .payload, .deadline_ms] | @tsv' events.json | sort)
other_want=$(awk '$1 == "touch" && $2 != "x-far" { print $2 "\t" $4 "\t" substr($3, 2) }' other.txt | sort)
assert_eq "$other_got" "$other_want" "other's events (ID, payload, deadline; x-7 not cancelled here)"

# a split of demo: other's layout and pending IDs stay as they were
before=$("$LAPSE_SCRIPTS/lapse-scale" -c other.conf status --json | jq -c '[.shards, .epoch, .state, ([.shard_info[].pending] | add)]')
assert_eq "$before" '[4,1,"stable",1]' "other before demo's split"
scale split >split.out 2>&1 || fail "split demo: exit status $? ($(tail -n 3 split.out))"
scanner_start 2
scanner_start 3
scale finish >finish.out 2>&1 || fail "finish demo: exit status $? ($(tail -n 3 finish.out))"
assert_eq "$(sp_status '[.shards, .state] | @tsv' | tr '\t' ' ')" "4 stable" "demo after its split"
after=$("$LAPSE_SCRIPTS/lapse-scale" -c other.conf status --json | jq -c '[.shards, .epoch, .state, ([.shard_info[].pending] | add)]')
assert_eq "$after" "$before" "other after demo's split"

t0=$(now_ms)
for i in $(seq 0 19); do echo "touch y-$i @$((t0 + 400 + i * 10))"; done | produce || fail "producer of demo after the split: exit status $?"
for i in $(seq 0 19); do echo "touch y-$i @$((t0 + 400 + i * 10))"; done |
    "$LAPSE_BIN/lapse-producer" -c other.conf || fail "producer of other after the split: exit status $?"
wait_until 15000 '(($(jq -r "select(.id | startswith(\"y-\")) | .ns + \" \" + .id" events.json | sort -u | wc -l) == 40))' ||
    fail "y-* events after the split: $(jq -r 'select(.id | startswith("y-")) | .ns' events.json | sort | uniq -c | tr '\n' ' ')"
sleep 0.5 # (a wrong extra fire shows)
scanner_stop
for s in 0 1 2 3; do proc_stop "other-$s" 10; done
events_follow_stop
dups=$(jq -r '.ns + " " + .id' events.json | sort | uniq -d | head -3)
[[ -z $dups ]] || fail "fired twice: $dups"
assert_never_early events.json
strays=$(rcli --scan | grep -v -e '^demo:' -e '^other:' || true)
[[ -z $strays ]] || fail "keys of neither namespace: $(head -3 <<<"$strays" | tr '\n' ' ')"
