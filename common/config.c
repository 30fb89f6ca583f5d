/*
 * config — loads and validates the libconfig file (see config.h).
 *
 * Why a table: every key lapse reads is one line of `config_keys` below (after
 * redis config.c), with its type, default, bounds and comment, so checking and
 * defaults come from one place; adding a key is adding a line (plus its field
 * in config.h and its entry in lapse.conf.example, which the unit tests load
 * and compare with these defaults).
 *
 * Invariants:
 *  - The whole file is checked before lapse_config_load returns 0: a key that
 *    is not in a table, a value of the wrong type or out of bounds, or a
 *    missing required key is an error. Problems are found in file order, then
 *    missing keys in table order; only the first is reported.
 *  - On success every field is set (from the file or the table's default);
 *    every string is a strdup'd copy, so the libconfig object is destroyed
 *    before we return and nothing points into it.
 *  - On failure `cfg` is freed and zeroed, so lapse_config_free is always safe.
 *    Arrays are allocated zeroed with their count set at once, so a failure
 *    half-way through filling one frees cleanly.
 *  - This module never prints and never exits; errstr gets one short line.
 */
#include "config.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NODES_MAX 64  /* redis.nodes upper bound */
#define PATH_MAX_ 256 /* longest dotted key path we spell in a message */
#define SEEN_MAX 48   /* entries a table may have (seen[] is on the stack) */
#define RULES_MAX 256 /* ingress.rules upper bound */
#define ID_MAX 512    /* LAPSE_ID_MAX of producer/line.h: an ID prefix is no longer */

enum ktype {
    K_GROUP, /* a group whose keys are further entries of the same table */
    K_INT,   /* int field; value within min..max */
    K_STR,   /* char * field; length within min..max bytes (max 0: no limit) */
    K_NAME,  /* K_STR restricted to [A-Za-z0-9_.-] (Redis prefix, topic) */
    K_LEVEL, /* log level name, stored as an int (enum lapse_log_level) */
    K_NODES, /* redis.nodes: a list of groups checked against node_keys */
    K_PROPS, /* a list of ("name", value) pairs: off = the struct lapse_kv *
              * field, def = the offset of its size_t count */
    K_TIME,  /* "arrival", "kafka" or "field", stored as an int
              * (enum lapse_time_source) */
    K_RULES, /* ingress.rules: a list of groups checked against rule_keys */
    K_BOOL,  /* true or false, stored as an int 0/1 (def: the default) */
    K_ADDRS, /* a list of "host:port" strings: off = the char ** field, def =
              * the offset of its size_t count, min..max = how many */
};

struct key {
    const char *path;    /* dotted path, relative to the table's root */
    enum ktype type;
    int required;        /* missing is an error (else the default applies) */
    long long def;       /* K_INT default */
    const char *sdef;    /* K_STR/K_NAME/K_LEVEL default (NULL: none) */
    long long min, max;  /* K_INT value bounds; string length bounds */
    size_t off;          /* field offset in the table's struct */
    const char *comment; /* what it is for: the example config says the same */
};

#define CFG(f) offsetof(struct lapse_config, f)
#define NODE(f) offsetof(struct lapse_redis_node, f)
#define RULE(f) offsetof(struct lapse_ingress_rule, f)

/* Order matters only for lapse.conf.example (same order) and for which
 * missing key is reported first. */
