/* scanner — see scanner.h. */
#include "scanner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "event.h"
#include "layout.h"
#include "log.h"
#include "redis.h"
#include "sink.h"

#define ACK_CHUNK 512              /* IDs per ack.lua call */
#define SHUTDOWN_WAIT_MS 10000     /* longest wait for in-flight events on stop */
#define KEY_MAX (LAPSE_NS_MAX + 16)

/* One event handed to Kafka and not yet removed from Redis. */
struct flight {
    struct flight *next;  /* in the ack list once acknowledged */
    char lease[32];       /* the score claim.lua gave the ID */
    size_t lease_len;
    size_t id_len;
    char id[];            /* the ID bytes */
};

struct lapse_scanner {
    const struct lapse_config *cfg;
    uint32_t shard;
    lapse_redis *home;           /* cfg->nodes[0]: the layout */
    lapse_redis *node;           /* the shard's node (may be home) */
    struct lapse_layout layout;
    char keys[LAPSE_SHARD_NKEYS][KEY_MAX]; /* the shard's keys, as common/lua takes them */
    lapse_sink *sink;
    struct flight *acks;         /* acknowledged, waiting for removal */
    size_t nacks;
    size_t inflight;             /* sent and not yet answered by Kafka */
    uint64_t sent, acked, failed;
    struct lapse_log_limit lim_redis, lim_kafka;
};

static void scanner_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void scanner_delivered(void *ctx, void *opaque, int ok, const char *reason)
{
    lapse_scanner *s = ctx;
    struct flight *f = opaque;
    s->inflight--;
    if (ok) {
        s->acked++;
        f->next = s->acks;
        s->acks = f;
        s->nacks++;
        return;
    }
    /* Not lost: the ID stays leased in Redis and is claimed again when the
     * lease runs out. */
    s->failed++;
    lapse_log_limited(&s->lim_kafka, 2, LAPSE_LOG_WARN,
                      "shard %u: event for an ID not delivered (%s); it will be claimed again",
                      s->shard, reason);
    free(f);
}

lapse_scanner *lapse_scanner_new(const struct lapse_config *cfg, uint32_t shard, char *errstr,
                                 size_t size)
{
    lapse_scanner *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(errstr, size, "out of memory");
        return NULL;
    }
    s->cfg = cfg;
    s->shard = shard;
    for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
        lapse_key_shard(s->keys[k], KEY_MAX, cfg->ns, lapse_shard_keys[k], shard);
    s->home = lapse_redis_new(&cfg->nodes[0], cfg->redis_connect_timeout_ms,
                              cfg->redis_command_timeout_ms);
    s->sink = lapse_sink_new(cfg, scanner_delivered, s, errstr, size);
    if (!s->home || !s->sink) {
        if (!s->home)
            snprintf(errstr, size, "out of memory");
        lapse_scanner_free(s);
        return NULL;
    }
    return s;
}

void lapse_scanner_free(lapse_scanner *s)
{
    if (!s)
        return;
    lapse_sink_free(s->sink); /* answers what is still queued: frees those flights */
    while (s->acks) {
        struct flight *f = s->acks;
        s->acks = f->next;
        free(f);
    }
    if (s->node != s->home)
        lapse_redis_free(s->node);
    lapse_redis_free(s->home);
    lapse_layout_free(&s->layout);
    free(s);
}

/* Reads the layout and opens the shard's node, waiting out Redis outages.
 * Returns 0, or -1 on a lasting problem (not initialised, bad shard). */
