#!/usr/bin/env bash
# 0392-linger-push: librdkafka's linger.ms batches a backlog's events, but a
# scanner with nothing more due sends what it claimed at once: with
# linger.ms 3000, a lone due ID is acknowledged by Kafka and settled (gone
# from Redis) well within a second of its deadline, not after the linger.
. "$(dirname "$0")/../lib.sh"

redis_start main
kafka_start
cat >"$CONF" <<EOC
namespace = "$NS";
log_level = "${LOG_LEVEL:-info}";
redis = { nodes = ( { host = "127.0.0.1"; port = ${REDIS_PORT:-1}; } ); };
kafka = { brokers = "$KAFKA_BROKERS"; topic = "$TOPIC"; properties = ( ("linger.ms", 3000) ); };
scanner = { poll_ms = 10; };
EOC
scale init 1 >/dev/null
events_follow events.json
scanner_start 0
sleep 1 # the scanner holds the lease and Kafka is connected

for round in 1 2 3; do
    echo "touch lone-$round +300" | produce
    due=$(id_score "lone-$round")
    wait_until 2500 '[[ -z $(id_score "lone-'"$round"'") ]]' ||
        fail "lone-$round was not settled within 2.5 s (linger.ms 3000 held it back?)"
    settled=$(now_ms)
    assert_le $((settled - due)) 1000 "ms from lone-$round's deadline to its settling"
done
events_wait_ids events.json 3 3000
assert_never_early events.json
scanner_stop