static const struct key config_keys[] = {
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
    {"redis.connect_timeout_ms", K_INT, 0, 1000, NULL, 10, 60000,
     CFG(redis_connect_timeout_ms), "give up connecting to a node after this"},
    {"redis.command_timeout_ms", K_INT, 0, 5000, NULL, 10, 600000,
     CFG(redis_command_timeout_ms), "give up on one Redis reply after this"},
    {"redis.retry_timeout_ms", K_INT, 0, 60000, NULL, 10, 3600000, CFG(redis_retry_timeout_ms),
     "a write not applied (node down, failing over) is retried this long before it fails"},
    {"redis.wait_replicas", K_INT, 0, 0, NULL, 0, 64, CFG(redis_wait_replicas),
     "a write counts as applied once WAIT saw this many replicas take it; 0 = no WAIT"},
    {"redis.wait_timeout_ms", K_INT, 0, 1000, NULL, 1, 600000, CFG(redis_wait_timeout_ms),
     "how long one WAIT waits for the replicas; short of them, the write is retried"},
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
    {"log_level", K_LEVEL, 0, 0, "info", 0, 0, CFG(log_level),
     "debug, info, warn or error"},
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
    {"scanner.max_inflight", K_INT, 0, 20000, NULL, 1, 10000000,
     CFG(scanner_max_inflight), "claimed but unacknowledged IDs; claiming pauses here"},
    {"scanner.catchup_rate", K_INT, 0, 0, NULL, 0, 100000000, CFG(scanner_catchup_rate),
     "overdue IDs sent per second per shard while catching up; 0 = no limit"},
    {"scanner.fresh_ms", K_INT, 0, 1000, NULL, 1, 3600000, CFG(scanner_fresh_ms),
     "IDs due within this many ms are fresh: never held back by catchup_rate"},
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
};

/* One element of ingress.rules; paths are relative to "ingress.rules[i]". */
static const struct key rule_keys[] = {
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
};

/* One element of redis.nodes; paths are relative to "redis.nodes[i]". */
static const struct key node_keys[] = {
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

#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))
_Static_assert(NKEYS(config_keys) <= SEEN_MAX, "raise SEEN_MAX");
_Static_assert(NKEYS(node_keys) <= SEEN_MAX, "raise SEEN_MAX");
_Static_assert(NKEYS(rule_keys) <= SEEN_MAX, "raise SEEN_MAX");

/* What one load is working on. */
struct ctx {
    struct lapse_config *cfg;
    const char *path; /* file named in messages when a setting has none */
    char *err;        /* caller's errstr */
    size_t errsize;
};

/* Writes "FILE:LINE: key: reason" (or "FILE: key: reason" when `s` is NULL
 * or has no line) into the caller's errstr; returns -1 for `return fail()`. */
__attribute__((format(printf, 4, 5))) static int
fail(struct ctx *x, const config_setting_t *s, const char *key, const char *fmt, ...)
{
    if (x->err == NULL || x->errsize == 0)
        return -1;
    const char *file = x->path;
    unsigned line = 0;
    if (s != NULL) {
        line = config_setting_source_line(s);
        if (config_setting_source_file(s) != NULL) /* an @include'd file */
            file = config_setting_source_file(s);
    }
    int n = line ? snprintf(x->err, x->errsize, "%s:%u: %s: ", file, line, key)
                 : snprintf(x->err, x->errsize, "%s: %s: ", file, key);
    if (n >= 0 && (size_t)n < x->errsize) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->err + n, x->errsize - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int oom(struct ctx *x, const char *key) { return fail(x, NULL, key, "out of memory"); }

/* Appends `s` to the key path in `out` (PATH_MAX_ bytes), cutting what does
 * not fit: a cut path only shortens an error message; it cannot match a
 * (much shorter) table entry. */
static void append(char *out, const char *s)
{
    size_t len = strlen(out);
    while (*s && len < PATH_MAX_ - 1)
        out[len++] = *s++;
    out[len] = '\0';
}

/* "prefix.name", or "name" at the top. */
static void join(char *out, const char *prefix, const char *name)
{
    out[0] = '\0';
    append(out, prefix);
    if (prefix[0])
        append(out, ".");
    append(out, name);
}

/* "full[i]", for the elements of a list. */
static void index_path(char *out, const char *full, int i)
{
    char num[16];
    snprintf(num, sizeof num, "[%d]", i);
    out[0] = '\0';
    append(out, full);
    append(out, num);
}

static int find(const struct key *tab, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(tab[i].path, path) == 0)
            return (int)i;
    return -1;
}

static int name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

/* Checks a string against a K_STR/K_NAME entry; returns 0 or fails. */
static int check_str(struct ctx *x, const config_setting_t *s, const struct key *k,
                     const char *full, const char *v)
{
    size_t len = strlen(v);
    int ok = len >= (size_t)k->min && (k->max == 0 || len <= (size_t)k->max);
    for (const char *p = v; ok && k->type == K_NAME && *p; p++)
        ok = name_char((unsigned char)*p);
    if (ok)
        return 0;
    if (k->type == K_NAME)
        return fail(x, s, full, "must be %lld..%lld bytes of [A-Za-z0-9_.-]", k->min, k->max);
    if (k->max)
        return fail(x, s, full, "must be %lld..%lld bytes", k->min, k->max);
    return fail(x, s, full, "must not be empty");
}

/* Stores a string (a strdup'd copy) into the char * field at k->off. */
static int store_str(struct ctx *x, const struct key *k, void *base, const char *full,
                     const char *v)
{
    char **field = (char **)((char *)base + k->off);
    if (v == NULL)
        return 0;
    if ((*field = strdup(v)) == NULL)
        return oom(x, full);
    return 0;
}

static int walk(struct ctx *x, const config_setting_t *grp, const struct key *tab, size_t n,
                unsigned char *seen, void *base, const char *rel, const char *full);
static int fill(struct ctx *x, const struct key *tab, size_t n, const unsigned char *seen,
                void *base, const char *full);

static int is_list(const config_setting_t *s)
{
    return config_setting_is_list(s) || config_setting_is_array(s);
}

/* A "host:port" with a port of 1..65535 (an IPv6 host in brackets). */
static int addr_ok(const char *a)
{
    const char *colon = strrchr(a, ':');
    if (!colon || colon == a || !colon[1])
        return 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return *end == '\0' && port >= 1 && port <= 65535 && colon - a <= 255;
}

/* A list of "host:port" strings (K_ADDRS) into the char ** at k->off of
 * base, its count at k->def. */
static int load_addrs(struct ctx *x, const config_setting_t *s, const struct key *k, void *base,
                      const char *full)
{
    char ***list = (char ***)((char *)base + k->off);
    size_t *count = (size_t *)((char *)base + k->def);
    if (!is_list(s))
        return fail(x, s, full, "expected a list ( \"host:port\", ... )");
    int n = config_setting_length(s);
    if (n < k->min || n > k->max)
        return fail(x, s, full, "must list %lld..%lld addresses", k->min, k->max);
    if ((*list = calloc((size_t)n, sizeof **list)) == NULL)
        return oom(x, full);
    *count = (size_t)n;
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        const char *v = config_setting_get_string(e);
        char path[PATH_MAX_];
        index_path(path, full, i);
        if (v == NULL || !addr_ok(v))
            return fail(x, e, path, "expected \"host:port\" (port 1..65535)");
        if (((*list)[i] = strdup(v)) == NULL)
            return oom(x, path);
    }
    return 0;
}

