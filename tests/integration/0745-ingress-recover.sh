#!/usr/bin/env bash
# 0745-ingress-recover: the Kafka ingress sends watched IDs too.
#
# A rule with recover = true (keyed signals, 300 ms after arrival) and one
# without (prefix "plain-"), and command messages {"op": "watch"}: devices
# dev-1 (rule) and cmd-1 (command) time out, are offline, signal again and
# get their recovered events after their timeouts; plain-1 (the rule
# without recover) times out and, signalling again, gets no recovered event
# and is never offline.
#
# Catches: a rule's recover lost between the config and the write, an
# ingress command "watch" refused or taken for an extend.
. "$(dirname "$0")/../lib.sh"

IN=lapse.signals
redis_start main
kafka_start "$IN"
write_config "$CONF" "ingress = {
  topic = \"$IN\"; group = \"g-rec\"; properties = ( $INGRESS_PROPS );
  rules = (
    { id_prefix = \"plain-\"; timeout_ms = 300; },
    { timeout_ms = 300; recover = true; }
  );
};"
scale init 2 >/dev/null
events_follow events.json
scanners_start 2
ingress_start
ingress_wait_assigned

printf 'dev-1\t{"v":1}\nplain-1\t{"v":1}\nx\t{"op":"watch","id":"cmd-1","in_ms":300}\n' | kafka_put "$IN"
wait_until 15000 '[[ $(scale_offline | cut -f1 | sort | paste -sd,) == cmd-1,dev-1 ]]' ||
    fail "offline: '$(scale_offline | cut -f1 | paste -sd,)', not cmd-1,dev-1"
assert_eq "$(jq -R -r 'fromjson? | select(.type == "timeout") | .id' events.json | sort | paste -sd,)" \
    "cmd-1,dev-1,plain-1" "timeouts"
printf 'dev-1\t{"v":2}\nplain-1\t{"v":2}\nx\t{"op":"extend","id":"cmd-1","in_ms":60000}\n' | kafka_put "$IN"
wait_until 15000 '[[ $(jq -R -r "fromjson? | select(.type == \"recovered\") | .id" events.json | sort | paste -sd,) == cmd-1,dev-1 ]]' ||
    fail "recovered: '$(jq -R -r 'fromjson? | select(.type == "recovered") | .id' events.json | paste -sd,)'"
# back: cmd-1 (extended a minute), and dev-1 unless, 300 ms on (a slow
# machine), its next timeout fired: offline again, from a later deadline
rec=$(jq -R -r 'fromjson? | select(.type == "recovered" and .id == "dev-1") | .recovered_ms' events.json)
assert_eq "$(scale_offline | awk -F'\t' -v r="$rec" '$1 != "dev-1" || $3 < r')" "" \
    "offline at the end (dev-1 only from a timeout after its recovery)"
# plain-1 signalled again: pending again (or, 300 ms on, timed out again on
# a slow machine), never recovered
plain_events() { jq -R -r 'fromjson? | select(.id == "plain-1") | .type' events.json | paste -sd,; }
wait_until 5000 '[[ -n $(id_score plain-1) || $(plain_events) == timeout,timeout ]]' ||
    fail "plain-1's second signal not applied"
[[ $(plain_events) == timeout || $(plain_events) == timeout,timeout ]] ||
    fail "plain-1's events: '$(plain_events)', want its timeouts alone"
ingress_stop
