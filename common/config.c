/*
 * config — loads and validates the libconfig file (see config.h): reads it,
 * has config_walk.c check every setting against the key tables of
 * config_keys.c (why a table: see there), then checks what no single key can
 * say (a TLS certificate with its key, nodes or a cluster, topics that must
 * differ); and frees what a load made, guided by the same tables.
 *
 * Invariants:
 *  - The whole file is checked before lapse_config_load returns 0: a key that
 *    is not in a table, a value of the wrong type or out of bounds, or a
 *    missing required key is an error. Problems are found in file order, then
 *    missing keys in table order; each is reported on a line of its own
 *    (config_walk.c says which go on to the next).
 *  - On success every field is set (from the file or the table's default);
 *    every string is a strdup'd copy, so the libconfig object is destroyed
 *    before we return and nothing points into it.
 *  - On failure `cfg` is freed and zeroed, so lapse_config_free is always safe.
 *    Arrays are allocated zeroed with their count set at once, so a failure
 *    half-way through filling one frees cleanly.
 *  - This module never prints and never exits; errstr gets one short line
 *    a problem.
 */
#include "config.h"
#include "config_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    return config_fail(x, config_lookup(lc, "redis.tls"), missing,
                       "missing (mutual TLS needs both cert_file and key_file)");
}

/* redis.nodes or redis.cluster, one of them; the cluster becomes nodes[0]. */
static int check_cluster(struct ctx *x, const config_t *lc)
{
    struct lapse_config *c = x->cfg;
    if (!c->ncluster_seeds) {
        if (c->nnodes)
            return c->cluster_username || c->cluster_password || c->cluster_tls
                       ? config_fail(x, config_lookup(lc, "redis"), "redis.cluster",
                                     "missing (redis.cluster_* keys need it)")
                       : 0;
        return config_fail(x, NULL, "redis.nodes", "missing (or redis.cluster)");
    }
    if (c->nnodes)
        return config_fail(x, config_lookup(lc, "redis.cluster"), "redis.cluster",
                           "redis.nodes is given too: a namespace lives on nodes or on a cluster");
    if (c->cluster_username && !c->cluster_password)
        return config_fail(x, config_lookup(lc, "redis.cluster_username"), "redis.cluster_password",
                           "missing (redis.cluster_username needs it)");
    if (!(c->nodes = calloc(1, sizeof *c->nodes)))
        return config_oom(x, "redis.cluster");
    c->nnodes = 1;
    c->cluster = 1;
    struct lapse_redis_node *n = &c->nodes[0];
    n->seeds = c->cluster_seeds, n->nseeds = c->ncluster_seeds;
    c->cluster_seeds = NULL, c->ncluster_seeds = 0;
    n->username = c->cluster_username, n->password = c->cluster_password;
    c->cluster_username = c->cluster_password = NULL;
    n->tls = c->cluster_tls;
    return config_where(x, config_lookup(lc, "redis.cluster"), &n->where);
}

/* Topics that must differ: reading the event topic or the dead-letter topic
 * as ingress would feed lapse's own output back into it. */
static int check_topics(struct ctx *x, const config_t *lc)
{
    const struct lapse_config *c = x->cfg;
    if (c->ingress_topic == NULL)
        return 0;
    if (strcmp(c->ingress_topic, c->kafka_topic) == 0)
        return config_fail(x, config_lookup(lc, "ingress.topic"), "ingress.topic",
                           "must differ from kafka.topic (the events lapse produces)");
    if (c->ingress_dead_letter_topic && strcmp(c->ingress_dead_letter_topic, c->ingress_topic) == 0)
        return config_fail(x, config_lookup(lc, "ingress.dead_letter_topic"),
                           "ingress.dead_letter_topic", "must differ from ingress.topic");
    return 0;
}

/* redis.policy_checked: one of Redis's maxmemory-policy names (Redis 7),
 * so a typo is not taken for a policy someone checked. */
static int check_policy(struct ctx *x, const config_t *lc)
{
    static const char *const names[] = {"noeviction",      "allkeys-lru",  "allkeys-lfu",
                                        "allkeys-random",  "volatile-lru", "volatile-lfu",
                                        "volatile-random", "volatile-ttl"};
    const char *p = x->cfg->redis_policy_checked;
    if (!p)
        return 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(p, names[i]) == 0)
            return 0;
    return config_fail(x, config_lookup(lc, "redis.policy_checked"), "redis.policy_checked",
                       "\"%s\" is no maxmemory-policy (noeviction, allkeys-lru, volatile-lru, ...)",
                       p);
}

int lapse_config_check_ingress(const struct lapse_config *cfg, char *errstr, size_t size)
{
    const char *key = !cfg->ingress_topic   ? "ingress.topic"
                      : !cfg->ingress_group ? "ingress.group"
                                            : NULL;
    if (key == NULL)
        return 0;
    if (errstr && size)
        snprintf(errstr, size, "%s: %s: missing (required by --from-kafka)", cfg->path, key);
    return -1;
}

/* libconfig names the line where its parser gave up, which for a group or
 * list left open is lines later (often the end of the file). So on a
 * syntax error the file's brackets are scanned (outside strings and
 * comments of all three kinds), and the bracket left open, or closed by the
 * wrong one, is named: " (the group opened at line 4 is not closed)".
 * hint is "" when the brackets pair up (the error is something else). */