const char *lapse_node_name(const struct lapse_redis_node *n, char *buf, size_t size)
{
    if (n->nseeds)
        snprintf(buf, size, "cluster");
    else if (n->master)
        snprintf(buf, size, "%s", n->master);
    else
        snprintf(buf, size, "%s:%d", n->host ? n->host : "", n->port);
    return buf;
}

/* What one key alone cannot say about a node: it is plain or behind
 * Sentinel, wholly, and a user comes with a password. */
static int check_node(struct ctx *x, const config_setting_t *e, const struct lapse_redis_node *n,
                      const char *path)
{
    int plain = n->host || n->port, sentinel = n->nsentinels || n->master;
    char key[PATH_MAX_];
#define NODE_FAIL(sub, ...) (join(key, path, sub), fail(x, e, key, __VA_ARGS__))
    if (plain && sentinel)
        return fail(x, e, path, "either host and port (a plain node) or sentinels and master "
                    "(a Sentinel node), not both");
    if (!plain && !sentinel)
        return NODE_FAIL("host", "missing (or sentinels and master)");
    if (plain && !n->host)
        return NODE_FAIL("host", "missing");
    if (plain && !n->port)
        return NODE_FAIL("port", "missing");
    if (sentinel && !n->nsentinels)
        return NODE_FAIL("sentinels", "missing");
    if (sentinel && !n->master)
        return NODE_FAIL("master", "missing");
    if (n->was && !sentinel)
        return NODE_FAIL("was", "only for a Sentinel node (sentinels and master)");
    if (n->was && !addr_ok(n->was))
        return NODE_FAIL("was", "expected \"host:port\" (port 1..65535)");
    if (!sentinel && (n->sentinel_username || n->sentinel_password))
        return NODE_FAIL(n->sentinel_username ? "sentinel_username" : "sentinel_password",
                         "only for a Sentinel node (sentinels and master)");
    if (n->username && !n->password)
        return NODE_FAIL("password", "missing (username needs it)");
    if (n->sentinel_username && !n->sentinel_password)
        return NODE_FAIL("sentinel_password", "missing (sentinel_username needs it)");
#undef NODE_FAIL
    return 0;
}

