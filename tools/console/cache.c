/*
 * cache — see cache.h. One mutex guards the views; the reader drops it
 * while it reads Redis, so a page asking meanwhile gets the previous
 * snapshot at once. The condition variable wakes the reader when a view
 * nobody had asked for is asked for, and wakes pages waiting for a
 * view's first read.
 */
#include "cache.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "due.h"
#include "log.h"
#include "offline.h"
#include "status.h"

struct view {
    char *json;       /* the last read's JSON (or its error), NULL before the first */
    size_t len;       /* its bytes */
    int http_status;  /* 200, or 503 for an error */
    int64_t read_at;  /* monotonic ms of that read */
    int64_t took_ms;  /* how long that read took */
    int64_t asked_at; /* monotonic ms a page last asked; -1: never */
};

struct lapse_cache {
    pthread_mutex_t lock; /* guards what follows, up to the reader's own */
    pthread_cond_t cond;  /* a view asked for or read; stop */
    struct view v[LAPSE_CACHE_VIEWS];
    uint64_t reads; /* views read from Redis so far */
    int stop;       /* the reader is to end */

    const struct lapse_config *cfg; /* the reader's own, not guarded: */
    lapse_redis **nodes;            /* its connections (owned) */
    pthread_t thread;
};

/* The readers' warnings (a shard unread, a wait for a node), a few a
 * second at most: the reader runs every refresh_ms while pages are open. */
static void cache_warn(void *ctx, const char *line)
{
    static struct lapse_log_limit lim;
    (void)ctx;
    lapse_log_limited(&lim, 2, LAPSE_LOG_WARN, "%s", line);
}

/* Reads view v from Redis: its JSON (malloc'd), status and how long the
 * read took (ms, also in the JSON: read_took_ms). */
static char *view_read(lapse_cache *c, enum lapse_cache_view v, size_t *len, int *status,
                       int64_t *took_ms)
{
    int64_t t0 = lapse_clock_mono_ms();
    char err[512] = "";
    int failed = 0;
    json_t *o = NULL;
    switch (v) {
    case LAPSE_CACHE_STATUS:
        /* (without MEMORY USAGE: it walks each shard's largest key whole) */
        o = lapse_scale_status_json(c->cfg, c->nodes, 0, cache_warn, c, &failed, err, sizeof err);
        break;
    case LAPSE_CACHE_DUE:
        o = lapse_scale_due_json(c->cfg, c->nodes, cache_warn, c, &failed, err, sizeof err);
        break;
    default:
        o = lapse_scale_offline_page_json(c->cfg, c->nodes, NULL, "", LAPSE_CACHE_OFFLINE_PAGE,
                                          c->cfg->console_budget_ms, cache_warn, c, err,
                                          sizeof err);
        break;
    }
    *status = o ? 200 : 503;
    if (!o)
        o = json_pack("{s:s}", "error", err[0] ? err : "unread");
    *took_ms = lapse_clock_mono_ms() - t0;
    if (o) {
        json_object_set_new(o, "read_ms", json_integer(lapse_clock_ms()));
        json_object_set_new(o, "read_took_ms", json_integer(*took_ms));
    }
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    *len = s ? strlen(s) : 0;
    return s;
}

/* A view asked for within idle_ms. */
static int view_open(const lapse_cache *c, const struct view *w, int64_t now)
{
    return w->asked_at >= 0 && now - w->asked_at <= c->cfg->console_idle_ms;
}

/* How long after its last read a view is read again: refresh_ms, or longer
 * where the open views' reads, together, would take more than read_pct of
 * the time (a read's wall time, Redis's and the round trips': it bounds
 * what Redis spends). With 256 shards a view takes ~30 ms to read: at
 * 1 %, one every ~6 s, where every second would be ~6 % of a core. */
static int64_t view_gap(const lapse_cache *c, int64_t now)
{
    int64_t took = 0;
    for (int v = 0; v < LAPSE_CACHE_VIEWS; v++)
        if (view_open(c, &c->v[v], now))
            took += c->v[v].took_ms;
    int64_t gap = took * 100 / c->cfg->console_read_pct;
    return gap > c->cfg->console_refresh_ms ? gap : c->cfg->console_refresh_ms;
}

