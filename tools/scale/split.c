/* split — see split.h: the layout steps (start, finish); moving the IDs
 * and the watch records out of the old shards is split_move.c. */
#include "split.h"
#include "split_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
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
int split_write(lapse_redis *home, const struct lapse_config *cfg, const char *which,
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
        home, "HSET %s shards %u prev_shards %u epoch %lld state %s nodes %s retired %u", key,
        l->shards, l->prev_shards, (long long)l->epoch, lapse_layout_state_name(l->state), nodes,
        l->retired);
    free(nodes);
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (!ok)
        snprintf(errstr, size, "%s: writing %s: %s", lapse_redis_name(home), key,
                 r ? r->str : lapse_redis_errstr(home));
    if (r)
        freeReplyObject(r);
    return ok ? split_durable(home, cfg, which, errstr, size) : -1;
}

/* Step 2: raise the epoch key of every shard of `l` and of `cur` (a merge's
 * retired shards are in cur only) to l->epoch (never lowers it). */
static int split_fence(lapse_redis **nodes, const struct lapse_config *cfg,
                       const struct lapse_layout *l, const struct lapse_layout *cur, char *errstr,
                       size_t size)
{
    uint32_t span = lapse_layout_span(l), all = span;
    if (cur && lapse_layout_span(cur) > all)
        all = lapse_layout_span(cur);
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
        for (uint32_t only = 0; only < (one ? 1 : all); only++) {
            const char **argv = malloc((all + 4) * sizeof *argv);
            size_t *lens = malloc((all + 4) * sizeof *lens);
            char(*keys)[LAPSE_KEY_MAX] = malloc(all * sizeof *keys);
            if (!argv || !lens || !keys) {
                free(argv);
                free(lens);
                free(keys);
                snprintf(errstr, size, "out of memory");
                return -1;
            }
            int argc = 3;
            for (uint32_t s = 0; s < all; s++)
                if ((s < span ? l->node_of[s] : cur->node_of[s]) == n && (one || s == only)) {
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

/* Steps 2 and 3 for a target layout already written as layout:next; `cur`
 * is the layout in force (its shards are fenced too). */
int split_commit(lapse_redis **nodes, const struct lapse_config *cfg,
                 const struct lapse_layout *next, const struct lapse_layout *cur, char *errstr,
                 size_t size)
{
    if (split_fence(nodes, cfg, next, cur, errstr, size) < 0)
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
int split_current(lapse_redis *home, const struct lapse_config *cfg, struct lapse_layout *cur,
                  char *errstr, size_t size)
{
    int rc = lapse_layout_load(home, cfg, cur, errstr, size);
    if (rc == 1)
        snprintf(errstr, size, "namespace \"%s\" is not initialised", cfg->ns);
    return rc == 0 ? 0 : -1;
}

/* What a layout change pending in layout:next (written, not published)
 * asks of whoever finds it, when it is not what they are doing: 0 when
 * `next` is `want`'s own (resume it), else -1 with errstr. */
int split_pending(const struct lapse_layout *next, enum lapse_layout_state want, char *errstr,
                  size_t size)
{
    if (next->state == want)
        return 0;
    if (next->state == LAPSE_LAYOUT_SPLITTING)
        snprintf(errstr, size, "an interrupted split is pending: run split again, then finish");
    else if (next->state == LAPSE_LAYOUT_MERGING)
        snprintf(errstr, size, "an interrupted merge is pending: run merge again, then finish");
    else
        snprintf(errstr, size, "an interrupted finish is pending: run finish again");
    return -1;
}

/* A split or a merge under way refuses another change: 0, or -1 with errstr. */
int split_refuse_changing(const struct lapse_config *cfg, const struct lapse_layout *cur,
                          char *errstr, size_t size)
{
    if (!lapse_layout_changing(cur))
        return 0;
    snprintf(errstr, size, "namespace \"%s\" is already %s (%u -> %u shards): run finish first",
             cfg->ns, lapse_layout_state_name(cur->state), cur->prev_shards, cur->shards);
    return -1;
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
        if (split_refuse_changing(cfg, &cur, errstr, size) < 0)
            goto fail;
        if (cur.shards * 2 > LAPSE_MAX_SHARDS) {
            snprintf(errstr, size, "%u shards is the most lapse supports", LAPSE_MAX_SHARDS);
            goto fail;
        }
        next.shards = cur.shards * 2;
        next.prev_shards = cur.shards;
        next.epoch = cur.epoch + 1;
        next.state = LAPSE_LAYOUT_SPLITTING;
        next.retired = cur.retired;
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
    } else if (split_pending(&next, LAPSE_LAYOUT_SPLITTING, errstr, size) < 0) {
        goto fail_next;
    }
    /* the new shards of a namespace in small keys start so, before any
     * program learns of them */
    if (cur.small_keys && lapse_layout_small_keys(nodes, cfg, &next, cur.shards, errstr, size) < 0)
        goto fail_next;
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

/* Whether the shards giving IDs away in `cur` still hold any (*left), or,
 * in a merge, claims in flight; 0, or -1 with errstr (the reason to wait).
 * Claims of running scanners settle within a Kafka round trip: those are
 * waited for, up to scanner.lease_ms (a finish run right after a drain
 * would otherwise meet the last few); a dead scanner's are not settled
 * until one runs again, so the refusal names them. */
static int split_all_moved(lapse_redis **nodes, const struct lapse_config *cfg,
                           const struct lapse_layout *cur, uint64_t *left, char *errstr,
                           size_t size)
{
    int64_t until = lapse_clock_mono_ms() + cfg->scanner_lease_ms;
again:
    *left = 0;
    for (uint32_t i = 0; i < lapse_layout_span(cur); i++) {
        struct lapse_split_left l;
        if (lapse_split_left(nodes, cfg, cur, i, &l, errstr, size) < 0)
            return -1;
        *left += l.ids;
    }
    if (*left && cur->state == LAPSE_LAYOUT_MERGING) {
        snprintf(errstr, size,
                 "%llu IDs are still in the retiring shards; wait until they fall due or run "
                 "finish --drain",
                 (unsigned long long)*left);
        return -1;
    }
    if (*left) {
        snprintf(errstr, size,
                 "%llu IDs in old shards still belong to new shards; "
                 "wait until they fall due or run finish --drain",
                 (unsigned long long)*left);
        return -1;
    }
    uint64_t claims = 0;
    if (cur->state == LAPSE_LAYOUT_MERGING &&
        merge_in_flight(nodes, cfg, cur, &claims, errstr, size) < 0)
        return -1;
    if (claims && lapse_clock_mono_ms() < until) {
        lapse_clock_sleep_ms(100);
        goto again;
    }
    if (claims) {
        snprintf(errstr, size,
                 "%llu claims of the retiring shards are still in flight: their scanners settle "
                 "them (keep them running; within scanner.lease_ms once Kafka answers)",
                 (unsigned long long)claims);
        return -1;
    }
    return 0;
}

/* After the stable layout is published: what served the change only. */
static void split_tidy(lapse_redis **nodes, const struct lapse_config *cfg,
                       const struct lapse_layout *was)
{
    char err[256];
    (void)split_unmark_receivers(nodes, cfg, was, err, sizeof err); /* best effort */
    if (was->state == LAPSE_LAYOUT_MERGING)
        merge_tidy(nodes, cfg, was);
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
    if (rc == 0 && !lapse_layout_changing(&pending)) { /* an interrupted finish: complete it */
        if (lapse_layout_changing(&cur) &&
            (rc = split_all_moved(nodes, cfg, &cur, left, errstr, size)) == 0 &&
            cur.state == LAPSE_LAYOUT_MERGING)
            rc = merge_retire(nodes, cfg, &cur, errstr, size);
        if (rc == 0)
            rc = split_commit(nodes, cfg, &pending, &cur, errstr, size);
        if (rc == 0 && lapse_layout_changing(&cur))
            split_tidy(nodes, cfg, &cur);
        lapse_layout_free(&cur);
        if (rc == 0)
            *out = pending;
        else
            lapse_layout_free(&pending);
        return rc;
    }
    if (rc == 0)
        lapse_layout_free(&pending);
    if (!lapse_layout_changing(
            &cur)) { /* nothing to finish: as init with the same N, not an error */
        *out = cur;
        return 1;
    }
    if (split_all_moved(nodes, cfg, &cur, left, errstr, size) < 0) {
        lapse_layout_free(&cur);
        return -1;
    }
    for (uint32_t i = 0; i < lapse_layout_span(&cur); i++)
        if (lapse_layout_gives(&cur, i) &&
            split_watch_move(nodes, cfg, &cur, i, errstr, size) < 0) {
            lapse_layout_free(&cur);
            return -1;
        }
    struct lapse_layout next = cur;
    next.prev_shards = cur.shards;
    next.epoch = cur.epoch + 1;
    next.state = LAPSE_LAYOUT_STABLE;
    if (cur.state == LAPSE_LAYOUT_MERGING && cur.prev_shards > next.retired)
        next.retired = cur.prev_shards;
    /* the retiring shards' keys go before the publish, while the layout
     * still names their nodes: nothing lives in them any more (above), and
     * nothing can come back (every writer routes their IDs away) */
    if (split_write(nodes[0], cfg, "layout:next", &next, errstr, size) < 0 ||
        (cur.state == LAPSE_LAYOUT_MERGING && merge_retire(nodes, cfg, &cur, errstr, size) < 0) ||
        split_commit(nodes, cfg, &next, &cur, errstr, size) < 0) {
        lapse_layout_free(&cur);
        return -1;
    }
    split_tidy(nodes, cfg, &cur);
    *out = cur; /* node_of moves over */
    out->prev_shards = next.prev_shards;
    out->epoch = next.epoch;
    out->state = LAPSE_LAYOUT_STABLE;
    out->retired = next.retired;
    return 0;
}
