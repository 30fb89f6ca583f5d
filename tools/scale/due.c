/*
 * due — see due.h.
 *
 * The script (common/lua/due.lua, which says how the counts stay right)
 * only reads: it may run against a busy primary at any time without
 * changing what the scanners see. A shard in small keys is read in calls
 * of DUE_CHUNK buckets each, so that Redis is never held long however big
 * the shard.
 */
#include "due.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "inspect.h"
#include "layout.h"
#include "evalsha.h"
#include "status.h"

const int64_t lapse_scale_due_edge_ms[LAPSE_SCALE_DUE_BUCKETS - 1] = {
    0, 60 * 1000, 10 * 60 * 1000, 60 * 60 * 1000, 24 * 60 * 60 * 1000,
};
const char *const lapse_scale_due_name[LAPSE_SCALE_DUE_BUCKETS] = {
    "overdue", "next_1m", "next_10m", "next_1h", "next_1d", "later",
};
const char *const lapse_scale_due_header[LAPSE_SCALE_DUE_BUCKETS] = {
    "overdue", "<1m", "1m..10m", "10m..1h", "1h..1d", ">1d",
};

/* common/lua/due.lua (embedded by scripts/embed-lua, with lib/bucket.lua
 * pasted in): KEYS z, f; ARGV the first bucket, how many, now ("" the
 * first time), the ranges' upper edges as ms from now. */
extern const char lapse_lua_due[];

/* Buckets of a shard in small keys counted per call: 6 ZCOUNTs each, a
 * millisecond or so of Redis's time per call at most. */
#define DUE_CHUNK "256"

/* A bucket split between two calls of one shard moves IDs from a bucket
 * counted to one not (or back): the shard is read again from bucket 0, up
 * to this many times, then taken as read (a histogram of a moving shard). */
#define DUE_RESTARTS 3

/* Appends one call of due_lua for shard `shard` from bucket `from`, at
 * `now` ("" for the first call): by its SHA1, or with `eval` the script
 * itself (after a NOSCRIPT: tools/scale/evalsha.h). 0, or -1 (not
 * connected). */
static int due_append(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard,
                      long long from, const char *now, char edges[][24], int eval)
{
    char z[LAPSE_KEY_MAX], f[LAPSE_KEY_MAX], start[24];
    lapse_key(z, sizeof z, cfg, LAPSE_KEY_DUE, shard);
    lapse_key(f, sizeof f, cfg, LAPSE_KEY_INFLIGHT, shard);
    snprintf(start, sizeof start, "%lld", from);
    const char *argv[8 + LAPSE_SCALE_DUE_BUCKETS - 1] = {
        eval ? "EVAL" : "EVALSHA",
        eval ? lapse_lua_due : lapse_scale_script_sha(lapse_lua_due),
        "2",
        z,
        f,
        start,
        DUE_CHUNK,
        now};
    size_t lens[8 + LAPSE_SCALE_DUE_BUCKETS - 1];
    int argc = 8;
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS - 1; b++)
        argv[argc++] = edges[b];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return lapse_redis_append_slot(r, lapse_shard_slot(cfg->ns, shard), argc, argv, lens);
}

/* One call of due_lua (due_append) and its reply: by SHA1, again as EVAL
 * after a NOSCRIPT. 0, or -1 (no reply). */
static int due_call(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard, long long from,
                    const char *now, char edges[][24], redisReply **rep)
{
    for (int eval = 0; eval < 2; eval++) {
        if (due_append(r, cfg, shard, from, now, edges, eval) < 0 ||
            lapse_redis_get_reply(r, rep) < 0)
            return -1;
        if (eval || !lapse_scale_noscript(*rep))
            break;
        freeReplyObject(*rep);
    }
    return 0;
}

/* Adds a reply of due_lua to d (the first call of a shard: sets now and
 * in flight; each call: the earliest deadline to come, if sooner); *next,
 * *buckets from the reply. 0, or -1 with d->error. */