static int scanner_attach(lapse_scanner *s, volatile sig_atomic_t *stop)
{
    char err[512];
    while (!*stop) {
        int rc = lapse_redis_ensure(s->home) < 0 ? -2
                 : lapse_layout_load(s->home, s->cfg, &s->layout, err, sizeof err);
        if (rc == 0)
            break;
        if (rc == 1) {
            log_error("namespace \"%s\" is not initialised: run lapse-scale -c %s init N",
                      s->cfg->ns, s->cfg->path);
            return -1;
        }
        if (rc == -1) {
            log_error("%s", err);
            return -1;
        }
        lapse_log_limited(&s->lim_redis, 1, LAPSE_LOG_WARN, "waiting for Redis: %s",
                          lapse_redis_errstr(s->home));
        scanner_sleep_ms(200);
    }
    if (*stop)
        return -1;
    if (s->shard >= s->layout.shards) {
        log_error("shard %u does not exist: namespace \"%s\" has %u shards", s->shard, s->cfg->ns,
                  s->layout.shards);
        return -1;
    }
    uint16_t n = s->layout.node_of[s->shard];
    if (n == 0)
        s->node = s->home;
    else if (!(s->node = lapse_redis_new(&s->cfg->nodes[n], s->cfg->redis_connect_timeout_ms,
                                         s->cfg->redis_command_timeout_ms))) {
        log_error("out of memory");
        return -1;
    }
    return 0;
}

/* Removes acknowledged IDs from Redis. On a Redis failure they stay queued
 * for the next pass (their leases keep them from firing meanwhile; if the
 * outage outlasts the lease they fire again: at-least-once). */
static void scanner_ack(lapse_scanner *s)
{
    const char *argv[LAPSE_SHARD_NKEYS + 2 * ACK_CHUNK];
    size_t argvlen[LAPSE_SHARD_NKEYS + 2 * ACK_CHUNK];
    while (s->acks) {
        int argc = LAPSE_SHARD_NKEYS;
        for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
            argv[k] = s->keys[k], argvlen[k] = strlen(s->keys[k]);
        struct flight *f = s->acks;
        for (int i = 0; f && i < ACK_CHUNK; i++, f = f->next) {
            argv[argc] = f->id, argvlen[argc++] = f->id_len;
            argv[argc] = f->lease, argvlen[argc++] = f->lease_len;
        }
        redisReply *r = lapse_redis_eval(s->node, LAPSE_SCRIPT_ACK, LAPSE_SHARD_NKEYS, argc, argv,
                                         argvlen);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            lapse_log_limited(&s->lim_redis, 1, LAPSE_LOG_WARN, "shard %u: ack: %s", s->shard,
                              r ? r->str : lapse_redis_errstr(s->node));
            if (r)
                freeReplyObject(r);
            return;
        }
        freeReplyObject(r);
        while (s->acks != f) {
            struct flight *done = s->acks;
            s->acks = done->next;
            s->nacks--;
            free(done);
        }
    }
}

/* Sends the event of one claimed ID; the flight record rides along as the
 * message's opaque and comes back in scanner_delivered. */
static void scanner_dispatch(lapse_scanner *s, const redisReply *id, long long deadline,
                             const redisReply *payload, long long seq, const char *lease,
                             size_t lease_len)
{
    struct flight *f = malloc(sizeof *f + id->len);
    if (!f)
        return; /* the lease runs out and the ID is claimed again */
    memcpy(f->id, id->str, id->len);
    f->id_len = id->len;
    memcpy(f->lease, lease, lease_len + 1);
    f->lease_len = lease_len;
    f->next = NULL;
    struct lapse_event ev = {
        .ns = s->cfg->ns,
        .id = id->str,
        .id_len = id->len,
        .deadline_ms = deadline,
        .fired_ms = lapse_clock_ms(),
        .shard = s->shard,
        .payload = payload->type == REDIS_REPLY_STRING ? payload->str : NULL,
        .payload_len = payload->type == REDIS_REPLY_STRING ? payload->len : 0,
        .seq = seq,
    };
    size_t len;
    char *value = lapse_event_encode(&ev, &len);
    char err[256];
    if (!value || lapse_sink_send(s->sink, id->str, id->len, value, len, f, err, sizeof err) < 0) {
        lapse_log_limited(&s->lim_kafka, 2, LAPSE_LOG_WARN, "shard %u: %s", s->shard,
                          value ? err : "out of memory");
        free(f);
        return;
    }
    s->inflight++;
    s->sent++;
}

/*
 * Claims and dispatches up to `want` due IDs. Returns how long the loop may
 * wait before claiming again: 0 when the batch was full (more are due), the
 * time to the next deadline otherwise, at most scanner.poll_ms.
 */
