/*
 * config_keys — the key tables: every key lapse reads, with its type,
 * default, bounds and comment. Data only; config_walk.c checks a file
 * against them, config.c frees what they describe.
 *
 * Why a table: every key lapse reads is one line of `config_keys` below (after
 * redis config.c), with its type, default, bounds and comment, so checking and
 * defaults come from one place; adding a key is adding a line (plus its field
 * in config.h and its entry in lapse.conf.example, which the unit tests load
 * and compare with these defaults).
 *
 * Invariants: each table fits in SEEN_MAX entries (checked at compile time);
 * each entry's off (and def for K_PROPS, K_ADDRS and K_HOSTS) is a field of the struct
 * its table describes.
 */
#include "config_priv.h"

#include <stddef.h>

#define ID_MAX 512 /* LAPSE_ID_MAX of producer/lib/line.h: an ID prefix is no longer */

#define CFG(f) offsetof(struct lapse_config, f)
#define NODE(f) offsetof(struct lapse_redis_node, f)
#define RULE(f) offsetof(struct lapse_ingress_rule, f)

/* Order matters only for lapse.conf.example (same order) and for which
 * missing key is reported first. */
const struct key config_keys[] = {
    {"namespace", K_NAME, 1, 0, NULL, 1, LAPSE_NS_MAX, CFG(ns),
     "prefix of every Redis key (NS:...); several namespaces share a Redis"},
    {"redis", K_GROUP, 0, 0, NULL, 0, 0, 0, "where the shards live"},
    {"redis.nodes", K_NODES, 0, 0, NULL, 1, NODES_MAX, 0,
     "Redis servers; nodes[0] also holds the shard layout (or redis.cluster)"},
    {"redis.cluster", K_ADDRS, 0, CFG(ncluster_seeds), NULL, 1, NODES_MAX, CFG(cluster_seeds),
     "a Redis Cluster instead of nodes: seed addresses ( \"host:port\", ... )"},
    {"redis.cluster_username", K_STR, 0, 0, NULL, 1, 255, CFG(cluster_username),
     "Cluster: ACL user; omit for the default user"},
    {"redis.cluster_password", K_STR, 0, 0, NULL, 1, 0, CFG(cluster_password),
     "Cluster: AUTH password; omit for none"},
    {"redis.cluster_tls", K_BOOL, 0, 0, NULL, 0, 0, CFG(cluster_tls),
     "Cluster: TLS (redis.tls) to every node"},
    {"redis.connect_timeout_ms", K_INT, 0, 1000, NULL, 10, 60000, CFG(redis_connect_timeout_ms),
     "give up connecting to a node after this"},
    {"redis.command_timeout_ms", K_INT, 0, 5000, NULL, 10, 600000, CFG(redis_command_timeout_ms),
     "give up on one Redis reply after this"},
    {"redis.retry_timeout_ms", K_INT, 0, 60000, NULL, 10, 3600000, CFG(redis_retry_timeout_ms),
     "a write not applied (node down, failing over) is retried this long before it fails"},
    {"redis.wait_replicas", K_INT, 0, 0, NULL, 0, 64, CFG(redis_wait_replicas),
     "a write counts as applied once WAIT saw this many replicas take it; 0 = no WAIT"},
    {"redis.wait_timeout_ms", K_INT, 0, 1000, NULL, 1, 600000, CFG(redis_wait_timeout_ms),
     "how long one WAIT waits for the replicas; short of them, the write is retried"},
    {"redis.accept_eviction", K_BOOL, 0, 0, NULL, 0, 0, CFG(redis_accept_eviction),
     "run on a Redis whose maxmemory-policy evicts keys, accepting lost deadlines (warned hourly)"},
    {"redis.policy_checked", K_STR, 0, 0, NULL, 1, 32, CFG(redis_policy_checked),
     "the maxmemory-policy you checked, for a user the ACL denies INFO and CONFIG; omit: read it"},
    {"redis.tls", K_GROUP, 0, 0, NULL, 0, 0, 0, "TLS settings of the nodes with tls = true"},
    {"redis.tls.ca_file", K_STR, 0, 0, NULL, 1, 4096, CFG(redis_tls_ca_file),
     "PEM file of the CAs the servers' certificates must chain to; omit: the system's"},
    {"redis.tls.cert_file", K_STR, 0, 0, NULL, 1, 4096, CFG(redis_tls_cert_file),
     "PEM certificate (chain) lapse presents: mutual TLS; needs key_file"},
    {"redis.tls.key_file", K_STR, 0, 0, NULL, 1, 4096, CFG(redis_tls_key_file),
     "PEM private key of cert_file"},
    {"redis.tls.server_name", K_STR, 0, 0, NULL, 1, 255, CFG(redis_tls_server_name),
     "the name the servers' certificates must carry; omit: the host connected to"},
    {"kafka", K_GROUP, 0, 0, NULL, 0, 0, 0, "where events go"},
    {"kafka.brokers", K_STR, 1, 0, NULL, 1, 0, CFG(kafka_brokers),
     "bootstrap.servers: host:port[,host:port...]"},
    {"kafka.topic", K_NAME, 1, 0, NULL, 1, 249, CFG(kafka_topic),
     "the topic that receives one event per fired deadline"},
    {"kafka.properties", K_PROPS, 0, CFG(nkafka_props), NULL, 0, 0, CFG(kafka_props),
     "librdkafka properties passed through verbatim: ((\"name\", \"value\"), ...)"},
    {"log_level", K_LEVEL, 0, 0, "info", 0, 0, CFG(log_level), "debug, info, warn or error"},
    {"producer", K_GROUP, 0, 0, NULL, 0, 0, 0, "lapse-producer"},
    {"producer.batch", K_INT, 0, 1000, NULL, 1, 100000, CFG(producer_batch),
     "most operations sent to Redis in one flush"},
    {"producer.slack_ms", K_INT, 0, 0, NULL, 0, 3600000, CFG(producer_slack_ms),
     "extend only: skip writes moving a deadline less than this; 0 = exact"},
    {"scanner", K_GROUP, 0, 0, NULL, 0, 0, 0, "lapse-scanner"},
    {"scanner.batch", K_INT, 0, 500, NULL, 1, 10000, CFG(scanner_batch),
     "most due IDs claimed in one round trip"},
    {"scanner.poll_ms", K_INT, 0, 10, NULL, 1, 1000, CFG(scanner_poll_ms),
     "longest idle wait before looking for due IDs again"},
    {"scanner.lease_ms", K_INT, 0, 5000, NULL, 500, 600000, CFG(scanner_lease_ms),
     "an unacknowledged claimed ID falls due again after this"},
    {"scanner.idle_ms", K_INT, 0, 2500, NULL, 0, 300000, CFG(scanner_idle_ms),
     "longest an idle scanner sleeps, waiting to be woken, before it renews its lock; "
     "at most lease_ms / 2 is used; 0 = poll every poll_ms"},
    {"scanner.max_inflight", K_INT, 0, 20000, NULL, 1, 10000000, CFG(scanner_max_inflight),
     "claimed but unacknowledged IDs; claiming pauses here"},
    {"scanner.catchup_rate", K_INT, 0, 0, NULL, 0, 100000000, CFG(scanner_catchup_rate),
     "overdue IDs sent per second per shard while catching up; 0 = no limit"},
    {"scanner.fresh_ms", K_INT, 0, 1000, NULL, 1, 3600000, CFG(scanner_fresh_ms),
     "IDs due within this many ms are fresh: never held back by catchup_rate"},
    {"scanner.offline_retention_s", K_INT, 0, 604800, NULL, 1, 315360000,
     CFG(scanner_offline_retention_s),
     "an ID offline (its timeout fired with recovery on, no write since) is forgotten after this"},
    {"scanner.metrics_port", K_INT, 0, 0, NULL, 0, 65535, CFG(scanner_metrics_port),
     "Prometheus text endpoint port; 0 = off"},
    {"scanner.metrics_bind", K_STR, 0, 0, "127.0.0.1", 1, 255, CFG(scanner_metrics_bind),
     "address the metrics endpoint listens on"},
    {"ingress", K_GROUP, 0, 0, NULL, 0, 0, 0, "lapse-producer --from-kafka"},
    {"ingress.topic", K_NAME, 0, 0, NULL, 1, 249, CFG(ingress_topic),
     "the topic of command messages and raw signals (required by --from-kafka)"},
    {"ingress.group", K_STR, 0, 0, NULL, 1, 255, CFG(ingress_group),
     "the consumer group (required by --from-kafka)"},
    {"ingress.dead_letter_topic", K_NAME, 0, 0, NULL, 1, 249, CFG(ingress_dead_letter_topic),
     "a copy of every message not understood goes here; omit for none"},
    {"ingress.rules", K_RULES, 0, 0, NULL, 0, RULES_MAX, 0,
     "watchdog rules turning raw signals into extend; the first match wins"},
    {"ingress.properties", K_PROPS, 0, CFG(ningress_props), NULL, 0, 0, CFG(ingress_props),
     "librdkafka properties for the ingress consumer only, after kafka.properties"},
    {"ingress.metrics_port", K_INT, 0, 0, NULL, 0, 65535, CFG(ingress_metrics_port),
     "the ingress's /metrics, /healthz and /readyz port; 0 = off"},
    {"ingress.metrics_bind", K_STR, 0, 0, "127.0.0.1", 1, 255, CFG(ingress_metrics_bind),
     "address the ingress's metrics endpoint listens on"},
    /* scale: lapse-scale autoscale; each default's reason is in
     * lapse.conf.example and docs/operating.md ("The scaler") */
    {"scale", K_GROUP, 0, 0, NULL, 0, 0, 0, "lapse-scale autoscale"},
    {"scale.interval_ms", K_INT, 0, 10000, NULL, 100, 3600000, CFG(scale_interval_ms),
     "the shards' figures are read this often"},
    {"scale.up_due_per_shard", K_INT, 0, 5000, NULL, 0, 100000000, CFG(scale_up_due_per_shard),
     "split when IDs due per second per shard (next minute) stay above this; 0 = not a reason"},
    {"scale.up_pending_per_shard", K_INT, 0, 2000000, NULL, 0, 2000000000,
     CFG(scale_up_pending_per_shard),
     "split when pending IDs per shard stay above this; 0 = not a reason"},
    {"scale.up_overdue_ms", K_INT, 0, 30000, NULL, 0, 86400000, CFG(scale_up_overdue_ms),
     "split when a served shard's oldest overdue ID stays older than this; 0 = not a reason"},
    {"scale.up_busy_pct", K_INT, 0, 80, NULL, 0, 100, CFG(scale_up_busy_pct),
     "split when the busiest scanner stays busy more than this % of the time; 0 = not a reason"},
    {"scale.up_lateness_ms", K_INT, 0, 1000, NULL, 0, 86400000, CFG(scale_up_lateness_ms),
     "split when the worst scanner's lateness p99 stays above this; 0 = not a reason"},
    {"scale.down_due_per_shard", K_INT, 0, 2000, NULL, 0, 100000000, CFG(scale_down_due_per_shard),
     "merge only with IDs due per second per shard at most this"},
    {"scale.down_pending_per_shard", K_INT, 0, 800000, NULL, 0, 2000000000,
     CFG(scale_down_pending_per_shard), "merge only with pending IDs per shard at most this"},
    {"scale.down_memory_pct", K_INT, 0, 50, NULL, 1, 100, CFG(scale_down_memory_pct),
     "no merge while a node's used memory is above this % of its maxmemory"},
    {"scale.down_cpu_pct", K_INT, 0, 50, NULL, 1, 100, CFG(scale_down_cpu_pct),
     "no merge while a node's Redis uses more than this % of a core"},
    {"scale.down_busy_pct", K_INT, 0, 30, NULL, 0, 100, CFG(scale_down_busy_pct),
     "merge only with every scanner busy at most this % of the time"},
    {"scale.scanner_hosts", K_HOSTS, 0, CFG(nscale_scanner_hosts), NULL, 0, 64,
     CFG(scale_scanner_hosts),
     "hosts whose scanners' /metrics (metrics_port + shard) give busy and lateness; () = unread"},
    {"scale.tolerance_pct", K_INT, 0, 10, NULL, 0, 50, CFG(scale_tolerance_pct),
     "hysteresis: down_* <= up_* / 2 * (1 - tolerance_pct / 100)"},
    {"scale.up_window_ms", K_INT, 0, 60000, NULL, 0, 86400000, CFG(scale_up_window_ms),
     "every reading this long must call for a split"},
    {"scale.down_window_ms", K_INT, 0, 600000, NULL, 0, 86400000, CFG(scale_down_window_ms),
     "every reading this long must allow a merge"},
    {"scale.cooldown_ms", K_INT, 0, 300000, NULL, 0, 86400000, CFG(scale_cooldown_ms),
     "no change this soon after the last one ended (or after the scaler started)"},
    {"scale.min_shards", K_INT, 0, 1, NULL, 1, 65536, CFG(scale_min_shards),
     "never merge below this many shards (a power of two)"},
    {"scale.max_shards", K_INT, 0, 64, NULL, 1, 65536, CFG(scale_max_shards),
     "never split above this many shards (a power of two)"},
    {"scale.start_cmd", K_STR, 0, 0, NULL, 1, 1000, CFG(scale_start_cmd),
     "run once per new shard after a split (%d: the shard), as split --start-cmd; omit: logged"},
    {"scale.stop_cmd", K_STR, 0, 0, NULL, 1, 1000, CFG(scale_stop_cmd),
     "run once per retiring shard when a merge starts, as merge --stop-cmd; omit: logged"},
    {"scale.drain_rate", K_INT, 0, 5000, NULL, 1, 10000000, CFG(scale_drain_rate),
     "IDs a second finish --drain moves to end a split or merge"},
    {"scale.metrics_port", K_INT, 0, 0, NULL, 0, 65535, CFG(scale_metrics_port),
     "the scaler's /metrics, /healthz and /readyz port; 0 = off"},
    {"scale.metrics_bind", K_STR, 0, 0, "127.0.0.1", 1, 255, CFG(scale_metrics_bind),
     "address the scaler's metrics endpoint listens on"},
    /* console: lapse-console; docs/operating.md "The web console" */
    {"console", K_GROUP, 0, 0, NULL, 0, 0, 0, "lapse-console, the web console"},
    {"console.port", K_INT, 0, 0, NULL, 0, 65535, CFG(console_port),
     "the console's HTTP port; 0 (or no console group) = lapse-console refuses to start"},
    {"console.bind", K_STR, 0, 0, "127.0.0.1", 1, 255, CFG(console_bind),
     "address the console listens on; put a reverse proxy with TLS and auth in front"},
    {"console.writes", K_BOOL, 0, 0, NULL, 0, 0, CFG(console_writes),
     "allow cancel and set-deadline from the console, with a token of tokens_file"},
    {"console.tokens_file", K_STR, 0, 0, NULL, 1, 4096, CFG(console_tokens_file),
     "required with writes: \"name token\" lines, mode 0600 (e.g. /etc/lapse/console.tokens)"},
    {"console.refresh_ms", K_INT, 0, 1000, NULL, 100, 60000, CFG(console_refresh_ms),
     "the shared snapshot (status, due times) is read from Redis at most this often"},
    {"console.read_pct", K_INT, 0, 1, NULL, 1, 100, CFG(console_read_pct),
     "... and spaced so that its reads take at most this % of the time (a large namespace's "
     "read is read less often)"},
    {"console.idle_ms", K_INT, 0, 10000, NULL, 1000, 3600000, CFG(console_idle_ms),
     "... and only while a page asked for it within this long"},
    {"console.budget_ms", K_INT, 0, 200, NULL, 10, 10000, CFG(console_budget_ms),
     "a page of the offline list stops reading Redis after this and says how far it got"},
};

