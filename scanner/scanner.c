/*
 * scanner — the handle and the loop (see scanner.h): attach, acquire,
 * settle, claim, wait; the rest lives in the files scanner_priv.h lists, which
 * between them keep the invariants:
 *
 * 1. Never early: "due" is decided inside claim.lua by the Redis server's
 *    clock; this process never judges a deadline.
 * 2. At-least-once: an ID leaves Redis only through ack.lua, after Kafka
 *    acknowledged its event, and only if its score is still the lease the
 *    claim gave it. Until then it stays in the shard, leased; a lease that
 *    runs out (crash, Kafka gave up: message.timeout.ms < lease_ms) makes it
 *    due again.
 * 3. One active scanner per shard: the shard's lock (acquire.lua) holds this
 *    scanner's random token with a PX lease that every claim renews. Every
 *    claim and ack checks the token in Redis (fencing), so a scanner that was
 *    paused past its lease, or cut off, cannot claim or remove anything once
 *    another took over; it drops back to standby. The one that takes over
 *    gives the previous holder's in-flight IDs their deadlines back at once.
 * 4. Bounded memory: no claim while scanner.max_inflight events are
 *    unanswered (a Kafka outage parks the backlog in Redis, not here).
 *
 * Cost per ID is what bounds throughput (the scanner shares the machine
 * with Redis), so the hot path allocates per claim, not per ID: a claim's
 * flights live in one block with its reply (struct batch, scanner_priv.h), events
 * are encoded into one reused buffer, and acks go back grouped by claim.
 */
#include "scanner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "layout.h"
#include "log.h"
#include "metrics.h"
#include "redis.h"
#include "sink.h"
#include "scanner_priv.h"

static void scanner_kafka_error(void *ctx)
{
    lapse_scanner *s = ctx;
    METRIC_INC(s, kafka_errors);
}

/* A token nobody else holds: host:pid:random. */
static void scanner_token(lapse_scanner *s)
{
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    unsigned long long rnd = 0;
    FILE *u = fopen("/dev/urandom", "rb");
    if (!u || fread(&rnd, sizeof rnd, 1, u) != 1)
        rnd = (unsigned long long)lapse_clock_ms() ^ ((unsigned long long)getpid() << 32);
    if (u)
        fclose(u);
    snprintf(s->token, sizeof s->token, "%s:%d:%016llx", host, (int)getpid(), rnd);
}

/*
 * Metrics: shard N listens on scanner.metrics_port + N, so the scanners of
 * one host share one config. A port that cannot be bound (another process
 * holds it: e.g. this shard's active scanner on the same host while this
 * one stands by) turns metrics off, never dispatch: the scanner says so
 * once and tries again every METRICS_RETRY_MS, quietly while the reason
 * stays the same (a new reason: at most a line a minute), and says when it
 * listens.
 */
#define METRICS_RETRY_MS 10000
static void scanner_metrics_listen(lapse_scanner *s)
{
    char err[sizeof s->metrics_err];
    s->metrics_retry_ms = lapse_clock_mono_ms() + METRICS_RETRY_MS;
    s->httpd = lapse_metrics_serve(&s->metrics, s->cfg->scanner_metrics_bind, s->metrics_port, err,
                                   sizeof err);
    if (s->httpd) {
        int v6 = strchr(s->cfg->scanner_metrics_bind, ':') != NULL;
        log_info("shard %u: metrics on http://%s%s%s:%d/metrics%s", s->shard, v6 ? "[" : "",
                 s->cfg->scanner_metrics_bind, v6 ? "]" : "", s->metrics_port,
                 s->metrics_err[0] ? " (the port is free again)" : "");
        s->metrics_err[0] = '\0';
    } else if (strcmp(err, s->metrics_err) != 0 &&
               (!s->metrics_err[0] || lapse_clock_mono_ms() - s->metrics_warned_ms >= 60000)) {
        s->metrics_warned_ms = lapse_clock_mono_ms();
        log_warn("shard %u: %s; metrics are off (dispatch goes on), trying again every %d s",
                 s->shard, err, METRICS_RETRY_MS / 1000);
        snprintf(s->metrics_err, sizeof s->metrics_err, "%s", err);
    }
}