static void bracket_hint(const char *file, char *hint, size_t size)
{
    enum { CODE, STR, LINE_COMMENT, BLOCK_COMMENT } st = CODE;
    struct {
        int c, line;
    } open[64]; /* the brackets open at this point */
    int depth = 0, over = 0, line = 1, prev = 0, c;
    hint[0] = '\0';
    FILE *f = fopen(file, "r");
    if (f == NULL)
        return;
    while ((c = getc(f)) != EOF) {
        int was = (int)st;
        if (st == STR && c == '\\') { /* an escaped byte, a quote too */
            if ((c = getc(f)) == EOF)
                break;
        } else if (st == STR && c == '"') {
            st = CODE;
        } else if (st == LINE_COMMENT && c == '\n') {
            st = CODE;
        } else if (st == BLOCK_COMMENT && c == '/' && prev == '*') {
            st = CODE;
        } else if (st == CODE && (c == '"' || c == '#' || (c == '/' && prev == '/'))) {
            st = c == '"' ? STR : LINE_COMMENT;
        } else if (st == CODE && c == '*' && prev == '/') {
            st = BLOCK_COMMENT;
        } else if (st == CODE && (c == '{' || c == '(' || c == '[')) {
            if (depth < (int)(sizeof open / sizeof open[0]))
                open[depth].c = c, open[depth].line = line;
            else
                over++;
            depth++;
        } else if (st == CODE && (c == '}' || c == ')' || c == ']')) {
            int want = c == '}' ? '{' : c == ')' ? '(' : '[';
            if (depth == 0) {
                snprintf(hint, size, " (the '%c' at line %d closes nothing)", c, line);
                break;
            }
            if (depth <= (int)(sizeof open / sizeof open[0]) && open[depth - 1].c != want) {
                int o = open[depth - 1].c;
                snprintf(hint, size,
                         " (the %s opened at line %d is not closed before the '%c' at line %d)",
                         o == '{'   ? "group"
                         : o == '(' ? "list"
                                    : "array",
                         open[depth - 1].line, c, line);
                break;
            }
            depth--;
        }
        if (c == '\n')
            line++;
        prev = (int)st != was ? 0 : c; /* a comment's opening star does not also close it */
    }
    fclose(f);
    if (!hint[0] && depth > 0 && !over) {
        int o = open[depth - 1].c;
        snprintf(hint, size, " (the %s opened at line %d is not closed)",
                 o == '{'   ? "group"
                 : o == '(' ? "list"
                            : "array",
                 open[depth - 1].line);
    }
}

int lapse_config_load(struct lapse_config *cfg, const char *path, char *errstr, size_t size)
{
    struct ctx x = {.cfg = cfg, .path = path, .err = errstr, .errsize = size};
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
            char hint[128] = "";
            if (config_error_type(&lc) == CONFIG_ERR_FILE_IO)
                snprintf(errstr, size, "%s: cannot read: %s", file, text);
            else if (bracket_hint(file, hint, sizeof hint), strcmp(text, "syntax error") == 0)
                snprintf(errstr, size, "%s:%d: syntax error%s", file, config_error_line(&lc),
                         hint); /* (libconfig's text alone: not said twice) */
            else
                snprintf(errstr, size, "%s:%d: syntax error: %s%s", file, config_error_line(&lc),
                         text, hint);
        }
        config_destroy(&lc);
        return -1;
    }

    unsigned char seen[SEEN_MAX] = {0};
    int rc = -1;
    if ((cfg->path = strdup(path)) == NULL)
        config_oom(&x, "path");
    else if ((config_walk(&x, config_root_setting(&lc), config_keys, config_nkeys, seen, cfg, "",
                          ""),
              config_fill(&x, config_keys, config_nkeys, seen, cfg, ""), x.problems == x.unknown))
        /* (what keys say together, once every value is right) */
        rc = check_tls(&x, &lc) < 0 || check_cluster(&x, &lc) < 0 || check_policy(&x, &lc) < 0 ||
                     check_topics(&x, &lc) < 0 || config_check_scale(&x, &lc) < 0 || x.problems
                 ? -1
                 : 0;
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
    free_strings(config_keys, config_nkeys, cfg);
    for (size_t i = 0; i < cfg->nnodes; i++) {
        struct lapse_redis_node *n = &cfg->nodes[i];
        free_strings(config_node_keys, config_nnode_keys, n);
        free(n->where);
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
    for (size_t k = 0; k < cfg->nscale_scanner_hosts; k++)
        free(cfg->scale_scanner_hosts[k]);
    free(cfg->scale_scanner_hosts);
    for (size_t i = 0; i < cfg->ningress_rules; i++)
        free_strings(config_rule_keys, config_nrule_keys, &cfg->ingress_rules[i]);
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

struct lapse_config *lapse_config_open(const char *path, char *errstr, size_t size)
{
    struct lapse_config *cfg = malloc(sizeof *cfg);
    if (!cfg) {
        snprintf(errstr, size, "out of memory");
        errno = ENOMEM;
        return NULL;
    }
    if (lapse_config_load(cfg, path, errstr, size) < 0) {
        free(cfg);
        errno = EINVAL;
        return NULL;
    }
    return cfg;
}

void lapse_config_close(struct lapse_config *cfg)
{
    lapse_config_free(cfg);
    free(cfg);
}