/* redis.nodes: 1..NODES_MAX groups, each checked against node_keys. */
static int load_nodes(struct ctx *x, const config_setting_t *s, const char *full)
{
    if (!is_list(s))
        return fail(x, s, full, "expected a list ( { host = ...; port = ...; }, ... )");
    int n = config_setting_length(s);
    if (n < 1 || n > NODES_MAX)
        return fail(x, s, full, "must list 1..%d nodes", NODES_MAX);
    if ((x->cfg->nodes = calloc((size_t)n, sizeof *x->cfg->nodes)) == NULL)
        return oom(x, full);
    x->cfg->nnodes = (size_t)n;
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char path[PATH_MAX_];
        index_path(path, full, i);
        if (!config_setting_is_group(e))
            return fail(x, e, path, "expected a group { host = ...; port = ...; }");
        unsigned char seen[SEEN_MAX] = {0};
        if (walk(x, e, node_keys, NKEYS(node_keys), seen, &x->cfg->nodes[i], "", path) < 0 ||
            fill(x, node_keys, NKEYS(node_keys), seen, &x->cfg->nodes[i], path) < 0 ||
            check_node(x, e, &x->cfg->nodes[i], path) < 0)
            return -1;
        char name[LAPSE_NODE_NAME_MAX], other[LAPSE_NODE_NAME_MAX];
        lapse_node_name(&x->cfg->nodes[i], name, sizeof name);
        for (int j = 0; j < i; j++) {
            const char *was_i = x->cfg->nodes[i].was, *was_j = x->cfg->nodes[j].was;
            lapse_node_name(&x->cfg->nodes[j], other, sizeof other);
            if (strcmp(other, name) == 0 || (was_j && strcmp(was_j, name) == 0) ||
                (was_i && (strcmp(was_i, other) == 0 || (was_j && strcmp(was_i, was_j) == 0))))
                return fail(x, e, path, "%s is listed twice (as redis.nodes[%d])",
                            was_i && (strcmp(was_i, other) == 0 || (was_j && !strcmp(was_i, was_j)))
                                ? was_i : name, j);
        }
    }
    return 0;
}

/* Properties lapse sets itself on the ingress consumer: overriding them
 * would break the commit rule, so naming them is an error. */
static const char *const ingress_reserved[] = {
    "group.id", "enable.auto.commit", "enable.auto.offset.store",
};

/* kafka.properties, ingress.properties: ( ("name", value), ... ). A list of
 * pairs rather than a group because libconfig names cannot contain the dots
 * librdkafka's names have. Values may be strings, integers or booleans; they
 * are kept as the strings rd_kafka_conf_set wants. Names are not checked here
 * (librdkafka knows its own), but a name given twice is an error, not a
 * silent override. */
