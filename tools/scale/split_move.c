/* split_move — the IDs and watch records of a split that are still in their
 * old shards: counted (lapse_split_left), moved by the drain
 * (lapse_split_drain), and the rest of the watch records and the split's
 * markers at the finish (split_priv.h). */
#include "split.h"
#include "split_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hash.h"

#define SCAN_COUNT 1000

struct shard_keys {
    char name[LAPSE_SHARD_NKEYS][LAPSE_KEY_MAX];
    const char *argv[LAPSE_SHARD_NKEYS];
    size_t len[LAPSE_SHARD_NKEYS];
};

static void shard_keys(const struct lapse_config *cfg, uint32_t shard, struct shard_keys *k)
{
    for (int i = 0; i < LAPSE_SHARD_NKEYS; i++) {
        k->len[i] = (size_t)lapse_key(k->name[i], LAPSE_KEY_MAX, cfg, lapse_shard_keys[i], shard);
        k->argv[i] = k->name[i];
    }
}

/* ZSCANs zset `key` on r, calling fn for each moving ID (split_walk). */
static int split_scan(lapse_redis *r, const char *key, const struct lapse_layout *l,
                      int (*fn)(void *ctx, const char *id, size_t len, double score), void *ctx,
                      char *errstr, size_t size)
{
    char cursor[32] = "0";
    do {
        redisReply *rep = lapse_redis_command(r, "ZSCAN %s %s COUNT %d", key, cursor, SCAN_COUNT);
        if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
            snprintf(errstr, size, "%s: ZSCAN %s: %s", lapse_redis_name(r), key,
                     rep && rep->type == REDIS_REPLY_ERROR ? rep->str : lapse_redis_errstr(r));
            if (rep)
                freeReplyObject(rep);
            return -1;
        }
        snprintf(cursor, sizeof cursor, "%s", rep->element[0]->str);
        const redisReply *items = rep->element[1];
        for (size_t i = 0; i + 1 < items->elements; i += 2) {
            const redisReply *id = items->element[i];
            if (!lapse_layout_moves(l, lapse_hash(id->str, id->len)))
                continue;
            if (fn(ctx, id->str, id->len, strtod(items->element[i + 1]->str, NULL)) < 0) {
                freeReplyObject(rep);
                snprintf(errstr, size, "out of memory");
                return -1;
            }
        }
        freeReplyObject(rep);
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

/* The form of shard `shard` on r (bucket.h): its state key read. 0, or -1
 * with errstr. */
int split_buckets(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard,
                  struct lapse_buckets *bk, char *errstr, size_t size)
{
    char k[LAPSE_KEY_MAX];
    lapse_key(k, sizeof k, cfg, LAPSE_KEY_BUCKETS, shard);
    redisReply *rep = lapse_redis_command(r, "GET %s", k);
    int ok = rep && (rep->type == REDIS_REPLY_NIL ||
                     (rep->type == REDIS_REPLY_STRING && lapse_buckets_parse(rep->str, bk) == 0));
    if (ok && rep->type == REDIS_REPLY_NIL)
        lapse_buckets_parse(NULL, bk);
    if (!ok)
        snprintf(errstr, size, "%s: GET %s: %s", lapse_redis_name(r), k,
                 !rep                             ? lapse_redis_errstr(r)
                 : rep->type == REDIS_REPLY_ERROR ? rep->str
                                                  : "not a shard state (\"b s\" [flags])");
    if (rep)
        freeReplyObject(rep);
    return ok ? 0 : -1;
}

/*
 * Walks old shard `shard` (ZSCAN) and calls fn for each moving ID, with its
 * score. fn returns 0 to go on, -1 to stop with an error.
 *
 * A shard in small keys (bucket.h) is walked bucket by bucket. A bucket
 * split while the walk runs moves IDs from bucket s to s + 2^b, which is
 * past every bucket the walk knew of: the state is read again after the
 * last one, and the buckets added since walked too, until none was. So no
 * ID is missed; one moved from a bucket walked already can come twice (a
 * count a little high; a move of an ID moved already does nothing).
 */
static int split_walk(lapse_redis **nodes, const struct lapse_config *cfg,
                      const struct lapse_layout *l, uint32_t shard,
                      int (*fn)(void *ctx, const char *id, size_t len, double score), void *ctx,
                      char *errstr, size_t size)
{
    lapse_redis *r = nodes[l->node_of[shard]];
    char z[LAPSE_KEY_MAX], key[LAPSE_KEY_MAX + 16];
    lapse_key(z, sizeof z, cfg, LAPSE_KEY_DUE, shard);
    struct lapse_buckets bk;
    if (split_buckets(r, cfg, shard, &bk, errstr, size) < 0)
        return -1;
    if (!bk.small)
        return split_scan(r, z, l, fn, ctx, errstr, size);
    uint64_t from = 0, to = lapse_buckets_count(&bk);
    while (from < to) {
        for (uint64_t j = from; j < to; j++) {
            lapse_bucket_key(key, sizeof key, &bk, z, (uint32_t)j);
            if (split_scan(r, key, l, fn, ctx, errstr, size) < 0)
                return -1;
        }
        if (split_buckets(r, cfg, shard, &bk, errstr, size) < 0)
            return -1;
        from = to;
        to = lapse_buckets_count(&bk); /* (1 if the state key went: nothing more) */
    }
    /* a shard converted from one zset may still hold IDs in it (bucket.h);
     * (a missing key scans as empty) */
    return split_scan(r, z, l, fn, ctx, errstr, size);
}

static int count_one(void *ctx, const char *id, size_t len, double score)
{
    (void)id, (void)len;
    struct lapse_split_left *left = ctx;
    left->ids++;
    if ((int64_t)score > left->last_due_ms)
        left->last_due_ms = (int64_t)score;
    return 0;
}

int lapse_split_left(lapse_redis **nodes, const struct lapse_config *cfg,
                     const struct lapse_layout *l, uint32_t shard, struct lapse_split_left *out,
                     char *errstr, size_t size)
{
    out->ids = 0;
    out->last_due_ms = -1;
    if (!lapse_layout_gives(l, shard))
        return 0;
    return split_walk(nodes, cfg, l, shard, count_one, out, errstr, size);
}

/* The IDs collected from one old shard, in chunks for take/seed/drop. */
struct id_list {
    char **ids;
    size_t *lens;
    size_t n, cap;
};

static int collect_one(void *ctx, const char *id, size_t len, double score)
{
    (void)score;
    struct id_list *list = ctx;
    if (list->n == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 1024;
        char **ids = realloc(list->ids, cap * sizeof *ids);
        if (!ids)
            return -1;
        list->ids = ids;
        size_t *lens = realloc(list->lens, cap * sizeof *lens);
        if (!lens)
            return -1;
        list->lens = lens;
        list->cap = cap;
    }
    if (!(list->ids[list->n] = malloc(len ? len : 1)))
        return -1;
    memcpy(list->ids[list->n], id, len);
    list->lens[list->n++] = len;
    return 0;
}

static void list_free(struct id_list *list)
{
    for (size_t i = 0; i < list->n; i++)
        free(list->ids[i]);
    free(list->ids);
    free(list->lens);
    memset(list, 0, sizeof *list);
}

/* Runs one shard script; the reply or NULL with errstr. */
static redisReply *split_eval(lapse_redis *r, enum lapse_script s, const struct shard_keys *k,
                              const char **args, const size_t *lens, int nargs, char *errstr,
                              size_t size)
{
    const char **argv = malloc((size_t)(LAPSE_SHARD_NKEYS + nargs) * sizeof *argv);
    size_t *argvlen = malloc((size_t)(LAPSE_SHARD_NKEYS + nargs) * sizeof *argvlen);
    redisReply *rep = NULL;
    if (argv && argvlen) {
        memcpy(argv, k->argv, sizeof k->argv);
        memcpy(argvlen, k->len, sizeof k->len);
        memcpy(argv + LAPSE_SHARD_NKEYS, args, (size_t)nargs * sizeof *args);
        memcpy(argvlen + LAPSE_SHARD_NKEYS, lens, (size_t)nargs * sizeof *lens);
        rep = lapse_redis_eval(r, s, LAPSE_SHARD_NKEYS, LAPSE_SHARD_NKEYS + nargs, argv, argvlen);
    }
    free(argv);
    free(argvlen);
    if (!rep || rep->type == REDIS_REPLY_ERROR) {
        snprintf(errstr, size, "%s: %s", lapse_redis_name(r),
                 rep ? rep->str : lapse_redis_errstr(r));
        if (rep)
            freeReplyObject(rep);
        return NULL;
    }
    return rep;
}

/* Deletes shard j's moved-ID markers: its one set, and those of its
 * buckets in small keys (bucket.h), a batch of keys a call. 0, or -1 with
 * errstr. */
static int split_unmark(lapse_redis *r, const struct lapse_config *cfg, uint32_t j, char *errstr,
                        size_t size)
{
    enum { BATCH = 256 };
    char m[LAPSE_KEY_MAX];
    lapse_key(m, sizeof m, cfg, LAPSE_KEY_MOVED, j);
    /* UNLINK: a set of every ID moved during the change (hundreds of
     * thousands after a drain) is freed by Redis in the background; a DEL
     * of one blocked the node for 30-70 ms (make bench-merge) */
    redisReply *rep = lapse_redis_command(r, "UNLINK %s", m);
    int ok = rep && rep->type == REDIS_REPLY_INTEGER;
    if (rep)
        freeReplyObject(rep);
    struct lapse_buckets bk;
    if (!ok || split_buckets(r, cfg, j, &bk, errstr, size) < 0) {
        if (!ok)
            snprintf(errstr, size, "%s: UNLINK %s: %s", lapse_redis_name(r), m,
                     lapse_redis_errstr(r));
        return -1;
    }
    if (!bk.small)
        return 0;
    char(*keys)[LAPSE_KEY_MAX + 16] = malloc(BATCH * sizeof *keys);
    if (!keys) {
        snprintf(errstr, size, "out of memory");
        return -1;
    }
    const char *argv[BATCH + 1];
    size_t lens[BATCH + 1];
    uint64_t count = lapse_buckets_count(&bk);
    for (uint64_t from = 0; ok && from < count; from += BATCH) {
        int argc = 1;
        argv[0] = "UNLINK", lens[0] = 6;
        for (uint64_t b = from; b < count && b < from + BATCH; b++) {
            lens[argc] =
                (size_t)lapse_bucket_key(keys[argc - 1], sizeof keys[0], &bk, m, (uint32_t)b);
            argv[argc] = keys[argc - 1];
            argc++;
        }
        rep = lapse_redis_command_argv(r, argc, argv, lens);
        ok = rep && rep->type == REDIS_REPLY_INTEGER;
        if (!ok)
            snprintf(errstr, size, "%s: UNLINK %s...: %s", lapse_redis_name(r), keys[0],
                     rep && rep->type == REDIS_REPLY_ERROR ? rep->str : lapse_redis_errstr(r));
        if (rep)
            freeReplyObject(rep);
    }
    free(keys);
    return ok ? 0 : -1;
}

int split_unmark_receivers(lapse_redis **nodes, const struct lapse_config *cfg,
                           const struct lapse_layout *l, char *errstr, size_t size)
{
    for (uint32_t j = 0; j < lapse_layout_span(l); j++)
        if (lapse_layout_receives(l, j) &&
            split_unmark(nodes[l->node_of[j]], cfg, j, errstr, size) < 0)
            return -1;
    return 0;
}

/*
 * Moves up to MOVE_CHUNK IDs of old shard i into new shard j: take them,
 * seed the taken ones into j, drop them from i. Returns how many moved, or
 * -1 with errstr; *busy counts the ones in flight (left for later).
 */
static long split_move(lapse_redis **nodes, const struct lapse_config *cfg,
                       const struct lapse_layout *l, uint32_t i, char **ids, size_t *lens, size_t n,
                       size_t *busy, char *errstr, size_t size)
{
    struct shard_keys ki, kj;
    shard_keys(cfg, i, &ki);
    uint32_t j = lapse_layout_pair(l, i);
    shard_keys(cfg, j, &kj);
    lapse_redis *ri = nodes[l->node_of[i]], *rj = nodes[l->node_of[j]];
    char epoch[24], lease[24];
    snprintf(epoch, sizeof epoch, "%lld", (long long)l->epoch);
    snprintf(lease, sizeof lease, "%d", cfg->scanner_lease_ms);
    const char *args[2 + 5 * MOVE_CHUNK];
    size_t alen[2 + 5 * MOVE_CHUNK];
    lapse_take_head(args, alen, 0, epoch, lease);
    for (size_t k = 0; k < n; k++)
        args[2 + k] = ids[k], alen[2 + k] = lens[k];
    redisReply *took =
        split_eval(ri, LAPSE_SCRIPT_TAKE, &ki, args, alen, (int)(2 + n), errstr, size);
    if (!took)
        return -1;
    if (lapse_take_check(took, n) < 0) {
        snprintf(errstr, size, "%s: take: unexpected reply", lapse_redis_name(ri));
        freeReplyObject(took);
        return -1;
    }
    /* seed: id, deadline, has_payload, payload, repeat for each taken twin */
    char(*dl)[32] = malloc(n * sizeof *dl);
    const char *drop[2 * MOVE_CHUNK];
    size_t dlen[2 * MOVE_CHUNK];
    int seeds = 1, drops = 0;
    long moved = -1;
    if (!dl) {
        snprintf(errstr, size, "out of memory");
        goto out;
    }
    const redisReply *held = lapse_take_lease(took); /* the taken twins' lease */
    for (size_t k = 0; k < n; k++) {
        struct lapse_twin t;
        lapse_take_twin(took, k, &t);
        if (t.state == LAPSE_TAKE_BUSY)
            (*busy)++;
        if (t.state != LAPSE_TAKE_TAKEN)
            continue;
        t.id = ids[k], t.id_len = lens[k];
        seeds = lapse_seed_twin(args, alen, seeds, &t, dl[k]);
        drops = lapse_drop_taken(drop, dlen, drops, ids[k], lens[k], held->str, held->len);
    }
    moved = drops / 2;
    if (drops) {
        redisReply *r = split_eval(rj, LAPSE_SCRIPT_SEED, &kj, args, alen, seeds, errstr, size);
        if (!r) {
            moved = -1; /* the taken twins' leases run out: i's scanner handles them */
            goto out;
        }
        freeReplyObject(r);
        if ((r = split_eval(ri, LAPSE_SCRIPT_DROP, &ki, drop, dlen, drops, errstr, size)))
            freeReplyObject(r);
    }
out:
    free(dl);
    freeReplyObject(took);
    return moved;
}

int lapse_split_drain(lapse_redis **nodes, const struct lapse_config *cfg,
                      const struct lapse_layout *l, int rate, int timeout_ms, uint64_t *moved,
                      char *errstr, size_t size)
{
    *moved = 0;
    if (!lapse_layout_changing(l))
        return 0;
    int64_t start = lapse_clock_mono_ms(), until = start + timeout_ms;
    for (;;) {
        size_t busy = 0, found = 0;
        for (uint32_t i = 0; i < lapse_layout_span(l); i++) {
            if (!lapse_layout_gives(l, i))
                continue;
            struct id_list list = {0};
            if (split_walk(nodes, cfg, l, i, collect_one, &list, errstr, size) < 0) {
                list_free(&list);
                return -1;
            }
            found += list.n;
            for (size_t k = 0; k < list.n; k += MOVE_CHUNK) {
                size_t n = list.n - k < MOVE_CHUNK ? list.n - k : MOVE_CHUNK;
                long m = split_move(nodes, cfg, l, i, list.ids + k, list.lens + k, n, &busy, errstr,
                                    size);
                if (m < 0) {
                    list_free(&list);
                    return -1;
                }
                *moved += (uint64_t)m;
                /* rate limit: never ahead of rate IDs per second */
                int64_t due = start + (int64_t)(*moved * 1000 / (uint64_t)(rate > 0 ? rate : 1));
                int64_t now = lapse_clock_mono_ms();
                if (due > now)
                    lapse_clock_sleep_ms((int)(due - now));
            }
            list_free(&list);
        }
        if (found == 0)
            return 0;
        if (lapse_clock_mono_ms() >= until) {
            snprintf(errstr, size, "%zu IDs still in flight in old shards after %d ms", busy,
                     timeout_ms);
            return -1;
        }
        if (busy)
            lapse_clock_sleep_ms(100); /* in flight: settled within a Kafka round trip */
    }
}

/* common/lua/watchmove.lua (embedded, lib/watch.lua pasted in). */
extern const char lapse_lua_watchmove[];

/* Runs watchmove.lua on shard `shard` (KEYS its z and e) with args. */
static redisReply *split_watch_call(lapse_redis **nodes, const struct lapse_config *cfg,
                                    const struct lapse_layout *l, uint32_t shard, int nargs,
                                    const char **args, const size_t *lens)
{
    char z[LAPSE_KEY_MAX], e[LAPSE_KEY_MAX];
    lapse_key(z, sizeof z, cfg, LAPSE_KEY_DUE, shard);
    lapse_key(e, sizeof e, cfg, LAPSE_KEY_EPOCH, shard);
    const char *argv[5 + 2 * MOVE_CHUNK + 1] = {"EVAL", lapse_lua_watchmove, "2", z, e};
    size_t argvlen[5 + 2 * MOVE_CHUNK + 1];
    for (int k = 0; k < 5; k++)
        argvlen[k] = strlen(argv[k]);
    for (int k = 0; k < nargs; k++)
        argv[5 + k] = args[k], argvlen[5 + k] = lens[k];
    return lapse_redis_command_slot(nodes[l->node_of[shard]], lapse_shard_slot(cfg->ns, shard),
                                    5 + nargs, argv, argvlen);
}

/*
 * The watch records (lib/watch.lua) of old shard `shard` whose IDs belong
 * to its new twin now: written there (where the new shard has none: a
 * write during the split brought it already), then deleted here, a page
 * at a time. A write of such an ID during the split moved its record
 * itself (apply.lua, a split on one node); this moves the rest, so an ID
 * that is offline in its old shard still comes back in its new one.
 * 0, or -1 with errstr.
 */
int split_watch_move(lapse_redis **nodes, const struct lapse_config *cfg,
                     const struct lapse_layout *l, uint32_t shard, char *errstr, size_t size)
{
    char cursor[32] = "0", count[16];
    snprintf(count, sizeof count, "%d", MOVE_CHUNK);
    do {
        const char *la[] = {"list", cursor, count};
        size_t ll[] = {4, strlen(cursor), strlen(count)};
        redisReply *rep = split_watch_call(nodes, cfg, l, shard, 3, la, ll);
        int ok = rep && rep->type == REDIS_REPLY_ARRAY && rep->elements % 2 == 1 &&
                 rep->element[0]->type == REDIS_REPLY_STRING &&
                 rep->element[0]->len < sizeof cursor;
        for (size_t i = 1; ok && i < rep->elements; i++)
            ok = rep->element[i]->type == REDIS_REPLY_STRING;
        if (!ok) {
            snprintf(errstr, size, "shard %u: watch records: %s", shard,
                     rep && rep->type == REDIS_REPLY_ERROR ? rep->str
                     : rep                                 ? "unexpected reply"
                           : lapse_redis_errstr(nodes[l->node_of[shard]]));
            if (rep)
                freeReplyObject(rep);
            return -1;
        }
        snprintf(cursor, sizeof cursor, "%s", rep->element[0]->str);
        /* the moving ones: "put" id, record, ... on the new shard, then
         * "del" id, record, ... here (each only if still as listed),
         * MOVE_CHUNK at a time */
        for (size_t i = 1; ok && i + 1 < rep->elements;) {
            const char *put[1 + 2 * MOVE_CHUNK], *del[1 + 2 * MOVE_CHUNK];
            size_t putl[1 + 2 * MOVE_CHUNK], dell[1 + 2 * MOVE_CHUNK];
            int np = 1, nd = 1;
            put[0] = "put", putl[0] = 3, del[0] = "del", dell[0] = 3;
            for (; i + 1 < rep->elements && nd <= 2 * MOVE_CHUNK; i += 2) {
                const redisReply *id = rep->element[i], *rec = rep->element[i + 1];
                if (!lapse_layout_moves(l, lapse_hash(id->str, id->len)))
                    continue;
                put[np] = id->str, putl[np++] = id->len;
                put[np] = rec->str, putl[np++] = rec->len;
                del[nd] = id->str, dell[nd++] = id->len;
                del[nd] = rec->str, dell[nd++] = rec->len;
            }
            if (nd == 1)
                continue;
            uint32_t to = lapse_layout_pair(l, shard);
            redisReply *a = split_watch_call(nodes, cfg, l, to, np, put, putl);
            redisReply *b = a && a->type == REDIS_REPLY_INTEGER
                                ? split_watch_call(nodes, cfg, l, shard, nd, del, dell)
                                : NULL;
            ok = b && b->type == REDIS_REPLY_INTEGER;
            if (!ok)
                snprintf(errstr, size, "shard %u: moving watch records to shard %u: %s", shard, to,
                         (b && b->type == REDIS_REPLY_ERROR)   ? b->str
                         : (a && a->type == REDIS_REPLY_ERROR) ? a->str
                                                               : "no reply");
            if (a)
                freeReplyObject(a);
            if (b)
                freeReplyObject(b);
        }
        freeReplyObject(rep);
        if (!ok)
            return -1;
    } while (strcmp(cursor, "0") != 0);
    return 0;
}
