/* merge — see merge.h: the merge's start, and what its finish does to the
 * retiring shards (split.c's lapse_split_finish ends both changes). */
#include "merge.h"
#include "split_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bucket.h"

int lapse_merge_start(lapse_redis **nodes, const struct lapse_config *cfg, struct lapse_layout *out,
                      char *errstr, size_t size)
{
    struct lapse_layout cur, next;
    memset(out, 0, sizeof *out);
    if (split_current(nodes[0], cfg, &cur, errstr, size) < 0)
        return -1;
    int rc = lapse_layout_read(nodes[0], cfg, "layout:next", &next, errstr, size);
    if (rc < 0)
        goto fail;
    if (rc == 1) { /* a fresh merge */
        if (split_refuse_changing(cfg, &cur, errstr, size) < 0)
            goto fail;
        if (cur.shards == 1) {
            snprintf(errstr, size, "namespace \"%s\" has one shard: nothing to merge", cfg->ns);
            goto fail;
        }
        next.shards = cur.shards / 2;
        next.prev_shards = cur.shards;
        next.epoch = cur.epoch + 1;
        next.state = LAPSE_LAYOUT_MERGING;
        next.retired = cur.retired;
        next.small_keys = cur.small_keys;
        next.node_of = malloc(cur.shards * sizeof *next.node_of);
        if (!next.node_of) {
            snprintf(errstr, size, "out of memory");
            goto fail;
        }
        memcpy(next.node_of, cur.node_of, cur.shards * sizeof *next.node_of);
        if (split_write(nodes[0], cfg, "layout:next", &next, errstr, size) < 0)
            goto fail_next;
    } else if (split_pending(&next, LAPSE_LAYOUT_MERGING, errstr, size) < 0) {
        goto fail_next;
    }
    if (split_unmark_receivers(nodes, cfg, &next, errstr, size) < 0 ||
        split_commit(nodes, cfg, &next, &cur, errstr, size) < 0)
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

int merge_in_flight(lapse_redis **nodes, const struct lapse_config *cfg,
                    const struct lapse_layout *l, uint64_t *claims, char *errstr, size_t size)
{
    *claims = 0;
    for (uint32_t j = 0; j < lapse_layout_span(l); j++) {
        if (!lapse_layout_gives(l, j))
            continue;
        lapse_redis *r = nodes[l->node_of[j]];
        char f[LAPSE_KEY_MAX];
        lapse_key(f, sizeof f, cfg, LAPSE_KEY_INFLIGHT, j);
        redisReply *rep = lapse_redis_command(r, "HLEN %s", f);
        if (!rep || rep->type != REDIS_REPLY_INTEGER) {
            snprintf(errstr, size, "%s: HLEN %s: %s", lapse_redis_name(r), f,
                     rep && rep->type == REDIS_REPLY_ERROR ? rep->str : lapse_redis_errstr(r));
            if (rep)
                freeReplyObject(rep);
            return -1;
        }
        *claims += (uint64_t)rep->integer;
        freeReplyObject(rep);
    }
    return 0;
}

/* UNLINKs the keys in keys[0..n) on r (one shard's: one slot). */
static int merge_unlink(lapse_redis *r, char (*keys)[LAPSE_KEY_MAX + 16], int n, char *errstr,
                        size_t size)
{
    const char *argv[1 + MERGE_BATCH];
    size_t lens[1 + MERGE_BATCH];
    argv[0] = "UNLINK", lens[0] = 6;
    for (int k = 0; k < n; k++)
        argv[1 + k] = keys[k], lens[1 + k] = strlen(keys[k]);
    redisReply *rep = lapse_redis_command_argv(r, 1 + n, argv, lens);
    int ok = rep && rep->type == REDIS_REPLY_INTEGER;
    if (!ok)
        snprintf(errstr, size, "%s: UNLINK %s ...: %s", lapse_redis_name(r), keys[0],
                 rep && rep->type == REDIS_REPLY_ERROR ? rep->str : lapse_redis_errstr(r));
    if (rep)
        freeReplyObject(rep);
    return ok ? 0 : -1;
}

/* How many small watch hashes shard j's state key v names ("b s c"). */
static uint64_t merge_watch_hashes(lapse_redis *r, const char *v)
{
    redisReply *rep = lapse_redis_command(r, "GET %s", v);
    unsigned b = 0;
    unsigned long s = 0, c = 0;
    uint64_t n = 0;
    if (rep && rep->type == REDIS_REPLY_STRING && sscanf(rep->str, "%u %lu %lu", &b, &s, &c) == 3 &&
        b < 32)
        n = ((uint64_t)1 << b) + s;
    if (rep)
        freeReplyObject(rep);
    return n;
}

/* Removes retiring shard j's keys but its lock (its scanner releases it)
 * and its epoch (the fence that refuses writers of an older layout): every
 * kind of layout.h, each bucket's of a shard in small keys, each small
 * watch hash. Idempotent. */
static int merge_retire_one(lapse_redis **nodes, const struct lapse_config *cfg,
                            const struct lapse_layout *l, uint32_t j, char *errstr, size_t size)
{
    static const enum lapse_key_kind kinds[] = {
        LAPSE_KEY_DUE,     LAPSE_KEY_PAYLOAD, LAPSE_KEY_INFLIGHT, LAPSE_KEY_REPEAT,
        LAPSE_KEY_MOVED,   LAPSE_KEY_LEASE,   LAPSE_KEY_SLEEP,    LAPSE_KEY_BELL,
        LAPSE_KEY_INDEX,   LAPSE_KEY_WATCH,   LAPSE_KEY_OFFLINE,  LAPSE_KEY_WATCH_HASHES,
        LAPSE_KEY_BUCKETS, /* last: the bucket keys are named from it */
    };
    enum { NKINDS = sizeof kinds / sizeof kinds[0] };
    _Static_assert(NKINDS <= MERGE_BATCH, "one call for the shard's own keys");
    lapse_redis *r = nodes[l->node_of[j]];
    char(*keys)[LAPSE_KEY_MAX + 16] = malloc(MERGE_BATCH * sizeof *keys);
    if (!keys) {
        snprintf(errstr, size, "out of memory");
        return -1;
    }
    int rc = 0;
    struct lapse_buckets bk;
    if (split_buckets(r, cfg, j, &bk, errstr, size) < 0) {
        free(keys);
        return -1;
    }
    /* a shard in small keys: each bucket's z, p, r and m */
    static const enum lapse_key_kind per_bucket[] = {LAPSE_KEY_DUE, LAPSE_KEY_PAYLOAD,
                                                     LAPSE_KEY_REPEAT, LAPSE_KEY_MOVED};
    uint64_t count = bk.small ? lapse_buckets_count(&bk) : 0;
    int n = 0;
    for (uint64_t b = 0; rc == 0 && b < count; b++)
        for (size_t k = 0; rc == 0 && k < sizeof per_bucket / sizeof per_bucket[0]; k++) {
            char base[LAPSE_KEY_MAX];
            lapse_key(base, sizeof base, cfg, per_bucket[k], j);
            lapse_bucket_key(keys[n++], sizeof keys[0], &bk, base, (uint32_t)b);
            if (n == MERGE_BATCH) {
                rc = merge_unlink(r, keys, n, errstr, size);
                n = 0;
            }
        }
    /* the index's groups (bucket.h) */
    char x[LAPSE_KEY_MAX];
    lapse_key(x, sizeof x, cfg, LAPSE_KEY_INDEX, j);
    for (uint64_t g = 0; rc == 0 && count && g <= (count - 1) / LAPSE_BUCKET_GROUP; g++) {
        snprintf(keys[n++], sizeof keys[0], "%s:%u", x, (unsigned)g);
        if (n == MERGE_BATCH) {
            rc = merge_unlink(r, keys, n, errstr, size);
            n = 0;
        }
    }
    /* the small watch hashes (lib/bucket.lua: o:wJ) */
    char o[LAPSE_KEY_MAX], v[LAPSE_KEY_MAX];
    lapse_key(o, sizeof o, cfg, LAPSE_KEY_WATCH, j);
    lapse_key(v, sizeof v, cfg, LAPSE_KEY_WATCH_HASHES, j);
    uint64_t hashes = rc == 0 ? merge_watch_hashes(r, v) : 0;
    for (uint64_t w = 0; rc == 0 && w < hashes; w++) {
        int len = snprintf(keys[n++], sizeof keys[0], "%s:w%llu", o, (unsigned long long)w);
        if (len < 0 || (size_t)len >= sizeof keys[0])
            break; /* (cannot happen: LAPSE_KEY_MAX has room for 16 more) */
        if (n == MERGE_BATCH) {
            rc = merge_unlink(r, keys, n, errstr, size);
            n = 0;
        }
    }
    if (rc == 0 && n > 0)
        rc = merge_unlink(r, keys, n, errstr, size);
    /* then the shard's own keys, the state key among them */
    for (n = 0; rc == 0 && n < NKINDS; n++)
        lapse_key(keys[n], sizeof keys[0], cfg, kinds[n], j);
    if (rc == 0)
        rc = merge_unlink(r, keys, NKINDS, errstr, size);
    free(keys);
    return rc;
}

int merge_retire(lapse_redis **nodes, const struct lapse_config *cfg, const struct lapse_layout *l,
                 char *errstr, size_t size)
{
    for (uint32_t j = 0; j < lapse_layout_span(l); j++)
        if (lapse_layout_gives(l, j) && merge_retire_one(nodes, cfg, l, j, errstr, size) < 0)
            return -1;
    return 0;
}

void merge_tidy(lapse_redis **nodes, const struct lapse_config *cfg, const struct lapse_layout *l)
{
    /* a retiring scanner may have written its nap's and claim's marks
     * between merge_retire and the fence: strings nobody reads again */
    static const enum lapse_key_kind kinds[] = {LAPSE_KEY_LEASE, LAPSE_KEY_SLEEP, LAPSE_KEY_BELL};
    for (uint32_t j = 0; j < lapse_layout_span(l); j++) {
        if (!lapse_layout_gives(l, j))
            continue;
        char keys[3][LAPSE_KEY_MAX + 16], err[256];
        for (int k = 0; k < 3; k++)
            lapse_key(keys[k], sizeof keys[k], cfg, kinds[k], j);
        (void)merge_unlink(nodes[l->node_of[j]], keys, 3, err, sizeof err);
    }
}