/* The view to read now (the asked one whose snapshot is oldest), or -1 with
 * *wait_ms how long until one is due (-1: none asked, wait to be woken). */
static int next_view(const lapse_cache *c, int64_t now, int64_t *wait_ms)
{
    int best = -1;
    int64_t gap = view_gap(c, now);
    *wait_ms = -1;
    for (int v = 0; v < LAPSE_CACHE_VIEWS; v++) {
        const struct view *w = &c->v[v];
        if (!view_open(c, w, now))
            continue;
        int64_t due = w->json ? w->read_at + gap : now;
        if (due <= now) {
            if (best < 0 || !w->json || (c->v[best].json && w->read_at < c->v[best].read_at))
                best = v;
        } else if (*wait_ms < 0 || due - now < *wait_ms) {
            *wait_ms = due - now;
        }
    }
    return best;
}

static void deadline_in(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L)
        ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

static void *reader(void *arg)
{
    lapse_cache *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stop) {
        int64_t wait_ms;
        int v = next_view(c, lapse_clock_mono_ms(), &wait_ms);
        if (v < 0) {
            if (wait_ms < 0) {
                pthread_cond_wait(&c->cond, &c->lock);
            } else {
                struct timespec ts;
                deadline_in(&ts, wait_ms);
                pthread_cond_timedwait(&c->cond, &c->lock, &ts);
            }
            continue;
        }
        pthread_mutex_unlock(&c->lock);
        size_t len;
        int status;
        int64_t took;
        char *json = view_read(c, (enum lapse_cache_view)v, &len, &status, &took);
        pthread_mutex_lock(&c->lock);
        c->reads++;
        struct view *w = &c->v[v];
        w->read_at = lapse_clock_mono_ms();
        w->took_ms = took;
        if (json) {
            free(w->json);
            w->json = json, w->len = len, w->http_status = status;
        }
        pthread_cond_broadcast(&c->cond);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

lapse_cache *lapse_cache_start(const struct lapse_config *cfg, lapse_redis **nodes, char *errstr,
                               size_t size)
{
    lapse_cache *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(errstr, size, "out of memory");
        return NULL;
    }
    c->cfg = cfg;
    c->nodes = nodes;
    for (int v = 0; v < LAPSE_CACHE_VIEWS; v++)
        c->v[v].asked_at = -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    int e = pthread_create(&c->thread, NULL, reader, c);
    if (e) {
        snprintf(errstr, size, "cannot start the snapshot reader: %s", strerror(e));
        pthread_cond_destroy(&c->cond);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
    }
    return c;
}

int lapse_cache_get(lapse_cache *c, enum lapse_cache_view v, int wait_ms, char **json, size_t *len,
                    int *http_status)
{
    struct view *w = &c->v[v];
    pthread_mutex_lock(&c->lock);
    int64_t now = lapse_clock_mono_ms();
    int was_idle = w->asked_at < 0 || now - w->asked_at > c->cfg->console_idle_ms;
    w->asked_at = now;
    if (was_idle)
        pthread_cond_broadcast(&c->cond); /* the reader may be asleep for good */
    if (!w->json && wait_ms > 0) {
        struct timespec ts;
        deadline_in(&ts, wait_ms);
        while (!w->json && !c->stop && pthread_cond_timedwait(&c->cond, &c->lock, &ts) == 0)
            ;
    }
    int rc = -1;
    if (w->json && (*json = malloc(w->len + 1))) {
        memcpy(*json, w->json, w->len + 1);
        *len = w->len;
        *http_status = w->http_status;
        rc = 0;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

uint64_t lapse_cache_reads(lapse_cache *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t n = c->reads;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void lapse_cache_stop(lapse_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stop = 1;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    for (size_t i = 0; i < c->cfg->nnodes; i++)
        lapse_redis_free(c->nodes[i]);
    free(c->nodes);
    for (int v = 0; v < LAPSE_CACHE_VIEWS; v++)
        free(c->v[v].json);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