static int due_decode(const redisReply *rep, struct lapse_scale_due *d, long long *next,
                      long long *buckets)
{
    /* due.lua's reply: { now, inflight, range 1..N, next, buckets, soonest } */
    enum {
        D_NOW,
        D_INFLIGHT,
        D_RANGE, /* the first of LAPSE_SCALE_DUE_BUCKETS */
        D_NEXT = D_RANGE + LAPSE_SCALE_DUE_BUCKETS,
        D_BUCKETS,
        D_SOONEST,
        D_PARTS
    };
    int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == D_PARTS;
    for (size_t i = 0; ok && i < rep->elements; i++)
        ok = rep->element[i]->type == REDIS_REPLY_INTEGER;
    if (!ok) {
        snprintf(d->error, sizeof d->error, "unexpected reply to the due-times script%s%.200s",
                 rep->type == REDIS_REPLY_ERROR ? ": " : "",
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "");
        d->read = 0;
        return -1;
    }
    if (!d->read)
        d->now_ms = rep->element[D_NOW]->integer, d->next_ms = -1;
    long long soonest = rep->element[D_SOONEST]->integer;
    if (soonest >= 0 && (d->next_ms < 0 || soonest < d->next_ms))
        d->next_ms = soonest;
    d->inflight += rep->element[D_INFLIGHT]->integer;
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
        d->bucket[b] += rep->element[D_RANGE + b]->integer;
    *next = rep->element[D_NEXT]->integer;
    *buckets = rep->element[D_BUCKETS]->integer;
    d->read = 1;
    return 0;
}

/* The rest of a shard in small keys whose first call said next, buckets:
 * one call at a time, at the first call's clock (every call's ranges are
 * the same). 0, or -2 with errstr (no reply). */
static int due_rest(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard,
                    char edges[][24], struct lapse_scale_due *d, long long next, long long buckets,
                    char *errstr, size_t size)
{
    int restarts = 0;
    while (next >= 0) {
        char now[24];
        snprintf(now, sizeof now, "%lld", (long long)d->now_ms);
        redisReply *rep;
        if (due_call(r, cfg, shard, next, now, edges, &rep) < 0) {
            snprintf(errstr, size, "%s", lapse_redis_errstr(r));
            return -2;
        }
        long long was = buckets;
        int rc = due_decode(rep, d, &next, &buckets);
        freeReplyObject(rep);
        if (rc < 0)
            return 0;
        if (buckets != was && restarts++ < DUE_RESTARTS) {
            /* a split moved IDs under the read: from bucket 0 again */
            memset(d, 0, sizeof *d);
            if (due_call(r, cfg, shard, 0, "", edges, &rep) < 0) {
                snprintf(errstr, size, "%s", lapse_redis_errstr(r));
                return -2;
            }
            rc = due_decode(rep, d, &next, &buckets);
            freeReplyObject(rep);
            if (rc < 0)
                return 0;
        }
    }
    return 0;
}