static int load_props(struct ctx *x, const config_setting_t *s, const struct key *k,
                      const char *full)
{
    struct lapse_kv **props = (struct lapse_kv **)((char *)x->cfg + k->off);
    size_t *count = (size_t *)((char *)x->cfg + k->def);
    int ingress = strcmp(k->path, "ingress.properties") == 0;
    if (!is_list(s))
        return fail(x, s, full, "expected a list ( (\"name\", \"value\"), ... )");
    int n = config_setting_length(s);
    if (n == 0)
        return 0;
    if ((*props = calloc((size_t)n, sizeof **props)) == NULL)
        return oom(x, full);
    *count = (size_t)n;
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char path[PATH_MAX_], num[32];
        index_path(path, full, i);
        if (!is_list(e) || config_setting_length(e) != 2)
            return fail(x, e, path, "expected (\"name\", \"value\")");
        const config_setting_t *ks = config_setting_get_elem(e, 0);
        const config_setting_t *vs = config_setting_get_elem(e, 1);
        const char *name = config_setting_get_string(ks);
        if (name == NULL || name[0] == '\0')
            return fail(x, e, path, "property name must be a non-empty string");
        if (strcmp(name, "bootstrap.servers") == 0 || strcmp(name, "metadata.broker.list") == 0)
            return fail(x, e, path, "%s: set kafka.brokers instead", name);
        for (size_t r = 0; ingress && r < NKEYS(ingress_reserved); r++)
            if (strcmp(name, ingress_reserved[r]) == 0)
                return fail(x, e, path, "%s: set by lapse (ingress.group; offsets are "
                            "committed only once applied)", name);
        const char *value;
        switch (config_setting_type(vs)) {
        case CONFIG_TYPE_STRING: value = config_setting_get_string(vs); break;
        case CONFIG_TYPE_INT:
        case CONFIG_TYPE_INT64:
            snprintf(num, sizeof num, "%lld", config_setting_get_int64(vs));
            value = num;
            break;
        case CONFIG_TYPE_BOOL: value = config_setting_get_bool(vs) ? "true" : "false"; break;
        default: return fail(x, e, path, "%s: value must be a string, integer or boolean", name);
        }
        for (int j = 0; j < i; j++)
            if (strcmp((*props)[j].key, name) == 0)
                return fail(x, e, path, "%s: given twice", name);
        struct lapse_kv *kv = &(*props)[i];
        if ((kv->key = strdup(name)) == NULL || (kv->value = strdup(value)) == NULL)
            return oom(x, path);
    }
    return 0;
}

/* ingress.rules: 0..RULES_MAX groups, each checked against rule_keys, then
 * for what one key alone cannot say: match_field and match_value come
 * together, and time_field only means something with time = "field". */
static int load_rules(struct ctx *x, const config_setting_t *s, const char *full)
{
    if (!is_list(s))
        return fail(x, s, full, "expected a list ( { timeout_ms = ...; }, ... )");
    int n = config_setting_length(s);
    if (n > RULES_MAX)
        return fail(x, s, full, "must list 0..%d rules", RULES_MAX);
    if (n == 0)
        return 0;
    if ((x->cfg->ingress_rules = calloc((size_t)n, sizeof *x->cfg->ingress_rules)) == NULL)
        return oom(x, full);
    x->cfg->ningress_rules = (size_t)n;
    int tf = find(rule_keys, NKEYS(rule_keys), "time_field");
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        struct lapse_ingress_rule *r = &x->cfg->ingress_rules[i];
        char path[PATH_MAX_];
        index_path(path, full, i);
        if (!config_setting_is_group(e))
            return fail(x, e, path, "expected a group { timeout_ms = ...; }");
        unsigned char seen[SEEN_MAX] = {0};
        if (walk(x, e, rule_keys, NKEYS(rule_keys), seen, r, "", path) < 0 ||
            fill(x, rule_keys, NKEYS(rule_keys), seen, r, path) < 0)
            return -1;
        if ((r->match_field == NULL) != (r->match_value == NULL))
            return fail(x, e, path, "match_field and match_value go together");
        if (seen[tf] && r->time_source != LAPSE_TIME_FIELD)
            return fail(x, e, path, "time_field needs time = \"field\"");
    }
    return 0;
}

static const char *const time_names[] = {
    [LAPSE_TIME_ARRIVAL] = "arrival", [LAPSE_TIME_KAFKA] = "kafka", [LAPSE_TIME_FIELD] = "field",
};

