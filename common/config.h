/*
 * config — the libconfig file every lapse program reads.
 *
 * Every key lives in one table with its type, default, bounds and a
 * comment; lapse.conf(5) and lapse.conf.example document the same keys.
 * Loading validates the whole file (unknown keys, wrong types,
 * out-of-range values, missing required keys) before any program touches
 * Redis or Kafka, and reports each problem on a line of its own,
 * "FILE:LINE: key: reason" ("FILE: key: reason" when there is no line,
 * e.g. a missing key): every unknown key and every bad value at once, not
 * only the first.
 */
#ifndef LAPSE_CONFIG_H
#define LAPSE_CONFIG_H

#include <stddef.h>

#define LAPSE_NS_MAX 64 /* namespace length limit, bytes */

/*
 * One entry of redis.nodes: a plain node (host, port) or a primary that
 * Sentinel monitors (sentinels, master), never both. Its name in the layout
 * (lapse_node_name) is "host:port" or the master name: stable across
 * failovers.
 */
struct lapse_redis_node {
    char *host;       /* plain: hostname or address; NULL for Sentinel */
    int port;         /* plain: 1..65535 */
    char **sentinels; /* Sentinel: "host:port" of each sentinel */
    size_t nsentinels;
    char *master;            /* Sentinel: the master name it monitors */
    char *sentinel_username; /* AUTH to the sentinels (ACL user), or NULL */
    char *sentinel_password; /* ... and its password, or NULL */
    char *username;          /* AUTH user (ACL), or NULL: the default user */
    char *password;          /* AUTH password, or NULL */
    int db;                  /* SELECT index, 0 = default */
    int tls;                 /* 1: TLS (redis.tls) to the node and its sentinels */
    char *was;               /* Sentinel: "host:port" the layout may still name it
                              * by (a plain node moved behind Sentinel), or NULL */
    char **seeds;            /* Cluster: "host:port" of nodes to learn the slot map
                              * from (redis.cluster); the node is then the whole
                              * cluster, each command routed by its key's slot */
    size_t nseeds;
    char *where; /* "FILE:LINE" of the config naming it (its group in
                  * redis.nodes, or redis.cluster), for messages */
};

#define LAPSE_NODE_NAME_MAX 300 /* lapse_node_name's buffer, with the NUL */

/* The node's name in the layout record: "host:port" for a plain node, the
 * master name for a Sentinel one, "cluster" for a Redis Cluster. Returns buf. */
const char *lapse_node_name(const struct lapse_redis_node *n, char *buf, size_t size);

struct lapse_kv {
    char *key;   /* librdkafka property name */
    char *value; /* its value, passed through verbatim */
};

/* Where a watchdog rule takes the signal's time from (ingress.rules[].time). */
enum lapse_time_source {
    LAPSE_TIME_ARRIVAL = 0, /* "arrival": when the write is applied (Redis clock) */
    LAPSE_TIME_KAFKA,       /* "kafka": the Kafka message timestamp */
    LAPSE_TIME_FIELD,       /* "field": a JSON field holding unix ms */
};

/* One watchdog rule (ingress.rules[i]), which the Kafka ingress applies. */
struct lapse_ingress_rule {
    char *id_prefix;   /* match: the ID starts with this; NULL = any ID */
    char *match_field; /* match: this top-level JSON field of the value ... */
    char *match_value; /* ... equals this; both NULL or both set */
    char *id_field;    /* the ID is this JSON string field; NULL = the message key */
    int time_source;   /* enum lapse_time_source */
    char *time_field;  /* LAPSE_TIME_FIELD: the field holding unix ms */
    int timeout_ms;    /* deadline = time + timeout_ms */
    int recover;       /* 1: the result is a watch (recovery on), not an extend */
};

struct lapse_config {
    char *path;    /* the file it was loaded from */
    char *ns;      /* namespace: prefix of every Redis key */
    int log_level; /* enum lapse_log_level */

