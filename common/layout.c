/* layout — see layout.h. */
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "slot.h"

const enum lapse_key_kind lapse_shard_keys[LAPSE_SHARD_NKEYS] = {
    LAPSE_KEY_DUE,   LAPSE_KEY_PAYLOAD, LAPSE_KEY_INFLIGHT, LAPSE_KEY_REPEAT,
    LAPSE_KEY_MOVED, LAPSE_KEY_LOCK,    LAPSE_KEY_EPOCH};

int lapse_key_shard(char *buf, size_t size, const char *ns, enum lapse_key_kind kind,
                    uint32_t shard)
{
    return snprintf(buf, size, "%s:%c:%u", ns, (char)kind, shard);
}

int lapse_key_tagged(char *buf, size_t size, const char *ns, enum lapse_key_kind kind,
                     uint32_t shard)
{
    return snprintf(buf, size, "%s:%c:{%s:%u}", ns, (char)kind, ns, shard);
}

uint16_t lapse_shard_slot(const char *ns, uint32_t shard)
{
    char tag[LAPSE_NS_MAX + 16];
    int len = snprintf(tag, sizeof tag, "%s:%u", ns, shard);
    return lapse_slot(tag, len > 0 && (size_t)len < sizeof tag ? (size_t)len : 0);
}

int lapse_key(char *buf, size_t size, const struct lapse_config *cfg, enum lapse_key_kind kind,
              uint32_t shard)
{
    return cfg->cluster ? lapse_key_tagged(buf, size, cfg->ns, kind, shard)
                        : lapse_key_shard(buf, size, cfg->ns, kind, shard);
}

int lapse_key_layout(char *buf, size_t size, const struct lapse_config *cfg, const char *which)
{
    return cfg->cluster ? snprintf(buf, size, "%s:%s:{%s}", cfg->ns, which, cfg->ns)
                        : snprintf(buf, size, "%s:%s", cfg->ns, which);
}

lapse_redis *lapse_node_open(const struct lapse_config *cfg, size_t index)
{
    char prefix[LAPSE_NS_MAX + 8];
    snprintf(prefix, sizeof prefix, "%s:%c", cfg->ns, (char)LAPSE_KEY_WAIT);
    return lapse_redis_new(cfg, index, prefix);
}

void lapse_layout_free(struct lapse_layout *l)
{
    free(l->node_of);
    memset(l, 0, sizeof *l);
}

/* The config entry whose name (lapse_node_name), or former plain address
 * (`was`), is the len bytes at hostport, or -1. */
static int node_index(const struct lapse_config *cfg, const char *hostport, size_t len)
{
    for (size_t i = 0; i < cfg->nnodes; i++) {
        char name[LAPSE_NODE_NAME_MAX];
        const char *was = cfg->nodes[i].was;
        lapse_node_name(&cfg->nodes[i], name, sizeof name);
        if ((strlen(name) == len && memcmp(name, hostport, len) == 0) ||
            (was && strlen(was) == len && memcmp(was, hostport, len) == 0))
            return (int)i;
    }
    return -1;
}

