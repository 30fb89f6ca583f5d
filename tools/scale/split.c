/* split — see split.h: the layout steps (start, finish); moving the IDs
 * and the watch records out of the old shards is split_move.c. */
#include "split.h"
#include "split_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

/* With redis.wait_replicas, waits until that many replicas of r took what
 * was written on it: a layout step that a failover could undo is not done.
 * 0, or -1 with errstr (the step can be run again: split and finish resume). */
static int split_durable(lapse_redis *r, const struct lapse_config *cfg, const char *what,
                         char *errstr, size_t size)
{
    if (lapse_redis_wait(r, cfg->redis_wait_replicas, cfg->redis_wait_timeout_ms) == 0)
        return 0;
    snprintf(errstr, size, "%s: %s (run the command again)", what, lapse_redis_errstr(r));
    return -1;
}

/* Writes `l` as record `which` ("layout" or "layout:next") of the namespace. */
static int split_write(lapse_redis *home, const struct lapse_config *cfg, const char *which,
                       const struct lapse_layout *l, char *errstr, size_t size)
{
    char *nodes = lapse_layout_nodes(cfg, l);
    if (!nodes) {
        snprintf(errstr, size, "out of memory");
        return -1;
    }
    char key[LAPSE_KEY_MAX];
    lapse_key_layout(key, sizeof key, cfg, which);
    redisReply *r = lapse_redis_command(
        home, "HSET %s shards %u prev_shards %u epoch %lld state %s nodes %s", key, l->shards,
        l->prev_shards, (long long)l->epoch, l->splitting ? "splitting" : "stable", nodes);
    free(nodes);
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (!ok)
        snprintf(errstr, size, "%s: writing %s: %s", lapse_redis_name(home), key,
                 r ? r->str : lapse_redis_errstr(home));
    if (r)
        freeReplyObject(r);
    return ok ? split_durable(home, cfg, which, errstr, size) : -1;
}

/* Step 2: raise every shard's epoch key to l->epoch (never lowers it). */
static int split_fence(lapse_redis **nodes, const struct lapse_config *cfg,
                       const struct lapse_layout *l, char *errstr, size_t size)
{
    static const char lua[] =
        "for i = 1, #KEYS do\n"
        "  if tonumber(redis.call('GET', KEYS[i]) or 0) < tonumber(ARGV[1]) then\n"
        "    redis.call('SET', KEYS[i], ARGV[1])\n"
        "  end\n"
        "end\n"
        "return #KEYS\n";
    char epoch[24];
    snprintf(epoch, sizeof epoch, "%lld", (long long)l->epoch);
    /* one call per node; per shard where a node is several servers (a
     * cluster: each shard has its own slot) */
    for (size_t n = 0; n < cfg->nnodes; n++) {
        int one = lapse_redis_one_server(nodes[n]);
        for (uint32_t only = 0; only < (one ? 1 : l->shards); only++) {
            const char **argv = malloc((l->shards + 4) * sizeof *argv);
            size_t *lens = malloc((l->shards + 4) * sizeof *lens);
            char(*keys)[LAPSE_KEY_MAX] = malloc(l->shards * sizeof *keys);
            if (!argv || !lens || !keys) {
                free(argv);
                free(lens);
                free(keys);
                snprintf(errstr, size, "out of memory");
                return -1;
            }
            int argc = 3;
            for (uint32_t s = 0; s < l->shards; s++)
                if (l->node_of[s] == n && (one || s == only)) {
                    lens[argc] = (size_t)lapse_key(keys[s], LAPSE_KEY_MAX, cfg, LAPSE_KEY_EPOCH, s);
                    argv[argc++] = keys[s];
                }
            char nkeys[16];
            snprintf(nkeys, sizeof nkeys, "%d", argc - 3);
            argv[0] = "EVAL", lens[0] = 4;
            argv[1] = lua, lens[1] = strlen(lua);
            argv[2] = nkeys, lens[2] = strlen(nkeys);
            argv[argc] = epoch, lens[argc++] = strlen(epoch);
            redisReply *r = argc > 4 ? lapse_redis_command_argv(nodes[n], argc, argv, lens) : NULL;
            int ok = argc <= 4 || (r && r->type == REDIS_REPLY_INTEGER);
            if (!ok)
                snprintf(errstr, size, "%s: fencing epoch %lld: %s", lapse_redis_name(nodes[n]),
                         (long long)l->epoch, r ? r->str : lapse_redis_errstr(nodes[n]));
            if (r)
                freeReplyObject(r);
            free(argv);
            free(lens);
            free(keys);
            if (!ok || (argc > 4 && split_durable(nodes[n], cfg, "fencing", errstr, size) < 0))
                return -1;
        }
    }
    return 0;
}

/* Steps 2 and 3 for a target layout already written as layout:next. */
static int split_commit(lapse_redis **nodes, const struct lapse_config *cfg,
                        const struct lapse_layout *next, char *errstr, size_t size)
{
    if (split_fence(nodes, cfg, next, errstr, size) < 0)
        return -1;
    static const char lua[] =
        "redis.call('HSET', KEYS[1], unpack(redis.call('HGETALL', KEYS[2])))\n"
        "redis.call('DEL', KEYS[2])\n"
        "redis.call('PUBLISH', KEYS[1], ARGV[1])\n"
        "return 1\n";
    char layout[LAPSE_KEY_MAX], nextkey[LAPSE_KEY_MAX];
    lapse_key_layout(layout, sizeof layout, cfg, "layout");
    lapse_key_layout(nextkey, sizeof nextkey, cfg, "layout:next");
    redisReply *r = lapse_redis_command(nodes[0], "EVAL %s 2 %s %s %lld", lua, layout, nextkey,
                                        (long long)next->epoch);
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (!ok)
        snprintf(errstr, size, "%s: publishing the layout: %s", lapse_redis_name(nodes[0]),
                 r ? r->str : lapse_redis_errstr(nodes[0]));
    if (r)
        freeReplyObject(r);
    return ok ? split_durable(nodes[0], cfg, "publishing the layout", errstr, size) : -1;
}