static int scanner_claim(lapse_scanner *s, int want)
{
    char batch[16], lease_ms[16];
    snprintf(batch, sizeof batch, "%d", want);
    snprintf(lease_ms, sizeof lease_ms, "%d", s->cfg->scanner_lease_ms);
    enum { ARGC = LAPSE_SHARD_NKEYS + 2, PER_ID = 4 /* id, deadline, payload, seq */ };
    const char *argv[ARGC];
    size_t argvlen[ARGC];
    for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
        argv[k] = s->keys[k];
    argv[LAPSE_SHARD_NKEYS] = batch;
    argv[LAPSE_SHARD_NKEYS + 1] = lease_ms;
    for (int i = 0; i < ARGC; i++)
        argvlen[i] = strlen(argv[i]);
    redisReply *r = lapse_redis_eval(s->node, LAPSE_SCRIPT_CLAIM, LAPSE_SHARD_NKEYS, ARGC, argv,
                                     argvlen);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        (r->elements - 3) % PER_ID != 0) {
        lapse_log_limited(&s->lim_redis, 1, LAPSE_LOG_WARN, "shard %u: claim: %s", s->shard,
                          !r ? lapse_redis_errstr(s->node)
                          : r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        if (r)
            freeReplyObject(r);
        int wait = lapse_redis_backoff_ms(s->node);
        return wait > s->cfg->scanner_poll_ms ? wait : s->cfg->scanner_poll_ms;
    }
    long long now = r->element[0]->integer, next = r->element[2]->integer;
    const redisReply *lease = r->element[1];
    size_t claimed = (r->elements - 3) / PER_ID;
    for (size_t i = 0; i < claimed; i++) {
        redisReply **e = r->element + 3 + PER_ID * i;
        scanner_dispatch(s, e[0], e[1]->integer, e[2], e[3]->integer, lease->str, lease->len);
    }
    freeReplyObject(r);
    if (claimed == (size_t)want)
        return 0;
    if (next < 0 || next - now > s->cfg->scanner_poll_ms)
        return s->cfg->scanner_poll_ms;
    return next > now ? (int)(next - now) : 0;
}

int lapse_scanner_serve(lapse_scanner *s, volatile sig_atomic_t *stop)
{
    char err[512];
    if (scanner_attach(s, stop) < 0)
        return *stop ? LAPSE_SCANNER_OK : LAPSE_SCANNER_FAIL;
    log_info("serving shard %u of %u (namespace \"%s\", redis %s)", s->shard, s->layout.shards,
             s->cfg->ns, lapse_redis_name(s->node));
    int rc = LAPSE_SCANNER_OK;
    while (!*stop) {
        lapse_sink_poll(s->sink, 0);
        if (lapse_sink_fatal(s->sink, err, sizeof err)) {
            log_error("shard %u: %s", s->shard, err);
            rc = LAPSE_SCANNER_FATAL;
            break;
        }
        scanner_ack(s);
        int wait = s->cfg->scanner_poll_ms;
        size_t room = (size_t)s->cfg->scanner_max_inflight - s->inflight;
        if (s->inflight < (size_t)s->cfg->scanner_max_inflight)
            wait = scanner_claim(s, room < (size_t)s->cfg->scanner_batch ? (int)room
                                                                          : s->cfg->scanner_batch);
        if (wait > 0)
            lapse_sink_poll(s->sink, wait);
    }
    /* Stop claiming; give in-flight events a bounded time to be answered and
     * remove the acknowledged ones. The rest keep their leases in Redis and
     * are claimed again by the next scanner. */
    int64_t until = lapse_clock_mono_ms() + SHUTDOWN_WAIT_MS;
    while (s->inflight > 0 && lapse_clock_mono_ms() < until)
        lapse_sink_poll(s->sink, 50);
    scanner_ack(s);
    log_info("shard %u: stopped (%llu sent, %llu acknowledged, %llu failed, %zu unanswered)",
             s->shard, (unsigned long long)s->sent, (unsigned long long)s->acked,
             (unsigned long long)s->failed, s->inflight);
    return rc;
}