/* Parses the "nodes" field: one host:port per shard (of the span). */
static int layout_parse_nodes(const struct lapse_config *cfg, const char *s, struct lapse_layout *l,
                              char *errstr, size_t size)
{
    uint32_t span = lapse_layout_span(l);
    l->node_of = calloc(span, sizeof *l->node_of);
    if (!l->node_of) {
        snprintf(errstr, size, "out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < span; i++) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        int idx = node_index(cfg, s, len);
        if (idx < 0) {
            snprintf(errstr, size,
                     "layout of \"%s\": shard %u is on node %.*s, which %s does not list", cfg->ns,
                     i, (int)(len > 200 ? 200 : len), s, cfg->path);
            return -1;
        }
        l->node_of[i] = (uint16_t)idx;
        if (!end && i + 1 < span) {
            snprintf(errstr, size, "layout of \"%s\": nodes lists %u shards, expected %u", cfg->ns,
                     i + 1, span);
            return -1;
        }
        s = end ? end + 1 : s + len;
    }
    return 0;
}

const char *lapse_layout_state_name(enum lapse_layout_state state)
{
    switch (state) {
    case LAPSE_LAYOUT_SPLITTING:
        return "splitting";
    case LAPSE_LAYOUT_MERGING:
        return "merging";
    case LAPSE_LAYOUT_STABLE:
        break;
    }
    return "stable";
}

int lapse_layout_load(lapse_redis *home, const struct lapse_config *cfg, struct lapse_layout *out,
                      char *errstr, size_t size)
{
    return lapse_layout_read(home, cfg, "layout", out, errstr, size);
}

int lapse_layout_read(lapse_redis *home, const struct lapse_config *cfg, const char *which,
                      struct lapse_layout *out, char *errstr, size_t size)
{
    memset(out, 0, sizeof *out);
    char key[LAPSE_NS_MAX * 2 + 32];
    lapse_key_layout(key, sizeof key, cfg, which);
    redisReply *r = lapse_redis_command(
        home, "HMGET %s shards prev_shards epoch state nodes keys retired", key);
    if (!r) {
        snprintf(errstr, size, "%s", lapse_redis_errstr(home));
        return -2;
    }
    int rc = -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 7) {
        snprintf(errstr, size, "redis %s: HMGET %s: %s", lapse_redis_name(home), key,
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        goto out;
    }
    if (r->element[0]->type != REDIS_REPLY_STRING) {
        rc = 1;
        goto out;
    }
    for (int i = 0; i < 5; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING) {
            snprintf(errstr, size, "layout of \"%s\" is incomplete", cfg->ns);
            goto out;
        }
    long shards = strtol(r->element[0]->str, NULL, 10);
    long prev = strtol(r->element[1]->str, NULL, 10);
    if (!lapse_shards_valid(shards) || !lapse_shards_valid(prev)) {
        snprintf(errstr, size, "layout of \"%s\": bad shard count", cfg->ns);
        goto out;
    }
    out->shards = (uint32_t)shards;
    out->prev_shards = (uint32_t)prev;
    out->epoch = strtoll(r->element[2]->str, NULL, 10);
    /* A state this version does not know (a later lapse-scale's) is
     * refused, never read as stable: routing by it could write an ID where
     * its twin still fires. */
    const char *state = r->element[3]->str;
    if (strcmp(state, "stable") == 0 && shards == prev) {
        out->state = LAPSE_LAYOUT_STABLE;
    } else if (strcmp(state, "splitting") == 0 && shards == 2 * prev) {
        out->state = LAPSE_LAYOUT_SPLITTING;
    } else if (strcmp(state, "merging") == 0 && prev == 2 * shards) {
        out->state = LAPSE_LAYOUT_MERGING;
    } else if (strcmp(state, "stable") != 0 && strcmp(state, "splitting") != 0 &&
               strcmp(state, "merging") != 0) {
        snprintf(errstr, size,
                 "layout of \"%s\": state \"%.40s\" is not one this lapse knows (\"stable\", "
                 "\"splitting\", \"merging\"): a newer lapse-scale wrote it; upgrade this program",
                 cfg->ns, state);
        goto out;
    } else {
        snprintf(errstr, size, "layout of \"%s\": state \"%s\" with %ld shards, %ld before",
                 cfg->ns, state, shards, prev);
        goto out;
    }
    out->small_keys =
        r->element[5]->type == REDIS_REPLY_STRING && strcmp(r->element[5]->str, "small") == 0;
    if (r->element[6]->type == REDIS_REPLY_STRING) {
        long retired = strtol(r->element[6]->str, NULL, 10);
        if (retired != 0 && !lapse_shards_valid(retired)) {
            snprintf(errstr, size, "layout of \"%s\": bad retired count", cfg->ns);
            goto out;
        }
        out->retired = (uint32_t)retired;
    }
    if (layout_parse_nodes(cfg, r->element[4]->str, out, errstr, size) < 0) {
        lapse_layout_free(out);
        goto out;
    }
    rc = 0;
out:
    freeReplyObject(r);
    return rc;
}

char *lapse_layout_nodes(const struct lapse_config *cfg, const struct lapse_layout *l)
{
    uint32_t span = lapse_layout_span(l);
    size_t cap = (size_t)span * LAPSE_NODE_NAME_MAX + 1, len = 0;
    char *nodes = malloc(cap);
    if (!nodes)
        return NULL;
    nodes[0] = '\0';
    for (uint32_t i = 0; i < span; i++) {
        char name[LAPSE_NODE_NAME_MAX];
        lapse_node_name(&cfg->nodes[l->node_of[i]], name, sizeof name);
        len += (size_t)snprintf(nodes + len, cap - len, "%s%s", i ? "," : "", name);
    }
    return nodes;
}

/* Creates the record only if absent; returns the shard count it holds. */
static const char layout_init_lua[] =
    "local cur = redis.call('HGET', KEYS[1], 'shards')\n"
    "if cur then\n"
    "    if ARGV[3] == 'convert' then redis.call('HSET', KEYS[1], 'keys', 'small') end\n"
    "    return tonumber(cur)\n"
    "end\n"
    "redis.call('HSET', KEYS[1], 'shards', ARGV[1], 'prev_shards', ARGV[1],\n"
    "           'epoch', 1, 'state', 'stable', 'nodes', ARGV[2])\n"
    "if ARGV[3] ~= 'one' then redis.call('HSET', KEYS[1], 'keys', 'small') end\n"
    "return 0\n";

int lapse_layout_init(lapse_redis *home, const struct lapse_config *cfg, uint32_t shards,
                      enum lapse_init_form form, char *errstr, size_t size)
{
    struct lapse_layout l = {.shards = shards};
    l.node_of = calloc(shards, sizeof *l.node_of);
    char *nodes = NULL;
    if (l.node_of) {
        for (uint32_t i = 0; i < shards; i++)
            l.node_of[i] = (uint16_t)(i % cfg->nnodes);
        nodes = lapse_layout_nodes(cfg, &l);
    }
    lapse_layout_free(&l);
    if (!nodes) {
        snprintf(errstr, size, "out of memory");
        return -1;
    }
    char key[LAPSE_NS_MAX * 2 + 32];
    lapse_key_layout(key, sizeof key, cfg, "layout");
    redisReply *r = lapse_redis_command(home, "EVAL %s 1 %s %u %s %s", layout_init_lua, key, shards,
                                        nodes, form == LAPSE_INIT_CONVERT ? "convert" : "one");
    free(nodes);
    if (!r) {
        snprintf(errstr, size, "%s", lapse_redis_errstr(home));
        return -1;
    }
    int rc = -1;
    if (r->type != REDIS_REPLY_INTEGER)
        snprintf(errstr, size, "redis %s: layout init: %s", lapse_redis_name(home),
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    else if (r->integer == 0 &&
             lapse_redis_wait(home, cfg->redis_wait_replicas, cfg->redis_wait_timeout_ms) < 0)
        snprintf(errstr, size, "%s (run init again)", lapse_redis_errstr(home));
    else if (r->integer == 0)
        rc = 0;
    else if (r->integer == (long long)shards)
        rc = 1;
    else
        snprintf(errstr, size, "namespace \"%s\" is already initialised with %lld shards", cfg->ns,
                 r->integer);
    freeReplyObject(r);
    return rc;
}

/* A shard without a state key gets one (bucket.h): 2^b buckets for the
 * IDs its one zset holds, 48 a bucket (a fresh shard: 1), with the flags of
 * the hashes it holds; the programs then move its old keys into buckets
 * (lib/bucket.lua, bk_promote). */
static const char small_keys_lua[] =
    "if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end\n"
    "local n, b = redis.call('ZCARD', KEYS[1]), 0\n"
    "while 2 ^ b * 48 < n and b < 24 do b = b + 1 end\n"
    "local fl = ''\n"
    "if redis.call('EXISTS', KEYS[2]) == 1 then fl = fl .. 'p' end\n"
    "if redis.call('EXISTS', KEYS[3]) == 1 then fl = fl .. 'r' end\n"
    "if redis.call('EXISTS', KEYS[5], KEYS[6]) > 0 then fl = fl .. 'o' end\n"
    "redis.call('SET', KEYS[4], b .. ' 0' .. (fl ~= '' and ' ' .. fl or ''))\n"
    "return 1\n";

int lapse_layout_small_keys(lapse_redis **nodes, const struct lapse_config *cfg,
                            const struct lapse_layout *l, uint32_t from, char *errstr, size_t size)
{
    for (uint32_t s = from; s < lapse_layout_span(l); s++) {
        lapse_redis *r = nodes[l->node_of[s]];
        char z[LAPSE_KEY_MAX], p[LAPSE_KEY_MAX], rk[LAPSE_KEY_MAX], k[LAPSE_KEY_MAX],
            o[LAPSE_KEY_MAX], v[LAPSE_KEY_MAX];
        lapse_key(z, sizeof z, cfg, LAPSE_KEY_DUE, s);
        lapse_key(p, sizeof p, cfg, LAPSE_KEY_PAYLOAD, s);
        lapse_key(rk, sizeof rk, cfg, LAPSE_KEY_REPEAT, s);
        lapse_key(k, sizeof k, cfg, LAPSE_KEY_BUCKETS, s);
        lapse_key(o, sizeof o, cfg, LAPSE_KEY_WATCH, s);
        lapse_key(v, sizeof v, cfg, LAPSE_KEY_WATCH_HASHES, s);
        redisReply *rep = lapse_redis_command(r, "EVAL %s 6 %s %s %s %s %s %s", small_keys_lua, z,
                                              p, rk, k, o, v);
        int ok = rep && rep->type == REDIS_REPLY_INTEGER;
        if (!ok)
            snprintf(errstr, size, "%s: shard %u in small keys: %s", lapse_redis_name(r), s,
                     rep ? rep->str : lapse_redis_errstr(r));
        if (rep)
            freeReplyObject(rep);
        if (!ok)
            return -1;
        if (lapse_redis_wait(r, cfg->redis_wait_replicas, cfg->redis_wait_timeout_ms) < 0) {
            snprintf(errstr, size, "%s", lapse_redis_errstr(r));
            return -1;
        }
    }
    return 0;
}
