#!/usr/bin/env bash
# 0751-watch-hashes: a shard in one zset keeps its watch records in small
# hashes (lib/bucket.lua: NS:o:I:wJ, their state in NS:v:I), which split as
# they fill, so every one stays in Redis's compact listpack encoding.
#
# 1,500 IDs written with `watch` fall due and go offline; every record is
# in a watch hash, none holds more than 128 (zset/hash-max-listpack
# entries), each is listpack-encoded, and the count in NS:v:I is 1,500;
# `lapse-scale offline` lists all of them and status counts them. They
# signal again: 1,500 recovered events, each once; then they are cancelled:
# the count drops to 0 and nobody is offline.
# Catches: a one-zset shard whose watch records pile up in one hashtable
# (~80 bytes an offline ID more than in a listpack), a hash that never
# splits, a count out of step with the records.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
metrics_config
scale init 1 --one-zset >/dev/null
events_follow events.json
scanner_start 0

N=1500
seq -f 'wh-%04g' 1 $N | awk '{ print "watch " $1 " +300" }' | produce || fail "producer: $?"
wait_until 30000 '[[ $(scale_offline | wc -l) == '$N' ]]' || fail "offline: $(scale_offline | wc -l) of $N"
state=$(rcli GET "$NS:v:0")
[[ $state =~ ^([0-9]+)\ ([0-9]+)\ ([0-9]+)$ ]] || fail "the watch hashes' state: '$state'"
assert_eq "${BASH_REMATCH[3]}" $N "records counted in $NS:v:0"
hashes=$((2 ** BASH_REMATCH[1] + BASH_REMATCH[2]))
total=0 biggest=0
for ((j = 0; j < hashes; j++)); do
    len=$(rcli HLEN "$NS:o:0:w$j")
    total=$((total + len))
    ((len > biggest)) && biggest=$len
    ((len == 0)) || assert_eq "$(rcli OBJECT ENCODING "$NS:o:0:w$j")" listpack "hash w$j's encoding ($len records)"
done
assert_eq "$total" $N "records in the $hashes watch hashes"
((biggest <= 128)) || fail "a watch hash holds $biggest records (more than 128: no longer a listpack)"
assert_eq "$(rcli EXISTS "$NS:o:0")" 0 "no one big hash of watch records"
scale status --json | jq -e ".shard_info[0].offline == $N" >/dev/null || fail "status: offline $(scale status --json | jq '.shard_info[0].offline')"
note "$N offline records in $hashes watch hashes, the largest $biggest"

seq -f 'wh-%04g' 1 $N | awk '{ print "extend " $1 " +600000" }' | produce || fail "producer: $?"
recovered() { jq -R -r 'fromjson? | select(.type == "recovered") | .id' events.json | sort -u | wc -l; }
wait_until 30000 '(( $(recovered) == '$N' ))' || fail "recovered: $(recovered) of $N"
assert_eq "$(jq -R -r 'fromjson? | select(.type == "recovered") | .id' events.json | sort | uniq -d | wc -l)" 0 "IDs recovered twice"
assert_eq "$(scale_offline)" "" "offline after the signals"
seq -f 'wh-%04g' 1 $N | awk '{ print "cancel " $1 }' | produce || fail "producer: $?"
assert_match "$(rcli GET "$NS:v:0")" ' 0$' "records counted after the cancels"