    struct lapse_redis_node *nodes; /* redis.nodes; nodes[0] holds the layout. With
                                      * redis.cluster: one node, the cluster (seeds,
                                      * username, password, tls from redis.cluster*) */
    size_t nnodes;
    int cluster;          /* 1: redis.cluster (then shard keys carry a hash tag) */
    char **cluster_seeds; /* redis.cluster, as loaded (moved into nodes[0]) */
    size_t ncluster_seeds;
    char *cluster_username;       /* redis.cluster_username, or NULL */
    char *cluster_password;       /* redis.cluster_password, or NULL */
    int cluster_tls;              /* redis.cluster_tls */
    int redis_connect_timeout_ms; /* redis.connect_timeout_ms */
    int redis_command_timeout_ms; /* redis.command_timeout_ms */
    int redis_retry_timeout_ms;   /* redis.retry_timeout_ms: a write is retried this long */
    int redis_wait_replicas;      /* redis.wait_replicas: WAIT for this many, 0 = no WAIT */
    int redis_wait_timeout_ms;    /* redis.wait_timeout_ms: one WAIT's timeout */
    int redis_accept_eviction;    /* redis.accept_eviction: run on an evicting policy */
    char *redis_policy_checked;   /* redis.policy_checked: the policy an operator saw, or NULL */
    char *redis_tls_ca_file;      /* redis.tls.ca_file, or NULL: the system's CAs */
    char *redis_tls_cert_file;    /* redis.tls.cert_file: mutual TLS, or NULL */
    char *redis_tls_key_file;     /* redis.tls.key_file: its key, or NULL */
    char *redis_tls_server_name;  /* redis.tls.server_name, or NULL: the host */

    char *kafka_brokers;          /* kafka.brokers (bootstrap.servers) */
    char *kafka_topic;            /* kafka.topic: where events go */
    struct lapse_kv *kafka_props; /* kafka.properties passthrough */
    size_t nkafka_props;

    int producer_batch;    /* producer.batch: max ops per flush */
    int producer_slack_ms; /* producer.slack_ms: extend coalescing, 0 = off */

    int scanner_batch;               /* scanner.batch: max IDs per claim */
    int scanner_poll_ms;             /* scanner.poll_ms: longest idle sleep */
    int scanner_lease_ms;            /* scanner.lease_ms: in-flight lease */
    int scanner_idle_ms;             /* scanner.idle_ms: longest nap when idle; 0 = poll */
    int scanner_max_inflight;        /* scanner.max_inflight: claim stops here */
    int scanner_catchup_rate;        /* scanner.catchup_rate: overdue IDs/s, 0 = no limit */
    int scanner_fresh_ms;            /* scanner.fresh_ms: due this recently = fresh */
    int scanner_offline_retention_s; /* scanner.offline_retention_s: offline IDs forgotten after */
    int scanner_metrics_port;        /* scanner.metrics_port: 0 = no endpoint */
    char *scanner_metrics_bind;      /* scanner.metrics_bind: its address */

    /* ingress: lapse-producer --from-kafka; all optional at load time (see
     * lapse_config_check_ingress). */
    char *ingress_topic;                      /* ingress.topic: commands and signals, or NULL */
    char *ingress_group;                      /* ingress.group: consumer group id, or NULL */
    char *ingress_dead_letter_topic;          /* ingress.dead_letter_topic, or NULL: none */
    struct lapse_ingress_rule *ingress_rules; /* ingress.rules, first match wins */
    size_t ningress_rules;
    struct lapse_kv *ingress_props; /* ingress.properties: consumer-only passthrough */
    size_t ningress_props;
    int ingress_metrics_port;   /* ingress.metrics_port: 0 = no endpoint */
    char *ingress_metrics_bind; /* ingress.metrics_bind: its address */