static int time_parse(const char *v)
{
    for (int i = 0; i < (int)NKEYS(time_names); i++)
        if (strcmp(v, time_names[i]) == 0)
            return i;
    return -1;
}

/* Checks one setting against its table entry and stores it. */
static int set_one(struct ctx *x, const config_setting_t *s, const struct key *k,
                   const struct key *tab, size_t n, unsigned char *seen, void *base,
                   const char *rel, const char *full)
{
    int t = config_setting_type(s);
    switch (k->type) {
    case K_GROUP:
        if (t != CONFIG_TYPE_GROUP)
            return fail(x, s, full, "expected a group { ... }");
        return walk(x, s, tab, n, seen, base, rel, full);
    case K_INT: {
        if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
            return fail(x, s, full, "expected an integer");
        /* libconfig 1.5 wraps an unsuffixed literal beyond 32 bits into an
         * int (4294967297 reads as 1) and gives us no way to tell; only
         * "L"-suffixed literals arrive as INT64 with their real value. */
        long long v = config_setting_get_int64(s);
        if (v < k->min || v > k->max)
            return fail(x, s, full, "must be %lld..%lld (got %lld)", k->min, k->max, v);
        *(int *)((char *)base + k->off) = (int)v;
        return 0;
    }
    case K_STR:
    case K_NAME:
    case K_LEVEL:
    case K_TIME: {
        if (t != CONFIG_TYPE_STRING)
            return fail(x, s, full, "expected a string");
        const char *v = config_setting_get_string(s);
        if (k->type == K_TIME) {
            int ts = time_parse(v);
            if (ts < 0)
                return fail(x, s, full, "must be one of arrival, kafka, field");
            *(int *)((char *)base + k->off) = ts;
            return 0;
        }
        if (k->type != K_LEVEL)
            return check_str(x, s, k, full, v) < 0 ? -1 : store_str(x, k, base, full, v);
        int level = lapse_log_level_parse(v);
        if (level < 0)
            return fail(x, s, full, "must be one of debug, info, warn, error");
        *(int *)((char *)base + k->off) = level;
        return 0;
    }
    case K_BOOL:
        if (t != CONFIG_TYPE_BOOL)
            return fail(x, s, full, "expected true or false");
        *(int *)((char *)base + k->off) = config_setting_get_bool(s);
        return 0;
    case K_NODES: return load_nodes(x, s, full);
    case K_PROPS: return load_props(x, s, k, full);
    case K_ADDRS: return load_addrs(x, s, k, base, full);
    case K_RULES: return load_rules(x, s, full);
    }
    return fail(x, s, full, "internal error: bad table entry");
}

/* Checks every setting of group `grp`, in file order, against `tab`; `rel`
 * is the group's path within the table, `full` its path in the file. */
static int walk(struct ctx *x, const config_setting_t *grp, const struct key *tab, size_t n,
                unsigned char *seen, void *base, const char *rel, const char *full)
{
    int len = config_setting_length(grp);
    for (int i = 0; i < len; i++) {
        const config_setting_t *s = config_setting_get_elem(grp, (unsigned)i);
        char relp[PATH_MAX_], fullp[PATH_MAX_];
        join(relp, rel, config_setting_name(s));
        join(fullp, full, config_setting_name(s));
        int k = find(tab, n, relp);
        if (k < 0)
            return fail(x, s, fullp, "unknown key");
        seen[k] = 1;
        if (set_one(x, s, &tab[k], tab, n, seen, base, relp, fullp) < 0)
            return -1;
    }
    return 0;
}