/* The layout in force; -1 with errstr also when the namespace has none. */
static int split_current(lapse_redis *home, const struct lapse_config *cfg,
                         struct lapse_layout *cur, char *errstr, size_t size)
{
    int rc = lapse_layout_load(home, cfg, cur, errstr, size);
    if (rc == 1)
        snprintf(errstr, size, "namespace \"%s\" is not initialised", cfg->ns);
    return rc == 0 ? 0 : -1;
}

int lapse_split_start(lapse_redis **nodes, const struct lapse_config *cfg, const uint16_t *to,
                      size_t nto, struct lapse_layout *out, char *errstr, size_t size)
{
    struct lapse_layout cur, next;
    memset(out, 0, sizeof *out);
    if (split_current(nodes[0], cfg, &cur, errstr, size) < 0)
        return -1;
    int rc = lapse_layout_read(nodes[0], cfg, "layout:next", &next, errstr, size);
    if (rc < 0)
        goto fail;
    if (rc == 1) { /* a fresh split */
        if (cur.splitting) {
            snprintf(errstr, size,
                     "namespace \"%s\" is already splitting (%u -> %u shards): "
                     "run finish first",
                     cfg->ns, cur.prev_shards, cur.shards);
            goto fail;
        }
        if (cur.shards * 2 > LAPSE_MAX_SHARDS) {
            snprintf(errstr, size, "%u shards is the most lapse supports", LAPSE_MAX_SHARDS);
            goto fail;
        }
        next.shards = cur.shards * 2;
        next.prev_shards = cur.shards;
        next.epoch = cur.epoch + 1;
        next.splitting = 1;
        next.node_of = calloc(next.shards, sizeof *next.node_of);
        if (!next.node_of) {
            snprintf(errstr, size, "out of memory");
            goto fail;
        }
        for (uint32_t i = 0; i < next.shards; i++)
            next.node_of[i] = i < cur.shards ? cur.node_of[i]
                              : nto          ? to[(i - cur.shards) % nto]
                                             : cur.node_of[i - cur.shards];
        if (split_write(nodes[0], cfg, "layout:next", &next, errstr, size) < 0)
            goto fail_next;
    } else if (!next.splitting) {
        snprintf(errstr, size, "an interrupted finish is pending: run finish again");
        goto fail_next;
    }
    /* the new shards of a namespace in small keys start so, before any
     * program learns of them */
    if (cur.small_keys && lapse_layout_small_keys(nodes, cfg, &next, cur.shards, errstr, size) < 0)
        goto fail_next;
    if (split_commit(nodes, cfg, &next, errstr, size) < 0)
        goto fail_next;
    lapse_layout_free(&cur);
    *out = next;
    return 0;
fail_next:
    lapse_layout_free(&next);
fail:
    lapse_layout_free(&cur);
    return -1;
}

int lapse_split_finish(lapse_redis **nodes, const struct lapse_config *cfg, uint64_t *left,
                       struct lapse_layout *out, char *errstr, size_t size)
{
    struct lapse_layout cur;
    *left = 0;
    memset(out, 0, sizeof *out);
    if (split_current(nodes[0], cfg, &cur, errstr, size) < 0)
        return -1;
    struct lapse_layout pending;
    int rc = lapse_layout_read(nodes[0], cfg, "layout:next", &pending, errstr, size);
    if (rc == 0 && !pending.splitting) { /* an interrupted finish: complete it */
        rc = split_commit(nodes, cfg, &pending, errstr, size);
        lapse_layout_free(&cur);
        if (rc == 0)
            *out = pending;
        else
            lapse_layout_free(&pending);
        return rc;
    }
    if (rc == 0)
        lapse_layout_free(&pending);
    if (!cur.splitting) { /* nothing to finish: as init with the same N, not an error */
        *out = cur;
        return 1;
    }
    for (uint32_t i = 0; i < cur.prev_shards; i++) {
        struct lapse_split_left l;
        if (lapse_split_left(nodes, cfg, &cur, i, &l, errstr, size) < 0) {
            lapse_layout_free(&cur);
            return -1;
        }
        *left += l.ids;
    }
    if (*left) {
        snprintf(errstr, size,
                 "%llu IDs in old shards still belong to new shards; "
                 "wait until they fall due or run finish --drain",
                 (unsigned long long)*left);
        lapse_layout_free(&cur);
        return -1;
    }
    for (uint32_t i = 0; i < cur.prev_shards; i++)
        if (split_watch_move(nodes, cfg, &cur, i, errstr, size) < 0) {
            lapse_layout_free(&cur);
            return -1;
        }
    struct lapse_layout next = cur;
    next.prev_shards = cur.shards;
    next.epoch = cur.epoch + 1;
    next.splitting = 0;
    if (split_write(nodes[0], cfg, "layout:next", &next, errstr, size) < 0 ||
        split_commit(nodes, cfg, &next, errstr, size) < 0) {
        lapse_layout_free(&cur);
        return -1;
    }
    /* The split markers served the split only. */
    for (uint32_t j = cur.prev_shards; j < cur.shards; j++)
        split_unmark(nodes[cur.node_of[j]], cfg, j);
    *out = cur; /* node_of moves over */
    out->prev_shards = next.prev_shards;
    out->epoch = next.epoch;
    out->splitting = 0;
    return 0;
}
