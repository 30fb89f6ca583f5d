/*
 * offline — see offline.h. Every shard is walked whole (the order is by
 * offline-since, which no shard keeps): the records are gathered, sorted
 * oldest first and printed; with --limit N only the N oldest are kept
 * while walking, so memory stays O(N).
 */
#include "offline.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "inspect.h"
#include "layout.h"
#include "evalsha.h"
#include "status.h"

/* common/lua/offline.lua (embedded, lib/watch.lua pasted in): KEYS z, e;
 * ARGV cursor, records to look at, prefix. */
extern const char lapse_lua_offline[];

#define OFFLINE_SLICE "1000"
#define ID_PREVIEW 64 /* bytes of an ID the text shows */

/* One offline ID. */
struct rec {
    char *id;         /* its bytes (malloc'd; not NUL-terminated) */
    size_t len;       /* their count */
    uint32_t shard;   /* the shard holding its watch record */
    int64_t deadline; /* the deadline that fell due, unix ms */
    int64_t since;    /* when Kafka took its timeout, unix ms */
};

/* What the walk gathers. */
struct gather {
    struct rec *r;   /* n records, sorted only after gather_trim / at the end */
    size_t n, cap;   /* held, room */
    long limit;      /* keep at most this many (the oldest); 0: all */
    long long total; /* offline IDs seen (matching the prefix) */
};