int lapse_scale_due_read(lapse_redis *r, const struct lapse_config *cfg, const uint32_t *shard,
                         size_t nshards, struct lapse_scale_due *out, char *errstr, size_t size)
{
    char edges[LAPSE_SCALE_DUE_BUCKETS - 1][24];
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS - 1; b++)
        snprintf(edges[b], sizeof edges[b], "%lld", (long long)lapse_scale_due_edge_ms[b]);
    if (lapse_redis_ensure(r) < 0) {
        snprintf(errstr, size, "%s", lapse_redis_errstr(r));
        return -2;
    }
    /* every shard's first call in one pipeline: a one-key shard is whole
     * in it, a shard in small keys has its first DUE_CHUNK buckets there */
    for (size_t k = 0; k < nshards; k++)
        if (due_append(r, cfg, shard[k], 0, "", edges, 0) < 0) {
            snprintf(errstr, size, "%s", lapse_redis_errstr(r));
            return -2;
        }
    long long *next = malloc((nshards ? nshards : 1) * 2 * sizeof *next);
    if (!next) {
        snprintf(errstr, size, "out of memory");
        return -2;
    }
    long long *buckets = next + nshards;
    for (size_t k = 0; k < nshards; k++) {
        redisReply *rep;
        memset(&out[k], 0, sizeof out[k]);
        next[k] = -1;
        if (lapse_redis_get_reply(r, &rep) < 0) {
            snprintf(errstr, size, "%s", lapse_redis_errstr(r));
            free(next);
            return -2;
        }
        if (lapse_scale_noscript(rep))
            next[k] = -2; /* asked again below, as EVAL (the pipeline's replies first) */
        else
            due_decode(rep, &out[k], &next[k], &buckets[k]);
        freeReplyObject(rep);
    }
    for (size_t k = 0; k < nshards; k++) {
        redisReply *rep;
        if (next[k] != -2)
            continue;
        next[k] = -1;
        if (due_call(r, cfg, shard[k], 0, "", edges, &rep) < 0) {
            snprintf(errstr, size, "%s", lapse_redis_errstr(r));
            free(next);
            return -2;
        }
        due_decode(rep, &out[k], &next[k], &buckets[k]);
        freeReplyObject(rep);
    }
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < nshards; k++)
        if (out[k].read && next[k] >= 0)
            rc = due_rest(r, cfg, shard[k], edges, &out[k], next[k], buckets[k], errstr, size);
    free(next);
    return rc;
}

/* Every node's shards, each node's read in one pipeline; a node that gives
 * no reply is tried again, with backoff.h's waits, for up to
 * redis.retry_timeout_ms (a failover, a cluster moving a slot). The
 * shards of a node that never answered get read 0 and the reason. */
static void due_read_all(const struct lapse_config *cfg, lapse_redis **nodes,
                         const struct lapse_layout *l, struct lapse_scale_due *d)
{
    uint32_t *on = malloc(lapse_layout_span(l) * sizeof *on);
    struct lapse_scale_due *got = malloc(lapse_layout_span(l) * sizeof *got);
    if (!on || !got) {
        for (uint32_t i = 0; i < lapse_layout_span(l); i++)
            snprintf(d[i].error, sizeof d[i].error, "out of memory");
        free(on);
        free(got);
        return;
    }
    struct lapse_backoff backoff;
    lapse_backoff_init(&backoff, 10, 500);
    int64_t give_up = lapse_clock_mono_ms() + cfg->redis_retry_timeout_ms;
    for (size_t n = 0; n < cfg->nnodes; n++) {
        size_t k = 0;
        for (uint32_t i = 0; i < lapse_layout_span(l); i++)
            if (l->node_of[i] == n)
                on[k++] = i;
        if (k == 0)
            continue;
        lapse_redis *r = nodes[n];
        char err[256];
        int rc;
        while ((rc = lapse_scale_due_read(r, cfg, on, k, got, err, sizeof err)) == -2 &&
               !lapse_redis_refused(r) && lapse_clock_mono_ms() < give_up)
            lapse_clock_sleep_ms(lapse_backoff_next(&backoff));
        for (size_t j = 0; j < k; j++) {
            if (rc == 0)
                d[on[j]] = got[j];
            else
                snprintf(d[on[j]].error, sizeof d[on[j]].error, "%s", err);
        }
    }
    free(on);
    free(got);
}

/* Where shard i is, as status names it: the node, or on a cluster
 * "slot@primary". */
static void due_where(const struct lapse_config *cfg, lapse_redis *r, uint32_t i, char *out,
                      size_t size)
{
    if (lapse_redis_one_server(r)) {
        snprintf(out, size, "%s", lapse_redis_name(r));
        return;
    }
    uint16_t slot = lapse_shard_slot(cfg->ns, i);
    const char *owner = lapse_redis_slot_owner(r, slot);
    snprintf(out, size, "%u@%s", slot, owner ? owner : "-");
}