/* After a walk: a required key not seen is an error, others get defaults. */
static int fill(struct ctx *x, const struct key *tab, size_t n, const unsigned char *seen,
                void *base, const char *full)
{
    for (size_t i = 0; i < n; i++) {
        const struct key *k = &tab[i];
        char fullp[PATH_MAX_];
        if (seen[i])
            continue;
        join(fullp, full, k->path);
        if (k->required)
            return fail(x, NULL, fullp, "missing");
        if (k->type == K_INT || k->type == K_BOOL)
            *(int *)((char *)base + k->off) = (int)k->def;
        else if (k->type == K_LEVEL)
            *(int *)((char *)base + k->off) = lapse_log_level_parse(k->sdef);
        else if (k->type == K_TIME)
            *(int *)((char *)base + k->off) = time_parse(k->sdef);
        else if ((k->type == K_STR || k->type == K_NAME) && store_str(x, k, base, fullp, k->sdef) < 0)
            return -1;
    }
    return 0;
}

/* Reports why `path` cannot be read, with errno taken right at the failing
 * call; libconfig only says "file I/O error". Returns 0 if it looks readable. */
static int probe(const char *path, char *errstr, size_t size)
{
    struct stat st;
    int e = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        e = errno;
    else if (fstat(fd, &st) < 0)
        e = errno;
    else if (S_ISDIR(st.st_mode))
        e = EISDIR;
    if (fd >= 0)
        close(fd);
    if (e && errstr && size)
        snprintf(errstr, size, "%s: cannot read: %s", path, strerror(e));
    return e ? -1 : 0;
}

/* redis.tls: a certificate comes with its key. */
static int check_tls(struct ctx *x, const config_t *lc)
{
    const struct lapse_config *c = x->cfg;
    if (!c->redis_tls_cert_file == !c->redis_tls_key_file)
        return 0;
    const char *missing = c->redis_tls_cert_file ? "redis.tls.key_file" : "redis.tls.cert_file";
    return fail(x, config_lookup(lc, "redis.tls"), missing, "missing (mutual TLS needs both "
                "cert_file and key_file)");
}

/* redis.nodes or redis.cluster, one of them; the cluster becomes nodes[0]. */
static int check_cluster(struct ctx *x, const config_t *lc)
{
    struct lapse_config *c = x->cfg;
    if (!c->ncluster_seeds) {
        if (c->nnodes)
            return c->cluster_username || c->cluster_password || c->cluster_tls
                       ? fail(x, config_lookup(lc, "redis"), "redis.cluster",
                              "missing (redis.cluster_* keys need it)")
                       : 0;
        return fail(x, NULL, "redis.nodes", "missing (or redis.cluster)");
    }
    if (c->nnodes)
        return fail(x, config_lookup(lc, "redis.cluster"), "redis.cluster",
                    "redis.nodes is given too: a namespace lives on nodes or on a cluster");
    if (c->cluster_username && !c->cluster_password)
        return fail(x, config_lookup(lc, "redis.cluster_username"), "redis.cluster_password",
                    "missing (redis.cluster_username needs it)");
    if (!(c->nodes = calloc(1, sizeof *c->nodes)))
        return oom(x, "redis.cluster");
    c->nnodes = 1;
    c->cluster = 1;
    struct lapse_redis_node *n = &c->nodes[0];
    n->seeds = c->cluster_seeds, n->nseeds = c->ncluster_seeds;
    c->cluster_seeds = NULL, c->ncluster_seeds = 0;
    n->username = c->cluster_username, n->password = c->cluster_password;
    c->cluster_username = c->cluster_password = NULL;
    n->tls = c->cluster_tls;
    return 0;
}

/* Topics that must differ: reading the event topic or the dead-letter topic
 * as ingress would feed lapse's own output back into it. */
static int check_topics(struct ctx *x, const config_t *lc)
{
    const struct lapse_config *c = x->cfg;
    if (c->ingress_topic == NULL)
        return 0;
    if (strcmp(c->ingress_topic, c->kafka_topic) == 0)
        return fail(x, config_lookup(lc, "ingress.topic"), "ingress.topic",
                    "must differ from kafka.topic (the events lapse produces)");
    if (c->ingress_dead_letter_topic && strcmp(c->ingress_dead_letter_topic, c->ingress_topic) == 0)
        return fail(x, config_lookup(lc, "ingress.dead_letter_topic"), "ingress.dead_letter_topic",
                    "must differ from ingress.topic");
    return 0;
}