/* Oldest first; the same instant by ID, so the order is stable run to run. */
static int rec_cmp(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;
    if (x->since != y->since)
        return x->since < y->since ? -1 : 1;
    int c = memcmp(x->id, y->id, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Sorts and, with a limit, drops all but the oldest `limit`. */
static void gather_trim(struct gather *g)
{
    if (g->n == 0)
        return; /* g->r may be NULL: qsort's array must not be */
    qsort(g->r, g->n, sizeof *g->r, rec_cmp);
    if (g->limit > 0 && g->n > (size_t)g->limit) {
        for (size_t k = (size_t)g->limit; k < g->n; k++)
            free(g->r[k].id);
        g->n = (size_t)g->limit;
    }
}

/* Adds one record. 0, or -1 when out of memory. */
static int gather_add(struct gather *g, uint32_t shard, const redisReply *id, const char *d,
                      const char *f)
{
    g->total++;
    if (g->limit > 0 && g->n >= 2 * (size_t)g->limit)
        gather_trim(g);
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 256;
        struct rec *r = realloc(g->r, cap * sizeof *r);
        if (!r)
            return -1;
        g->r = r, g->cap = cap;
    }
    struct rec *e = &g->r[g->n];
    e->id = malloc(id->len ? id->len : 1);
    if (!e->id)
        return -1;
    memcpy(e->id, id->str, id->len);
    e->len = id->len, e->shard = shard;
    e->deadline = strtoll(d, NULL, 10), e->since = strtoll(f, NULL, 10);
    g->n++;
    return 0;
}

static void gather_free(struct gather *g)
{
    for (size_t k = 0; k < g->n; k++)
        free(g->r[k].id);
    free(g->r);
}

/* One page of shard i's offline IDs from cursor (updated; "0" when done),
 * about `want` records looked at ("1000" a slice), added to g. 0, or -1
 * with the reason passed to warn. */
static int offline_page(const struct lapse_config *cfg, lapse_redis *r, uint32_t i, char *cursor,
                        const char *want, const char *prefix, struct gather *g,
                        lapse_scale_warn_fn *warn, void *ctx)
{
    char z[LAPSE_KEY_MAX], e[LAPSE_KEY_MAX];
    lapse_key(z, sizeof z, cfg, LAPSE_KEY_DUE, i);
    lapse_key(e, sizeof e, cfg, LAPSE_KEY_EPOCH, i);
    const char *argv[] = {
        "EVALSHA", lapse_scale_script_sha(lapse_lua_offline), "2", z, e, cursor, want, prefix};
    size_t lens[8];
    for (int k = 0; k < 8; k++)
        lens[k] = strlen(argv[k]);
    redisReply *rep = NULL;
    for (int by_sha = 1; by_sha >= 0; by_sha--) {
        if (!by_sha) { /* NOSCRIPT: this server does not know it yet */
            freeReplyObject(rep);
            argv[0] = "EVAL", lens[0] = 4;
            argv[1] = lapse_lua_offline, lens[1] = strlen(lapse_lua_offline);
        }
        if (lapse_redis_append_slot(r, lapse_shard_slot(cfg->ns, i), 8, argv, lens) < 0 ||
            lapse_redis_get_reply(r, &rep) < 0) {
            lapse_scale_warnf(warn, ctx, "offline: shard %u: %s", i, lapse_redis_errstr(r));
            return -1;
        }
        if (!lapse_scale_noscript(rep))
            break;
    }
    int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements % 3 == 1 &&
             rep->element[0]->type == REDIS_REPLY_STRING && rep->element[0]->len < 24;
    for (size_t k = 1; ok && k < rep->elements; k++)
        ok = rep->element[k]->type == REDIS_REPLY_STRING;
    if (!ok) {
        lapse_scale_warnf(warn, ctx, "offline: shard %u: unexpected reply%s%.200s", i,
                          rep->type == REDIS_REPLY_ERROR ? ": " : "",
                          rep->type == REDIS_REPLY_ERROR ? rep->str : "");
        freeReplyObject(rep);
        return -1;
    }
    memcpy(cursor, rep->element[0]->str, rep->element[0]->len);
    cursor[rep->element[0]->len] = '\0';
    for (size_t k = 1; k + 2 < rep->elements; k += 3)
        if (gather_add(g, i, rep->element[k], rep->element[k + 1]->str, rep->element[k + 2]->str) <
            0) {
            lapse_scale_warnf(warn, ctx, "offline: out of memory");
            freeReplyObject(rep);
            return -1;
        }
    freeReplyObject(rep);
    return 0;
}

/* The records as offline --json lists them (new reference). */
static json_t *offline_list(const struct gather *g)
{
    json_t *list = json_array();
    for (size_t k = 0; k < g->n; k++) {
        const struct rec *e = &g->r[k];
        json_t *js = json_stringn(e->id, e->len);
        json_array_append_new(list,
                              json_pack("{s:o, s:i, s:I, s:I}", "id",
                                        js ? js : json_stringn_nocheck(e->id, e->len), "shard",
                                        (int)e->shard, "deadline_ms", (json_int_t)e->deadline,
                                        "since_ms", (json_int_t)e->since));
    }
    return list;
}

static void offline_text(const struct lapse_config *cfg, const struct gather *g, const char *prefix,
                         int complete)
{
    char what[320] = "";
    if (prefix[0]) {
        char p[4 * ID_PREVIEW + 8];
        snprintf(what, sizeof what, " whose ID starts with %s",
                 lapse_inspect_preview(prefix, strlen(prefix), ID_PREVIEW, p, sizeof p));
    }
    if (g->total == 0) {
        printf("namespace %s: no IDs offline%s%s\n", cfg->ns, what,
               complete ? "" : " in the shards read");
        return;
    }
    printf("namespace %s: %lld %s offline%s%s, longest first", cfg->ns, g->total,
           g->total == 1 ? "ID" : "IDs", what, complete ? "" : " in the shards read");
    if (g->total > (long long)g->n)
        printf(" (the %zu longest: --limit)", g->n);
    printf("\n");
    char(*ids)[4 * ID_PREVIEW + 8] = malloc((g->n ? g->n : 1) * sizeof *ids);
    if (!ids) {
        fprintf(stderr, "lapse-scale: offline: out of memory\n");
        return;
    }
    int w = 2;
    for (size_t k = 0; k < g->n; k++) {
        lapse_inspect_preview(g->r[k].id, g->r[k].len, ID_PREVIEW, ids[k], sizeof ids[k]);
        if ((int)strlen(ids[k]) > w)
            w = (int)strlen(ids[k]);
    }
    printf("%-*s %5s  %-24s  %-24s  %s\n", w, "id", "shard", "deadline", "offline since",
           "offline for");
    int64_t now = lapse_clock_ms();
    for (size_t k = 0; k < g->n; k++) {
        const struct rec *e = &g->r[k];
        char d[40], f[40], dur[32];
        printf("%-*s %5u  %-24s  %-24s  %s\n", w, ids[k], e->shard,
               lapse_inspect_iso(e->deadline, d, sizeof d),
               lapse_inspect_iso(e->since, f, sizeof f),
               lapse_scale_duration(now > e->since ? now - e->since : 0, dur, sizeof dur));
    }
    free(ids);
}

/* Walks every shard of layout l into g. 0, or 1 when a shard could not
 * be read (said to warn; the others are walked). */
static int offline_gather(const struct lapse_config *cfg, lapse_redis **nodes,
                          const struct lapse_layout *l, const char *prefix, struct gather *g,
                          lapse_scale_warn_fn *warn, void *ctx)
{
    int rc = 0;
    for (uint32_t i = 0; i < lapse_layout_span(l); i++) {
        lapse_redis *r = nodes[l->node_of[i]];
        char cursor[24] = "0";
        do {
            if (offline_page(cfg, r, i, cursor, OFFLINE_SLICE, prefix, g, warn, ctx) < 0) {
                rc = 1;
                break;
            }
        } while (strcmp(cursor, "0") != 0);
    }
    gather_trim(g);
    return rc;
}

json_t *lapse_scale_offline_json(const struct lapse_config *cfg, lapse_redis **nodes, long limit,
                                 const char *prefix, lapse_scale_warn_fn *warn, void *ctx,
                                 int *failed, char *errstr, size_t size)
{
    struct lapse_layout l;
    *failed = 0;
    if (lapse_scale_layout_read(cfg, nodes, &l, warn, ctx, errstr, size) < 0)
        return NULL;
    struct gather g = {.limit = limit};
    *failed = offline_gather(cfg, nodes, &l, prefix, &g, warn, ctx);
    json_t *out = json_pack("{s:s, s:o, s:I, s:b}", "ns", cfg->ns, "offline", offline_list(&g),
                            "total", (json_int_t)g.total, "truncated", g.total > (long long)g.n);
    if (!out)
        snprintf(errstr, size, "offline: out of memory");
    gather_free(&g);
    lapse_layout_free(&l);
    return out;
}

/* "SHARD:CURSOR" into its parts; 0, or -1 when it is not one. */
static int page_cursor_parse(const char *s, uint32_t *shard, char *cursor, size_t size)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end != ':' || v > LAPSE_MAX_SHARDS || !isdigit((unsigned char)end[1]))
        return -1;
    const char *c = end + 1;
    size_t n = strspn(c, "0123456789");
    if (c[n] != '\0' || n == 0 || n >= size || n > 20)
        return -1;
    memcpy(cursor, c, n + 1);
    *shard = (uint32_t)v;
    return 0;
}