/* Tries the metrics port again when it was taken and the time has come. */
void scanner_metrics_retry(lapse_scanner *s, int64_t now)
{
    if (s->metrics_port && !s->httpd && now >= s->metrics_retry_ms)
        scanner_metrics_listen(s);
}

/*
 * The housekeeping of every pass of the loop, awake or napping (wake.c),
 * in one place and on one clock. Each step keeps its own next time, so a
 * pass costs a comparison per step until one is due:
 *   metrics_retry  the metrics port, if it was taken at start: every
 *                  METRICS_RETRY_MS
 *   log_moved      what the Redis handles noticed (a primary that moved,
 *                  an eviction policy): every pass, no call to Redis
 *   memory         Redis's memory and replicas into the metrics (only when
 *                  they are served): every LAPSE_MEMORY_EVERY_MS
 *   forget         the walk over offline records past the retention
 *                  (forget.c): a slice a second during a pass, a pass
 *                  every 10 s at most
 * The loop's own steps (Kafka's answers, the lock, the claim, the nap) are
 * lapse_scanner_serve's.
 */
void scanner_tend(lapse_scanner *s)
{
    int64_t now = lapse_clock_mono_ms();
    scanner_metrics_retry(s, now);
    scanner_log_moved(s);
    scanner_memory(s, now);
    scanner_forget(s, now);
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
    s->settle_tail = &s->settle;
    for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
        lapse_key(s->keys[k], LAPSE_KEY_MAX, cfg, lapse_shard_keys[k], shard);
    lapse_key(s->lease_key, LAPSE_KEY_MAX, cfg, LAPSE_KEY_LEASE, shard);
    lapse_key(s->sleep_key, LAPSE_KEY_MAX, cfg, LAPSE_KEY_SLEEP, shard);
    lapse_key(s->bell_key, LAPSE_KEY_MAX, cfg, LAPSE_KEY_BELL, shard);
    scanner_token(s);
    s->metrics.ns = cfg->ns;
    s->metrics.shard = shard;
    s->metrics.memory_used = s->metrics.memory_max = s->metrics.evicting = -1;
    s->metrics.offline = -1;
    strcpy(s->forget_cursor, "0");
    s->metrics.replicas = s->metrics.replicas_missing = -1;
    s->home = lapse_node_open(cfg, 0);
    s->sink = lapse_sink_new(cfg, scanner_delivered, scanner_kafka_error, s, errstr, size);
    if (!s->home || !s->sink) {
        if (!s->home)
            snprintf(errstr, size, "out of memory");
        lapse_scanner_free(s);
        return NULL;
    }
    if (cfg->scanner_metrics_port) {
        long port = (long)cfg->scanner_metrics_port + shard;
        if (port > 65535) {
            snprintf(errstr, size,
                     "%s: scanner.metrics_port: %d + shard %u = %ld is above 65535 (shard N "
                     "listens on metrics_port + N): lower it",
                     cfg->path, cfg->scanner_metrics_port, shard, port);
            lapse_scanner_free(s);
            return NULL;
        }
        if (!lapse_httpd_addr_ok(cfg->scanner_metrics_bind)) {
            snprintf(errstr, size,
                     "%s: scanner.metrics_bind: \"%s\" is not an IPv4 or IPv6 address", cfg->path,
                     cfg->scanner_metrics_bind);
            lapse_scanner_free(s);
            return NULL;
        }
        s->metrics_port = (int)port;
        scanner_metrics_listen(s);
    }
    return s;
}