/* Adds d's counts to object o; returns o. */
static json_t *due_json(json_t *o, const struct lapse_scale_due *d, long long pending)
{
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
        json_object_set_new(o, lapse_scale_due_name[b], json_integer(d->bucket[b]));
    json_object_set_new(o, "inflight", json_integer(d->inflight));
    json_object_set_new(o, "pending", json_integer(pending));
    json_object_set_new(o, "next_due_ms", d->next_ms >= 0 ? json_integer(d->next_ms) : json_null());
    return o;
}

static void due_row(const char *name, const char *where, const struct lapse_scale_due *d,
                    long long pending)
{
    printf("%-6s %-22s", name, where);
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
        printf(" %10lld", d->bucket[b]);
    char in[64] = "-";
    if (d->next_ms >= 0)
        lapse_scale_from_now(d->next_ms, d->now_ms, in, sizeof in);
    printf(" %9lld %10lld  %s\n", d->inflight, pending, in);
}

/* The buckets' ranges for --json: each one's name (its key in shard_info
 * and total), the text's header, and its edges in ms from now (from
 * exclusive, to inclusive; null: unbounded). */
static json_t *due_ranges(void)
{
    json_t *a = json_array();
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
        json_array_append_new(
            a,
            json_pack("{s:s, s:s, s:o, s:o}", "name", lapse_scale_due_name[b], "header",
                      lapse_scale_due_header[b], "from_ms",
                      b > 0 ? json_integer(lapse_scale_due_edge_ms[b - 1]) : json_null(), "to_ms",
                      b < LAPSE_SCALE_DUE_BUCKETS - 1 ? json_integer(lapse_scale_due_edge_ms[b])
                                                      : json_null()));
    return a;
}

/* The histogram read whole into one object (status --due --json's); with
 * `text` also printed for people. NULL with errstr when the layout cannot
 * be read; *unread_out: how many shards could not be. */