/* One element of ingress.rules; paths are relative to "ingress.rules[i]". */
const struct key config_rule_keys[] = {
    {"id_prefix", K_STR, 0, 0, NULL, 1, ID_MAX, RULE(id_prefix),
     "match: the ID starts with these bytes"},
    {"match_field", K_STR, 0, 0, NULL, 1, 255, RULE(match_field),
     "match: this top-level field of the JSON value ..."},
    {"match_value", K_STR, 0, 0, NULL, 0, 0, RULE(match_value),
     "... equals this (a string, or the JSON text of a number or boolean)"},
    {"id_field", K_STR, 0, 0, NULL, 1, 255, RULE(id_field),
     "the ID is this string field of the JSON value; omit: the message key"},
    {"time", K_TIME, 0, 0, "arrival", 0, 0, RULE(time_source),
     "arrival, kafka (message timestamp) or field (time_field, unix ms)"},
    {"time_field", K_STR, 0, 0, "ts", 1, 255, RULE(time_field),
     "with time = \"field\": the field holding the signal's unix ms"},
    {"timeout_ms", K_INT, 1, 0, NULL, 1, 2147483647, RULE(timeout_ms),
     "deadline = time + timeout_ms"},
    {"recover", K_BOOL, 0, 0, NULL, 0, 0, RULE(recover),
     "watch instead of extend: a \"recovered\" event when a timed-out ID signals again"},
};

