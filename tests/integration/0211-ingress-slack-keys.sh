#!/usr/bin/env bash
# 0211-ingress-slack-keys: with producer.slack_ms, the ingress hashes each
# message's key once, ahead of its turn (to prefetch the slack table), and
# takes that hash for the ID when the ID is the key. A signal whose ID is
# not its key (an ID field, another key) still goes by its own ID's hash:
# every ID lands in the shard its own hash names, and each is extended
# once per signal as slack allows.
#
# Catches: the key's hash taken for an ID read from the value (the ID
# written to another ID's shard, its slack entry another's).
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
redis_start main
kafka_start "$IN"
write_config "$CONF" "producer = { slack_ms = 60000; };
ingress = {
  topic = \"$IN\"; group = \"g-sk\"; properties = ( $INGRESS_PROPS );
  rules = (
    { id_field = \"device\"; timeout_ms = 600000; },
    { id_prefix = \"gw-\"; timeout_ms = 600000; }
  );
};"
scale init 4 >/dev/null
ingress_start
ingress_wait_assigned

# 3 x 40 messages in one put (one read takes many: the prefetch runs 8
# ahead): the key is the ID, the key is another word, the key is the ID of
# a key-only rule; each twice, so that slack absorbs the second
for round in 1 2; do
    for i in $(seq 1 40); do
        printf 'dev-%d\t{"device":"dev-%d"}\n' "$i" "$i"
        printf 'other-%d\t{"device":"val-%d"}\n' "$i" "$i"
        printf 'gw-%d\t\001binary\n' "$i"
    done
done >a.in
kafka_put "$IN" <a.in
wait_until 10000 '[[ $(ns_count) == 120 ]]' || fail "not all IDs applied within 10 s: $(ns_count) of 120"
wait_until 5000 'kafka_all_committed "$IN" g-sk' || fail "not all committed"

# each ID in the shard its own hash names
ns_records "$NS" | awk '$1 ~ /^:z:/ { sub(/^:z:/, "", $1); print $2, $1 }' | sort >where.txt
cut -d' ' -f1 where.txt >ids.txt
sp_hashes ids.txt | awk '{ print $1, $2 % 4 }' | sort >want.txt
assert_eq "$(wc -l <where.txt)" 120 "records"
diff want.txt where.txt >d.txt || fail "IDs outside their shard (want / got): $(head -n 6 d.txt | tr '\n' ';')"
grep -q '^other-' ids.txt && fail "a key taken for an ID read from the value"
ingress_stop
assert_file_match "$T/$INGRESS.log" 'ingress: 240 messages: 0 commands, 240 signals, 0 not understood'
