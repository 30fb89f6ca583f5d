/*
 * config_lists — the settings that are lists, element by element
 * (config_walk.c's set_one hands them here): redis.nodes (each a group
 * checked against config_node_keys, then for what one key alone cannot
 * say: check_node), kafka.properties and ingress.properties (key/value
 * pairs), address lists, and ingress.rules. The walk's invariants
 * (config_walk.c) hold here too: an element stops at its first problem,
 * every string is a copy, arrays are allocated zeroed with their count set.
 */
#include "config_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A host name or address without a port (K_HOSTS): letters, digits, '.',
 * '-', '_' and, for an IPv6 address, at least two ':' (one ':' is a
 * "host:port", whose port this key does not take). */
static int host_ok(const char *h)
{
    size_t len = strlen(h), colons = 0;
    if (len == 0 || len > 255)
        return 0;
    for (const char *p = h; *p; p++) {
        if (*p == ':')
            colons++;
        else if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                   (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
            return 0;
    }
    return colons != 1;
}

/* A list of "host:port" strings (K_ADDRS), or of hosts (K_HOSTS), into the
 * char ** at k->off of base, its count at k->def. */
int config_load_addrs(struct ctx *x, const config_setting_t *s, const struct key *k, void *base,
                      const char *full)
{
    char ***list = (char ***)((char *)base + k->off);
    size_t *count = (size_t *)((char *)base + k->def);
    int hosts = k->type == K_HOSTS;
    if (!is_list(s))
        return config_fail(x, s, full,
                           hosts ? "expected a list ( \"host\", ... )"
                                 : "expected a list ( \"host:port\", ... )");
    int n = config_setting_length(s);
    if (n < k->min || n > k->max)
        return config_fail(x, s, full, "must list %lld..%lld %s", k->min, k->max,
                           hosts ? "hosts" : "addresses");
    if (n == 0)
        return 0; /* (a list the key allows empty: nothing to hold) */
    if ((*list = calloc((size_t)n, sizeof **list)) == NULL)
        return config_oom(x, full);
    *count = (size_t)n;
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        const char *v = config_setting_get_string(e);
        char path[CONFIG_PATH_MAX];
        config_index_path(path, full, i);
        if (hosts && (v == NULL || !host_ok(v)))
            return config_fail(x, e, path, "expected a host name or address, without a port");
        if (!hosts && (v == NULL || !addr_ok(v)))
            return config_fail(x, e, path, "expected \"host:port\" (port 1..65535)");
        if (((*list)[i] = strdup(v)) == NULL)
            return config_oom(x, path);
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
    char key[CONFIG_PATH_MAX];
#define NODE_FAIL(sub, ...) (config_join(key, path, sub), config_fail(x, e, key, __VA_ARGS__))
    if (plain && sentinel)
        return config_fail(x, e, path,
                           "either host and port (a plain node) or sentinels and "
                           "master (a Sentinel node), not both");
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

int config_where(struct ctx *x, const config_setting_t *s, char **where)
{
    const char *file = config_setting_source_file(s) ? config_setting_source_file(s) : x->path;
    int n = snprintf(NULL, 0, "%s:%u", file, config_setting_source_line(s));
    if (n < 0 || !(*where = malloc((size_t)n + 1)))
        return config_oom(x, "redis.nodes");
    snprintf(*where, (size_t)n + 1, "%s:%u", file, config_setting_source_line(s));
    return 0;
}

/* redis.nodes: 1..NODES_MAX groups, each checked against config_node_keys. */
int config_load_nodes(struct ctx *x, const config_setting_t *s, const char *full)
{
    if (!is_list(s))
        return config_fail(x, s, full, "expected a list ( { host = ...; port = ...; }, ... )");
    int n = config_setting_length(s);
    if (n < 1 || n > NODES_MAX)
        return config_fail(x, s, full, "must list 1..%d nodes", NODES_MAX);
    if ((x->cfg->nodes = calloc((size_t)n, sizeof *x->cfg->nodes)) == NULL)
        return config_oom(x, full);
    x->cfg->nnodes = (size_t)n;
    int before = x->problems;
    for (int i = 0; i < n && !x->oom; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char path[CONFIG_PATH_MAX];
        config_index_path(path, full, i);
        if (!config_setting_is_group(e)) {
            config_fail(x, e, path, "expected a group { host = ...; port = ...; }");
            continue;
        }
        if (config_where(x, e, &x->cfg->nodes[i].where) < 0)
            return -1;
        unsigned char seen[SEEN_MAX] = {0};
        int walked = config_walk(x, e, config_node_keys, config_nnode_keys, seen, &x->cfg->nodes[i],
                                 "", path);
        if (config_fill(x, config_node_keys, config_nnode_keys, seen, &x->cfg->nodes[i], path) <
                0 ||
            walked < 0 || check_node(x, e, &x->cfg->nodes[i], path) < 0)
            continue; /* reported; the next node may have problems too */
        if (x->problems > before)
            continue; /* a node before it was wrong: no comparing with it */
        char name[LAPSE_NODE_NAME_MAX], other[LAPSE_NODE_NAME_MAX];
        lapse_node_name(&x->cfg->nodes[i], name, sizeof name);
        for (int j = 0; j < i; j++) {
            const char *was_i = x->cfg->nodes[i].was, *was_j = x->cfg->nodes[j].was;
            lapse_node_name(&x->cfg->nodes[j], other, sizeof other);
            if (strcmp(other, name) == 0 || (was_j && strcmp(was_j, name) == 0) ||
                (was_i && (strcmp(was_i, other) == 0 || (was_j && strcmp(was_i, was_j) == 0)))) {
                config_fail(x, e, path, "%s is listed twice (as redis.nodes[%d])",
                            was_i && (strcmp(was_i, other) == 0 || (was_j && !strcmp(was_i, was_j)))
                                ? was_i
                                : name,
                            j);
                break;
            }
        }
    }
    return x->problems > before ? -1 : 0;
}

/* Properties lapse sets itself on the ingress consumer: overriding them
 * would break the commit rule, so naming them is an error. */
static const char *const ingress_reserved[] = {
    "group.id",
    "enable.auto.commit",
    "enable.auto.offset.store",
};

/* kafka.properties, ingress.properties: ( ("name", value), ... ). A list of
 * pairs rather than a group because libconfig names cannot contain the dots
 * librdkafka's names have. Values may be strings, integers or booleans; they
 * are kept as the strings rd_kafka_conf_set wants. Names are not checked here
 * (librdkafka knows its own), but a name given twice is an error, not a
 * silent override. */
int config_load_props(struct ctx *x, const config_setting_t *s, const struct key *k,
                      const char *full)
{
    struct lapse_kv **props = (struct lapse_kv **)((char *)x->cfg + k->off);
    size_t *count = (size_t *)((char *)x->cfg + k->def);
    int ingress = strcmp(k->path, "ingress.properties") == 0;
    if (!is_list(s))
        return config_fail(x, s, full, "expected a list ( (\"name\", \"value\"), ... )");
    int n = config_setting_length(s);
    if (n == 0)
        return 0;
    if ((*props = calloc((size_t)n, sizeof **props)) == NULL)
        return config_oom(x, full);
    *count = (size_t)n;
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char path[CONFIG_PATH_MAX], num[32];
        config_index_path(path, full, i);
        if (!is_list(e) || config_setting_length(e) != 2)
            return config_fail(x, e, path, "expected (\"name\", \"value\")");
        const config_setting_t *ks = config_setting_get_elem(e, 0);
        const config_setting_t *vs = config_setting_get_elem(e, 1);
        const char *name = config_setting_get_string(ks);
        if (name == NULL || name[0] == '\0')
            return config_fail(x, e, path, "property name must be a non-empty string");
        if (strcmp(name, "bootstrap.servers") == 0 || strcmp(name, "metadata.broker.list") == 0)
            return config_fail(x, e, path, "%s: set kafka.brokers instead", name);
        for (size_t r = 0; ingress && r < COUNT_OF(ingress_reserved); r++)
            if (strcmp(name, ingress_reserved[r]) == 0)
                return config_fail(x, e, path,
                                   "%s: set by lapse (ingress.group; offsets are "
                                   "committed only once applied)",
                                   name);
        const char *value;
        switch (config_setting_type(vs)) {
        case CONFIG_TYPE_STRING:
            value = config_setting_get_string(vs);
            break;
        case CONFIG_TYPE_INT:
        case CONFIG_TYPE_INT64:
            snprintf(num, sizeof num, "%lld", config_setting_get_int64(vs));
            value = num;
            break;
        case CONFIG_TYPE_BOOL:
            value = config_setting_get_bool(vs) ? "true" : "false";
            break;
        default:
            return config_fail(x, e, path, "%s: value must be a string, integer or boolean", name);
        }
        for (int j = 0; j < i; j++)
            if (strcmp((*props)[j].key, name) == 0)
                return config_fail(x, e, path, "%s: given twice", name);
        struct lapse_kv *kv = &(*props)[i];
        if ((kv->key = strdup(name)) == NULL || (kv->value = strdup(value)) == NULL)
            return config_oom(x, path);
    }
    return 0;
}

/* ingress.rules: 0..RULES_MAX groups, each checked against config_rule_keys, then
 * for what one key alone cannot say: match_field and match_value come
 * together, and time_field only means something with time = "field". */
int config_load_rules(struct ctx *x, const config_setting_t *s, const char *full)
{
    if (!is_list(s))
        return config_fail(x, s, full, "expected a list ( { timeout_ms = ...; }, ... )");
    int n = config_setting_length(s);
    if (n > RULES_MAX)
        return config_fail(x, s, full, "must list 0..%d rules", RULES_MAX);
    if (n == 0)
        return 0;
    if ((x->cfg->ingress_rules = calloc((size_t)n, sizeof *x->cfg->ingress_rules)) == NULL)
        return config_oom(x, full);
    x->cfg->ningress_rules = (size_t)n;
    int tf = config_find(config_rule_keys, config_nrule_keys, "time_field"), before = x->problems;
    for (int i = 0; i < n && !x->oom; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        struct lapse_ingress_rule *r = &x->cfg->ingress_rules[i];
        char path[CONFIG_PATH_MAX];
        config_index_path(path, full, i);
        if (!config_setting_is_group(e)) {
            config_fail(x, e, path, "expected a group { timeout_ms = ...; }");
            continue;
        }
        unsigned char seen[SEEN_MAX] = {0};
        int walked = config_walk(x, e, config_rule_keys, config_nrule_keys, seen, r, "", path);
        if (config_fill(x, config_rule_keys, config_nrule_keys, seen, r, path) < 0 || walked < 0)
            continue; /* reported; the next rule may have problems too */
        if ((r->match_field == NULL) != (r->match_value == NULL))
            config_fail(x, e, path, "match_field and match_value go together");
        else if (seen[tf] && r->time_source != LAPSE_TIME_FIELD)
            config_fail(x, e, path, "time_field needs time = \"field\"");
    }
    return x->problems > before ? -1 : 0;
}