/* One element of redis.nodes; paths are relative to "redis.nodes[i]". */
const struct key config_node_keys[] = {
    {"host", K_STR, 0, 0, NULL, 1, 255, NODE(host), "plain node: hostname or address"},
    {"port", K_INT, 0, 0, NULL, 1, 65535, NODE(port), "plain node: TCP port"},
    {"sentinels", K_ADDRS, 0, NODE(nsentinels), NULL, 1, 16, NODE(sentinels),
     "Sentinel node: the sentinels, ( \"host:port\", ... )"},
    {"master", K_NAME, 0, 0, NULL, 1, 255, NODE(master),
     "Sentinel node: the master name the sentinels monitor"},
    {"sentinel_username", K_STR, 0, 0, NULL, 1, 255, NODE(sentinel_username),
     "ACL user for the sentinels; omit for the default user"},
    {"sentinel_password", K_STR, 0, 0, NULL, 1, 0, NODE(sentinel_password),
     "password for the sentinels; omit for none"},
    {"username", K_STR, 0, 0, NULL, 1, 255, NODE(username), "ACL user; omit for the default user"},
    {"password", K_STR, 0, 0, NULL, 1, 0, NODE(password), "AUTH password; omit for none"},
    {"db", K_INT, 0, 0, NULL, 0, 15, NODE(db), "SELECT index"},
    {"tls", K_BOOL, 0, 0, NULL, 0, 0, NODE(tls), "TLS (redis.tls) to the node and its sentinels"},
    {"was", K_STR, 0, 0, NULL, 3, 300, NODE(was),
     "Sentinel node: the \"host:port\" it had as a plain node, which layouts may still name"},
};

_Static_assert(COUNT_OF(config_keys) <= SEEN_MAX, "raise SEEN_MAX");
_Static_assert(COUNT_OF(config_node_keys) <= SEEN_MAX, "raise SEEN_MAX");
_Static_assert(COUNT_OF(config_rule_keys) <= SEEN_MAX, "raise SEEN_MAX");

const size_t config_nkeys = COUNT_OF(config_keys);
const size_t config_nnode_keys = COUNT_OF(config_node_keys);
const size_t config_nrule_keys = COUNT_OF(config_rule_keys);