json_t *lapse_scale_offline_page_json(const struct lapse_config *cfg, lapse_redis **nodes,
                                      const char *cursor_in, const char *prefix, long limit,
                                      int budget_ms, lapse_scale_warn_fn *warn, void *ctx,
                                      char *errstr, size_t size)
{
    uint32_t shard = 0;
    char cursor[24] = "0";
    if (cursor_in && cursor_in[0] &&
        page_cursor_parse(cursor_in, &shard, cursor, sizeof cursor) < 0) {
        snprintf(errstr, size, "offline: a cursor is SHARD:N, as a page's \"cursor\" gives it");
        return NULL;
    }
    struct lapse_layout l;
    if (lapse_scale_layout_read(cfg, nodes, &l, warn, ctx, errstr, size) < 0)
        return NULL;
    struct gather g = {.limit = 0};
    int64_t give_up = lapse_clock_mono_ms() + budget_ms;
    int failed = 0;
    uint32_t first = shard;
    while (shard < lapse_layout_span(&l) && g.n < (size_t)limit &&
           lapse_clock_mono_ms() < give_up) {
        char want[24];
        /* (a slice looks at about `want` records: a page about limit long) */
        long w = limit - (long)g.n;
        snprintf(want, sizeof want, "%ld", w < 10 ? 10 : w > 1000 ? 1000 : w);
        if (offline_page(cfg, nodes[l.node_of[shard]], shard, cursor, want, prefix, &g, warn, ctx) <
            0) {
            failed = 1;
            snprintf(cursor, sizeof cursor, "0");
        }
        if (strcmp(cursor, "0") == 0)
            shard++;
    }
    gather_trim(&g);
    char next[48];
    int more = shard < lapse_layout_span(&l);
    snprintf(next, sizeof next, "%u:%s", shard, cursor);
    json_t *out = json_pack("{s:s, s:o, s:I, s:b}", "ns", cfg->ns, "offline", offline_list(&g),
                            "total", (json_int_t)g.total, "truncated", more);
    if (out) {
        json_object_set_new(out, "cursor", more ? json_string(next) : json_null());
        json_object_set_new(out, "shards_scanned", json_integer(shard - first));
        json_object_set_new(out, "shards_from", json_integer(first));
        json_object_set_new(out, "shards", json_integer(lapse_layout_span(&l)));
        json_object_set_new(out, "unread_shards", json_integer(failed));
    } else {
        snprintf(errstr, size, "offline: out of memory");
    }
    gather_free(&g);
    lapse_layout_free(&l);
    return out;
}

int lapse_scale_offline(const struct lapse_config *cfg, lapse_redis **nodes, int as_json,
                        long limit, const char *prefix)
{
    if (as_json) {
        char err[512];
        int failed = 0;
        json_t *out = lapse_scale_offline_json(cfg, nodes, limit, prefix, lapse_scale_warn_stderr,
                                               NULL, &failed, err, sizeof err);
        if (!out && strncmp(err, "offline:", 8) != 0) {
            fprintf(stderr, "lapse-scale: %s\n", err); /* the layout */
            return 1;
        }
        lapse_scale_print_json(out);
        json_decref(out);
        return failed;
    }
    struct lapse_layout l;
    if (lapse_scale_layout(cfg, nodes, &l) < 0)
        return 1;
    struct gather g = {.limit = limit};
    int rc = offline_gather(cfg, nodes, &l, prefix, &g, lapse_scale_warn_stderr, NULL);
    offline_text(cfg, &g, prefix, rc == 0);
    gather_free(&g);
    lapse_layout_free(&l);
    return rc;
}