int lapse_config_check_ingress(const struct lapse_config *cfg, char *errstr, size_t size)
{
    const char *key = !cfg->ingress_topic ? "ingress.topic" : !cfg->ingress_group ? "ingress.group"
                                                                                  : NULL;
    if (key == NULL)
        return 0;
    if (errstr && size)
        snprintf(errstr, size, "%s: %s: missing (required by --from-kafka)", cfg->path, key);
    return -1;
}

int lapse_config_load(struct lapse_config *cfg, const char *path, char *errstr, size_t size)
{
    struct ctx x = {cfg, path, errstr, size};
    memset(cfg, 0, sizeof *cfg);
    if (errstr && size)
        errstr[0] = '\0';
    if (probe(path, errstr, size) < 0)
        return -1;

    config_t lc;
    config_init(&lc);
    if (!config_read_file(&lc, path)) {
        const char *file = config_error_file(&lc) ? config_error_file(&lc) : path;
        const char *text = config_error_text(&lc) ? config_error_text(&lc) : "?";
        if (errstr && size) {
            if (config_error_type(&lc) == CONFIG_ERR_FILE_IO)
                snprintf(errstr, size, "%s: cannot read: %s", file, text);
            else if (strcmp(text, "syntax error") == 0) /* don't say it twice */
                snprintf(errstr, size, "%s:%d: syntax error", file, config_error_line(&lc));
            else
                snprintf(errstr, size, "%s:%d: syntax error: %s", file,
                         config_error_line(&lc), text);
        }
        config_destroy(&lc);
        return -1;
    }

    unsigned char seen[SEEN_MAX] = {0};
    int rc = -1;
    if ((cfg->path = strdup(path)) == NULL)
        oom(&x, "path");
    else if (walk(&x, config_root_setting(&lc), config_keys, NKEYS(config_keys), seen, cfg, "",
                  "") == 0 &&
             fill(&x, config_keys, NKEYS(config_keys), seen, cfg, "") == 0)
        rc = check_tls(&x, &lc) < 0 || check_cluster(&x, &lc) < 0 ? -1 : check_topics(&x, &lc);
    config_destroy(&lc);
    if (rc < 0)
        lapse_config_free(cfg);
    return rc;
}

/* Frees the string fields the table `keys` describes in the struct at base:
 * adding a string key to a table is all it takes to have it freed. */
static void free_strings(const struct key *keys, size_t n, void *base)
{
    for (size_t i = 0; i < n; i++)
        if (keys[i].type == K_STR || keys[i].type == K_NAME)
            free(*(char **)((char *)base + keys[i].off));
}

void lapse_config_free(struct lapse_config *cfg)
{
    if (cfg == NULL)
        return;
    free_strings(config_keys, NKEYS(config_keys), cfg);
    for (size_t i = 0; i < cfg->nnodes; i++) {
        struct lapse_redis_node *n = &cfg->nodes[i];
        free_strings(node_keys, NKEYS(node_keys), n);
        for (size_t k = 0; k < n->nsentinels; k++)
            free(n->sentinels[k]);
        free(n->sentinels);
        for (size_t k = 0; k < n->nseeds; k++)
            free(n->seeds[k]);
        free(n->seeds);
    }
    for (size_t k = 0; k < cfg->ncluster_seeds; k++)
        free(cfg->cluster_seeds[k]);
    free(cfg->cluster_seeds);
    for (size_t i = 0; i < cfg->ningress_rules; i++)
        free_strings(rule_keys, NKEYS(rule_keys), &cfg->ingress_rules[i]);
    for (size_t i = 0; i < cfg->nkafka_props; i++) {
        free(cfg->kafka_props[i].key);
        free(cfg->kafka_props[i].value);
    }
    for (size_t i = 0; i < cfg->ningress_props; i++) {
        free(cfg->ingress_props[i].key);
        free(cfg->ingress_props[i].value);
    }
    free(cfg->ingress_props);
    free(cfg->ingress_rules);
    free(cfg->nodes);
    free(cfg->kafka_props);
    free(cfg->path);
    memset(cfg, 0, sizeof *cfg);
}