void lapse_scanner_free(lapse_scanner *s)
{
    if (!s)
        return;
    lapse_sink_free(s->sink); /* answers what is still queued: frees those flights */
    lapse_httpd_stop(s->httpd);
    scanner_drop_acks(s);
    free(s->event);
    for (size_t i = 0; s->peers && i < s->cfg->nnodes; i++)
        if (s->peers[i] != s->node && s->peers[i] != s->home)
            lapse_redis_free(s->peers[i]);
    free(s->peers);
    if (s->node != s->home)
        lapse_redis_free(s->node);
    lapse_redis_free(s->home);
    lapse_redis_free(s->ahead);
    scanner_bell_free(s);
    lapse_layout_free(&s->layout);
    free(s);
}

/*
 * A fatal Kafka error (for the idempotent producer: a sequence out of sync
 * with the broker) ends that producer instance, not the service: a new
 * instance starts clean. Its unanswered events are purged; their IDs stay
 * leased and are claimed again when the leases run out. Returns -1 (exit
 * with LAPSE_SCANNER_FATAL) when it keeps happening: SINK_FATAL_MAX times within
 * FATAL_WINDOW_MS, or the new instance cannot be made.
 */
#define FATAL_WINDOW_MS 60000
static int scanner_new_sink(lapse_scanner *s, const char *why)
{
    int64_t now = lapse_clock_mono_ms();
    int64_t oldest = s->sink_fatal_at[s->sink_fatal_next];
    s->sink_fatal_at[s->sink_fatal_next] = now;
    s->sink_fatal_next = (s->sink_fatal_next + 1) % SINK_FATAL_MAX;
    if (oldest && now - oldest < FATAL_WINDOW_MS) {
        log_error("shard %u: %s (%d fatal Kafka errors within %d s: giving up)", s->shard, why,
                  SINK_FATAL_MAX, FATAL_WINDOW_MS / 1000);
        return -1;
    }
    log_error("shard %u: %s; starting a new Kafka producer (%zu unanswered events will be "
              "claimed again when their leases run out)",
              s->shard, why, s->inflight);
    METRIC_INC(s, kafka_errors);
    lapse_sink_free(s->sink); /* purges: every flight is answered (failed) and freed */
    char err[512];
    s->sink = lapse_sink_new(s->cfg, scanner_delivered, scanner_kafka_error, s, err, sizeof err);
    if (!s->sink) {
        log_error("shard %u: %s", s->shard, err);
        return -1;
    }
    return 0;
}

/*
 * The busy figure (lapse_scanner_busy_seconds_total): the loop's time while
 * it holds the shard, less its waits. busy_from opens a stretch of work at
 * the top of a pass (only when active: a standby is not busy), busy_until
 * closes it before each wait and adds it. The waits themselves (Kafka or the
 * next deadline, the idle nap, the standby's lock poll) are never counted.
 */
static void busy_from(lapse_scanner *s)
{
    if (!s->busy_since_us)
        s->busy_since_us = lapse_clock_mono_us();
}

static void busy_until(lapse_scanner *s)
{
    if (!s->busy_since_us)
        return;
    int64_t d = lapse_clock_mono_us() - s->busy_since_us;
    if (d > 0)
        METRIC_ADD(s, busy_us, (uint64_t)d);
    s->busy_since_us = 0;
}