static json_t *due_run(const struct lapse_config *cfg, lapse_redis **nodes, int text,
                       lapse_scale_warn_fn *warn, void *ctx, int *unread_out, char *errstr,
                       size_t size)
{
    int as_json = !text;
    struct lapse_layout l;
    *unread_out = 0;
    if (lapse_scale_layout_read(cfg, nodes, &l, warn, ctx, errstr, size) < 0)
        return NULL;
    struct lapse_scale_due *d = calloc(lapse_layout_span(&l), sizeof *d);
    if (!d) {
        snprintf(errstr, size, "out of memory");
        lapse_layout_free(&l);
        return NULL;
    }
    due_read_all(cfg, nodes, &l, d);

    const char *state = lapse_layout_state_name(l.state);
    char change[64];
    struct lapse_scale_due total = {.next_ms = -1};
    long next_shard = -1; /* the shard whose deadline is the total's next_ms */
    int unread = 0;
    json_t *shards = json_array();
    if (!as_json) {
        printf("namespace %s: %u shards, state %s, epoch %lld", cfg->ns, l.shards, state,
               (long long)l.epoch);
        printf("%s", lapse_scale_change_text(&l, change, sizeof change));
        printf("\npending deadlines by when they fall due, on each shard's Redis clock\n");
        printf("\n%-6s %-22s", "shard", "node");
        for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
            printf(" %10s", lapse_scale_due_header[b]);
        printf(" %9s %10s  %s\n", "inflight", "pending", "next due");
    }
    for (uint32_t i = 0; i < lapse_layout_span(&l); i++) {
        lapse_redis *r = nodes[l.node_of[i]];
        char where[LAPSE_NODE_NAME_MAX + 16], name[16];
        due_where(cfg, r, i, where, sizeof where);
        snprintf(name, sizeof name, "%u", i);
        if (!d[i].read) {
            lapse_scale_warnf(warn, ctx, "shard %u: %s", i, d[i].error);
            unread++;
            json_array_append_new(shards, json_pack("{s:i, s:s, s:s}", "shard", (int)i, "node",
                                                    where, "error", d[i].error));
            if (!as_json)
                printf("%-6u %-22s %10s\n", i, where, "(unread)");
            continue;
        }
        long long pending = d[i].inflight;
        for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++) {
            pending += d[i].bucket[b];
            total.bucket[b] += d[i].bucket[b];
        }
        total.inflight += d[i].inflight;
        if (d[i].next_ms >= 0 && (total.next_ms < 0 || d[i].next_ms < total.next_ms))
            total.next_ms = d[i].next_ms, total.now_ms = d[i].now_ms, next_shard = i;
        json_array_append_new(shards, due_json(json_pack("{s:i, s:s, s:I}", "shard", (int)i, "node",
                                                         where, "now_ms", (json_int_t)d[i].now_ms),
                                               &d[i], pending));
        if (!as_json)
            due_row(name, where, &d[i], pending);
    }
    long long pending = total.inflight;
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
        pending += total.bucket[b];
    json_t *edges = json_array();
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS - 1; b++)
        json_array_append_new(edges, json_integer(lapse_scale_due_edge_ms[b]));
    json_t *tot = due_json(json_object(), &total, pending);
    json_object_set_new(tot, "unread_shards", json_integer(unread));
    json_object_set_new(tot, "next_due_shard",
                        next_shard >= 0 ? json_integer(next_shard) : json_null());
    json_t *o =
        json_pack("{s:s, s:i, s:i, s:s, s:I, s:o, s:o, s:o}", "ns", cfg->ns, "shards",
                  (int)l.shards, "prev_shards", (int)l.prev_shards, "state", state, "epoch",
                  (json_int_t)l.epoch, "edges_ms", edges, "shard_info", shards, "total", tot);
    if (o)
        json_object_set_new(o, "ranges", due_ranges());
    else
        snprintf(errstr, size, "out of memory");
    if (!as_json) {
        due_row("total", unread ? "(shards unread)" : "", &total, pending);
        char iso[40], in[64];
        if (total.next_ms >= 0)
            printf("\nnext deadline: %s (%s), shard %ld\n",
                   lapse_inspect_iso(total.next_ms, iso, sizeof iso),
                   lapse_scale_from_now(total.next_ms, total.now_ms, in, sizeof in), next_shard);
        else
            printf("\nnext deadline: none to come%s\n", unread ? " in the shards read" : "");
        printf("overdue: due now, not yet claimed; <1m .. >1d: due that far from now (each range\n"
               "starts where the one before ends); inflight: being dispatched (in no other\n"
               "column); next due: the earliest deadline still to come\n");
        if (lapse_layout_changing(&l))
            printf("%s: an ID not moved yet is counted in the %s shard that holds it\n",
                   l.state == LAPSE_LAYOUT_MERGING ? "merge" : "split",
                   l.state == LAPSE_LAYOUT_MERGING ? "retiring" : "old");
    }
    free(d);
    lapse_layout_free(&l);
    *unread_out = unread;
    return o;
}

json_t *lapse_scale_due_json(const struct lapse_config *cfg, lapse_redis **nodes,
                             lapse_scale_warn_fn *warn, void *ctx, int *unread, char *errstr,
                             size_t size)
{
    return due_run(cfg, nodes, 0, warn, ctx, unread, errstr, size);
}

int lapse_scale_due(const struct lapse_config *cfg, lapse_redis **nodes, int as_json)
{
    char err[512];
    int unread = 0;
    json_t *o =
        due_run(cfg, nodes, !as_json, lapse_scale_warn_stderr, NULL, &unread, err, sizeof err);
    if (!o) {
        fprintf(stderr, "lapse-scale: %s\n", err);
        return 1;
    }
    if (as_json)
        lapse_scale_print_json(o);
    json_decref(o);
    return unread ? 1 : 0;
}