    /* scale: lapse-scale autoscale (tools/scale/autoscale.h says how each is
     * used; config_scale.c what they must say together) */
    int scale_interval_ms;            /* scale.interval_ms: figures read this often */
    int scale_up_due_per_shard;       /* scale.up_due_per_shard: due IDs/s; 0 = not a reason */
    int scale_up_pending_per_shard;   /* scale.up_pending_per_shard: 0 = not a reason */
    int scale_up_overdue_ms;          /* scale.up_overdue_ms: oldest overdue; 0 = not a reason */
    int scale_up_busy_pct;            /* scale.up_busy_pct: busiest scanner; 0 = not a reason */
    int scale_up_lateness_ms;         /* scale.up_lateness_ms: worst p99; 0 = not a reason */
    int scale_down_due_per_shard;     /* scale.down_due_per_shard: merge at or below */
    int scale_down_pending_per_shard; /* scale.down_pending_per_shard: merge at or below */
    int scale_down_memory_pct;        /* scale.down_memory_pct: no merge above */
    int scale_down_cpu_pct;           /* scale.down_cpu_pct: no merge above */
    int scale_down_busy_pct;          /* scale.down_busy_pct: merge at or below */
    char **scale_scanner_hosts;       /* scale.scanner_hosts: where the scanners' /metrics are */
    size_t nscale_scanner_hosts;      /* ... how many (0: their figures are not read) */
    int scale_tolerance_pct;          /* scale.tolerance_pct: the hysteresis margin */
    int scale_up_window_ms;           /* scale.up_window_ms: hot this long to split */
    int scale_down_window_ms;         /* scale.down_window_ms: cold this long to merge */
    int scale_cooldown_ms;            /* scale.cooldown_ms: no change this soon after one */
    int scale_min_shards;             /* scale.min_shards: no merge below */
    int scale_max_shards;             /* scale.max_shards: no split above */
    char *scale_start_cmd;            /* scale.start_cmd: per new shard, or NULL: print */
    char *scale_stop_cmd;             /* scale.stop_cmd: per retiring shard, or NULL: print */
    int scale_drain_rate;             /* scale.drain_rate: finish --drain's IDs/s */
    int scale_metrics_port;           /* scale.metrics_port: 0 = no endpoint */
    char *scale_metrics_bind;         /* scale.metrics_bind: its address */

    /* console: lapse-console, the web console (tools/console/console.h) */
    int console_port;          /* console.port: 0 (or no console group) = it refuses to start */
    char *console_bind;        /* console.bind: the address it listens on */
    int console_writes;        /* console.writes: cancel / set deadline allowed (with a token) */
    char *console_tokens_file; /* console.tokens_file: "name token" lines */
    int console_refresh_ms; /* console.refresh_ms: the shared snapshot is read at most this often */
    int console_read_pct;   /* console.read_pct: ... its reads take at most this % of the time */
    int console_idle_ms;    /* console.idle_ms: ... and only while a page asked this recently */
    int console_budget_ms;  /* console.budget_ms: a listing page reads Redis this long at most */
};

/*
 * Loads and validates `path` into `cfg` (which it fully initialises).
 * Returns 0, or -1 with the reasons in errstr, one line each, separated by
 * '\n' (what does not fit is cut), and `cfg` left empty (safe to pass to
 * lapse_config_free).
 */
int lapse_config_load(struct lapse_config *cfg, const char *path, char *errstr, size_t size);

/*
 * What --from-kafka needs beyond a loadable file: ingress.topic and
 * ingress.group. Returns 0, or -1 with "FILE: ingress.topic: missing (...)"
 * in errstr. Leaves `cfg` untouched.
 */
int lapse_config_check_ingress(const struct lapse_config *cfg, char *errstr, size_t size);

/* Frees everything lapse_config_load allocated; `cfg` may be all zeros. */
void lapse_config_free(struct lapse_config *cfg);

/* The library's handle on a config (producer.h): lapse_config_load into a
 * struct of its own, and its free. */
struct lapse_config *lapse_config_open(const char *path, char *errstr, size_t size);
void lapse_config_close(struct lapse_config *cfg);

#endif