int lapse_scanner_serve(lapse_scanner *s, volatile sig_atomic_t *stop)
{
    char err[512];
    if (scanner_attach(s, stop) < 0) {
        if (*stop || s->retired)
            return LAPSE_SCANNER_OK;
        /* the home node (layout) or the shard's own node may refuse us */
        return lapse_redis_refused(s->home) || (s->node && lapse_redis_refused(s->node))
                   ? LAPSE_SCANNER_REFUSED
                   : LAPSE_SCANNER_FAIL;
    }
    log_info("shard %u of %u (namespace \"%s\", redis %s): waiting for the lease", s->shard,
             s->layout.shards, s->cfg->ns, lapse_redis_name(s->node));
    /* The lock must be renewed well within the lease even when idle. */
    int max_wait = s->cfg->scanner_lease_ms / 3;
    if (max_wait > s->cfg->scanner_poll_ms)
        max_wait = s->cfg->scanner_poll_ms;
    int rc = LAPSE_SCANNER_OK;
    uint64_t reconnects = 0;
    while (!*stop && !s->retired) {
        if (s->active)
            busy_from(s);
        else
            busy_until(s);
        lapse_sink_poll(s->sink, 0);
        if (lapse_sink_fatal(s->sink, err, sizeof err) && scanner_new_sink(s, err) < 0) {
            rc = LAPSE_SCANNER_FATAL;
            break;
        }
        if (lapse_redis_reconnects(s->node) != reconnects) {
            reconnects = lapse_redis_reconnects(s->node);
            METRIC_SET(s, redis_reconnects, reconnects);
            s->seen_below = 0; /* perhaps another server now (claim.c: scanner_seen) */
        }
        scanner_tend(s);
        if (!s->active) {
            if (!scanner_acquire(s)) {
                /* standby: poll the lock often enough to take over promptly */
                lapse_sink_poll(s->sink, s->cfg->scanner_lease_ms / 10 + 1);
                continue;
            }
        }
        scanner_ack(s, 0);
        if (!s->active)
            continue;
        size_t max = (size_t)s->cfg->scanner_max_inflight;
        size_t room = s->inflight < max ? max - s->inflight : 0;
        if (room > (size_t)s->cfg->scanner_batch)
            room = (size_t)s->cfg->scanner_batch;
        int wait = scanner_claim(s, (int)room); /* room 0: only renews the lock */
        if (wait < 0)
            continue;
        /* Nothing due within poll_ms, nothing in flight: nap until due or
         * woken (wake.c). A busy shard (the next deadline sooner) waits as
         * before: a nap would cost it one more call per claim. */
        if (wait >= s->cfg->scanner_poll_ms && room > 0 && s->cfg->scanner_idle_ms > 0 &&
            s->inflight == 0 && !s->settle && !s->ahead_pending) {
            busy_until(s);
            if (scanner_nap(s, stop) == 0)
                continue;
            busy_from(s); /* it did not nap: the pass goes on */
        }
        if (!s->active)
            continue;
        if (room == 0 || wait > max_wait)
            wait = max_wait;
        /* Nothing more due for `wait` ms: what this pass claimed goes to
         * Kafka now rather than after linger.ms (which batches a backlog). */
        if (wait > 0) {
            busy_until(s);
            lapse_sink_push(s->sink, wait);
        }
    }
    busy_until(s);
    if (s->active && s->ahead_pending && s->sink && rc == LAPSE_SCANNER_OK) {
        s->no_ahead = 1; /* its IDs are ours: send them too */
        scanner_claim(s, 0);
    }
    scanner_ahead_drop(s);
    /* Stop claiming; give in-flight events a bounded time to be answered,
     * settle the acknowledged ones and hand the shard over. The rest keep
     * their leases; the next holder takes them back at once. */
    int64_t until = lapse_clock_mono_ms() + SHUTDOWN_WAIT_MS;
    while (s->sink && s->inflight > 0 && lapse_clock_mono_ms() < until)
        lapse_sink_poll(s->sink, 50);
    scanner_ack(s, 1);
    if (s->active) {
        const char *args[1] = {s->token};
        redisReply *r = scanner_eval(s, LAPSE_SCRIPT_RELEASE, args, NULL, 1);
        if (r)
            freeReplyObject(r);
    }
    log_info("shard %u: stopped (%llu sent, %llu acknowledged, %llu failed, %zu unanswered)",
             s->shard, (unsigned long long)atomic_load(&s->metrics.sent),
             (unsigned long long)atomic_load(&s->metrics.acked),
             (unsigned long long)atomic_load(&s->metrics.failed), s->inflight);
    return rc;
}
