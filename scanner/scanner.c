/*
 * scanner — see scanner.h for the loop. This file keeps the invariants:
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
 * flights live in one block with its reply (struct batch, shard.h), events
 * are encoded into one reused buffer, and acks go back grouped by claim.
 */
#include "scanner.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "event.h"
#include "hash.h"
#include "layout.h"
#include "log.h"
#include "metrics.h"
#include "redis.h"
#include "sink.h"
#include "shard.h"

static void scanner_kafka_error(void *ctx)
{
    lapse_scanner *s = ctx;
    INC(kafka_errors);
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
    for (int k = 0; k < NKEYS; k++)
        lapse_key(s->keys[k], KEY_MAX, cfg, lapse_shard_keys[k], shard);
    lapse_key(s->lease_key, KEY_MAX, cfg, LAPSE_KEY_LEASE, shard);
    scanner_token(s);
    s->metrics.ns = cfg->ns;
    s->metrics.shard = shard;
    s->home = lapse_redis_new(cfg, 0);
    s->sink = lapse_sink_new(cfg, scanner_delivered, scanner_kafka_error, s, errstr, size);
    if (!s->home || !s->sink) {
        if (!s->home)
            snprintf(errstr, size, "out of memory");
        lapse_scanner_free(s);
        return NULL;
    }
    if (cfg->scanner_metrics_port &&
        !(s->metrics_srv = lapse_metrics_serve(&s->metrics, cfg->scanner_metrics_bind,
                                               cfg->scanner_metrics_port, errstr, size))) {
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
    lapse_metrics_stop(s->metrics_srv);
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
    lapse_layout_free(&s->layout);
    free(s);
}

void scanner_redis_error(lapse_scanner *s, const char *what, const redisReply *r)
{
    INC(redis_errors);
    lapse_log_limited(&s->lim_redis, 1, LAPSE_LOG_WARN, "shard %u: %s: %s", s->shard, what,
                      !r ? lapse_redis_errstr(s->node)
                      : r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
}

/* Publishes the layout followed (metrics: splitting, layout_epoch). */
static void scanner_layout_gauges(lapse_scanner *s)
{
    SET(splitting, s->layout.splitting ? 1 : 0);
    SET(layout_epoch, (int64_t)s->layout.epoch);
}

/* Reads the layout and opens the shard's node, waiting out a Redis outage
 * for up to redis.retry_timeout_ms (a start before Redis, a failover).
 * Returns 0, or -1 on a lasting problem (not initialised, bad shard,
 * refused, or still unreachable then). */
static int scanner_attach(lapse_scanner *s, volatile sig_atomic_t *stop)
{
    char err[512];
    int64_t give_up = lapse_clock_mono_ms() + s->cfg->redis_retry_timeout_ms;
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
        /* a wrong password waits for nothing */
        if (lapse_redis_refused(s->home) || lapse_clock_mono_ms() >= give_up) {
            log_error("%s", lapse_redis_errstr(s->home));
            return -1;
        }
        SET(redis_up, 0);
        lapse_log_limited(&s->lim_redis, 1, LAPSE_LOG_WARN, "waiting for Redis: %s",
                          lapse_redis_errstr(s->home));
        lapse_clock_sleep_ms(200);
    }
    if (*stop)
        return -1;
    if (s->shard >= s->layout.shards) {
        log_error("shard %u does not exist: namespace \"%s\" has %u shards", s->shard, s->cfg->ns,
                  s->layout.shards);
        return -1;
    }
    uint16_t n = s->layout.node_of[s->shard];
    s->peers = calloc(s->cfg->nnodes, sizeof *s->peers);
    if (!s->peers) {
        log_error("out of memory");
        return -1;
    }
    s->peers[0] = s->home;
    scanner_layout_gauges(s);
    SET(redis_up, 1);
    SET(attached, 1);
    if (n == 0)
        s->node = s->home;
    else if (!(s->node = s->peers[n] = lapse_redis_new(s->cfg, n))) {
        log_error("out of memory");
        return -1;
    }
    return 0;
}

/* Re-reads the layout after claim.lua said it changed (split or finish).
 * The shard itself never moves: only what is known about the others. */
static void scanner_reload(lapse_scanner *s)
{
    struct lapse_layout l;
    char err[512];
    if (lapse_layout_load(s->home, s->cfg, &l, err, sizeof err) != 0) {
        INC(redis_errors);
        lapse_log_limited(&s->lim_redis, 1, LAPSE_LOG_WARN, "shard %u: layout: %s", s->shard,
                          err);
        return;
    }
    if (l.epoch != s->layout.epoch)
        log_info("shard %u: layout epoch %lld: %u shards%s", s->shard, (long long)l.epoch,
                 l.shards, l.splitting ? ", splitting" : "");
    lapse_layout_free(&s->layout);
    s->layout = l;
    scanner_layout_gauges(s);
}

/* Runs a shard script with the shard's keys and lock, then `args`. */
redisReply *scanner_eval(lapse_scanner *s, enum lapse_script script, const char **args,
                                const size_t *lens, int nargs)
{
    const char *argv[NKEYS + 8];
    size_t argvlen[NKEYS + 8];
    for (int k = 0; k < NKEYS; k++)
        argv[k] = s->keys[k], argvlen[k] = strlen(s->keys[k]);
    for (int i = 0; i < nargs; i++)
        argv[NKEYS + i] = args[i], argvlen[NKEYS + i] = lens ? lens[i] : strlen(args[i]);
    redisReply *r = lapse_redis_eval(s->node, script, NKEYS, NKEYS + nargs, argv, argvlen);
    SET(redis_up, r != NULL); /* NULL: the node did not answer (redis.h) */
    return r;
}

/* Reads and drops the reply of a claim sent ahead, if one is out: its IDs
 * (if it got any) keep their leases and are claimed again when those run
 * out, or at once by the next holder of the shard (acquire.lua). */
static void scanner_ahead_drop(lapse_scanner *s)
{
    redisReply *r;
    if (s->ahead_pending && lapse_redis_get_reply(s->ahead, &r) == 0)
        freeReplyObject(r);
    s->ahead_pending = 0;
}

/* Lost the lock: forget what is queued for settling (the new holder
 * redelivers those IDs) and go back to standby. */
void scanner_fenced(lapse_scanner *s)
{
    scanner_ahead_drop(s);
    log_warn("shard %u: lost the lease (paused or cut off for longer than %d ms); "
             "another scanner serves the shard now; back to standby",
             s->shard, s->cfg->scanner_lease_ms);
    INC(fenced);
    s->active = 0;
    SET(lease_held, 0);
    scanner_drop_acks(s);
}

/* Tries to become the shard's active scanner. Returns 1 if it did. */
static int scanner_acquire(lapse_scanner *s)
{
    char lease[16];
    snprintf(lease, sizeof lease, "%d", s->cfg->scanner_lease_ms);
    const char *args[2] = {s->token, lease};
    redisReply *r = scanner_eval(s, LAPSE_SCRIPT_ACQUIRE, args, NULL, 2);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        scanner_redis_error(s, "acquire", r);
        if (r)
            freeReplyObject(r);
        return 0;
    }
    int got = r->element[0]->integer == 1;
    if (got) {
        s->active = 1;
        s->term++;
        s->backlog_tokens = s->cfg->scanner_catchup_rate;
        s->backlog_refill_ms = lapse_clock_mono_ms();
        INC(takeovers);
        ADD(recovered, (uint64_t)r->element[1]->integer);
        SET(lease_held, 1);
        log_info("shard %u: active (token %s); %lld in-flight IDs of a previous holder due again",
                 s->shard, s->token, r->element[1]->integer);
    } else {
        static struct lapse_log_limit lim;
        lapse_log_limited(&lim, 1, LAPSE_LOG_INFO, "shard %u: standby; held by %s", s->shard,
                          r->element[1]->type == REDIS_REPLY_STRING ? r->element[1]->str : "?");
    }
    freeReplyObject(r);
    return got;
}

/* Sends the event of one claimed ID; the flight record rides along as the
 * message's opaque and comes back in scanner_delivered. Returns 0, or -1 if
 * it was not sent (its lease runs out and the ID is claimed again). */
static int scanner_dispatch(lapse_scanner *s, struct flight *f, long long deadline,
                            const redisReply *payload /* NULL: none */, long long seq)
{
    struct lapse_event ev = {
        .ns = s->cfg->ns,
        .id = f->id,
        .id_len = f->id_len,
        .deadline_ms = deadline,
        .fired_ms = lapse_clock_ms(),
        .shard = s->shard,
        .payload = payload && payload->type == REDIS_REPLY_STRING ? payload->str : NULL,
        .payload_len = payload && payload->type == REDIS_REPLY_STRING ? payload->len : 0,
        .seq = seq,
    };
    size_t need = lapse_event_size(&ev);
    if (need > s->event_size) {
        char *e = realloc(s->event, need);
        if (!e) {
            lapse_log_limited(&s->lim_kafka, 2, LAPSE_LOG_WARN, "shard %u: out of memory",
                              s->shard);
            return -1;
        }
        s->event = e;
        s->event_size = need;
    }
    size_t len = lapse_event_write(&ev, s->event);
    char err[256];
    if (lapse_sink_send(s->sink, f->id, f->id_len, s->event, len, f, err, sizeof err) < 0) {
        lapse_log_limited(&s->lim_kafka, 2, LAPSE_LOG_WARN, "shard %u: %s", s->shard, err);
        return -1;
    }
    lapse_metrics_lateness(&s->metrics, ev.fired_ms - deadline);
    s->inflight++;
    INC(sent);
    SET(inflight, (int64_t)s->inflight);
    return 0;
}

/* A claimed ID's deadline from its decimal string (claim.lua passes Redis's
 * own formatting of the score through: an integer). */
static long long scanner_deadline(const char *p, size_t len)
{
    long long v = 0;
    size_t i = len > 0 && p[0] == '-';
    if (i == len || len > 18) /* more digits could overflow */
        goto other;
    for (; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            goto other;
        v = v * 10 + (p[i] - '0');
    }
    return p[0] == '-' ? -v : v;
other:; /* not an integer (never written by lapse): what strtod makes of it,
           * within what a long long holds (-inf, nan: 0) */
    char buf[64];
    if (len >= sizeof buf)
        return 0;
    memcpy(buf, p, len);
    buf[len] = 0;
    double d = strtod(buf, NULL);
    return d > -9e18 && d < 9e18 ? (long long)d : d >= 9e18 ? LLONG_MAX : 0;
}

/*
 * The IDs and deadlines of claim.lua's `claimed` element: "id deadline id
 * deadline ..." in one string, or an array of them. With fl == NULL,
 * returns how many there are (-1: malformed); else fills fl[i].id/id_len
 * and deadlines[i] and returns the count.
 */
static long scanner_claimed(const redisReply *c, struct flight *fl, long long *deadlines)
{
    if (c->type == REDIS_REPLY_ARRAY) {
        if (c->elements % 2)
            return -1;
        for (size_t i = 0; i < c->elements; i++)
            if (c->element[i]->type != REDIS_REPLY_STRING)
                return -1;
        for (size_t i = 0; fl && i < c->elements / 2; i++) {
            const redisReply *id = c->element[2 * i], *d = c->element[2 * i + 1];
            fl[i].id = id->str, fl[i].id_len = id->len;
            deadlines[i] = scanner_deadline(d->str, d->len);
        }
        return (long)(c->elements / 2);
    }
    if (c->type != REDIS_REPLY_STRING)
        return -1;
    const char *p = c->str, *end = c->str + c->len;
    long n = 0;
    while (p < end) { /* pairs of tokens, one space between */
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        if (!sp || sp == p)
            return -1;
        const char *d = sp + 1, *e = memchr(d, ' ', (size_t)(end - d));
        if (!e)
            e = end;
        if (e == d)
            return -1;
        if (fl) {
            fl[n].id = p, fl[n].id_len = (size_t)(sp - p);
            deadlines[n] = scanner_deadline(d, (size_t)(e - d));
        }
        n++;
        p = e < end ? e + 1 : end;
        if (e < end && p == end)
            return -1; /* a trailing space */
    }
    return n;
}

/* How many overdue (not fresh) IDs the catch-up budget allows now. */
static int scanner_backlog_budget(lapse_scanner *s, int want)
{
    int rate = s->cfg->scanner_catchup_rate;
    if (rate == 0)
        return want;
    int64_t now = lapse_clock_mono_ms();
    s->backlog_tokens += (double)(now - s->backlog_refill_ms) * rate / 1000.0;
    if (s->backlog_tokens > rate) /* at most one second of burst */
        s->backlog_tokens = rate;
    s->backlog_refill_ms = now;
    int budget = (int)s->backlog_tokens;
    return budget < want ? budget : want;
}

/* claim.lua's argv (keys, then arguments) for up to `want` IDs, the
 * numbers written into buf. Returns argc. */
enum { CLAIM_NKEYS = NKEYS + 1, CLAIM_ARGC = CLAIM_NKEYS + 6 };
static int scanner_claim_argv(lapse_scanner *s, int want, char buf[5][24], const char **argv,
                              size_t *argvlen)
{
    snprintf(buf[0], 24, "%d", want);
    snprintf(buf[1], 24, "%d", s->cfg->scanner_lease_ms);
    snprintf(buf[2], 24, "%d", s->cfg->scanner_fresh_ms);
    snprintf(buf[3], 24, "%d", scanner_backlog_budget(s, want));
    snprintf(buf[4], 24, "%lld", (long long)s->layout.epoch);
    const char *args[6] = {s->token, buf[0], buf[1], buf[2], buf[3], buf[4]};
    for (int k = 0; k < NKEYS; k++)
        argv[k] = s->keys[k], argvlen[k] = strlen(s->keys[k]);
    argv[NKEYS] = s->lease_key, argvlen[NKEYS] = strlen(s->lease_key);
    for (int i = 0; i < 6; i++)
        argv[CLAIM_NKEYS + i] = args[i], argvlen[CLAIM_NKEYS + i] = strlen(args[i]);
    return CLAIM_ARGC;
}

/*
 * A full claim (a backlog is draining): sends the next one now, on the
 * second connection, so Redis runs it while this one's events are encoded
 * and handed to Kafka; scanner_claim reads it next. A single scanner's loop
 * is otherwise serial (Redis idle while it sends, it idle while Redis
 * claims). Not during a split (twins.c calls the shard's node mid-claim)
 * nor with scanner.catchup_rate (whose budget this claim's backlog IDs have
 * not been charged to yet). Room for it is what max_inflight leaves after
 * this claim's `claimed`.
 */
static void scanner_claim_ahead(lapse_scanner *s, size_t claimed)
{
    size_t max = (size_t)s->cfg->scanner_max_inflight, busy = s->inflight + claimed;
    size_t room = busy < max ? max - busy : 0;
    if (room > (size_t)s->cfg->scanner_batch)
        room = (size_t)s->cfg->scanner_batch;
    if (room == 0 || s->no_ahead || s->layout.splitting || s->cfg->scanner_catchup_rate)
        return;
    if (!s->ahead) {
        uint16_t n = s->layout.node_of[s->shard];
        s->ahead = lapse_redis_new(s->cfg, n);
        if (!s->ahead)
            return;
    }
    char buf[5][24];
    const char *argv[CLAIM_ARGC];
    size_t argvlen[CLAIM_ARGC];
    int argc = scanner_claim_argv(s, (int)room, buf, argv, argvlen);
    int64_t lock_until = lapse_clock_mono_ms() + s->cfg->scanner_lease_ms * 9 / 10;
    if (lapse_redis_append_eval(s->ahead, LAPSE_SCRIPT_CLAIM, CLAIM_NKEYS, argc, argv, argvlen) < 0 ||
        lapse_redis_send(s->ahead) < 0)
        return; /* (the next claim goes the usual way) */
    s->ahead_pending = 1;
    s->ahead_want = (int)room;
    s->ahead_lock_until = lock_until;
}

/*
 * Claims (renewing the lock) and dispatches up to `want` due IDs, or takes
 * the reply of the claim sent ahead (then `want` is that claim's). Returns
 * how long the loop may wait before claiming again: 0 when the batch was
 * full (more are due), else the time to the next deadline, at most
 * scanner.poll_ms; -1 when fenced.
 */
static int scanner_claim(lapse_scanner *s, int want)
{
    int poll_ms = s->cfg->scanner_poll_ms;
    int64_t lock_until;
    redisReply *r;
    if (s->ahead_pending) {
        s->ahead_pending = 0;
        want = s->ahead_want;
        lock_until = s->ahead_lock_until;
        if (lapse_redis_get_reply(s->ahead, &r) < 0)
            return 0; /* (its IDs, if any, are claimed again when their leases run out) */
        if (lapse_redis_noscript(s->ahead, r)) {
            freeReplyObject(r); /* Redis lost its scripts: the usual way loads them */
            return 0;
        }
    } else {
        char buf[5][24];
        const char *argv[CLAIM_ARGC];
        size_t argvlen[CLAIM_ARGC];
        int argc = scanner_claim_argv(s, want, buf, argv, argvlen);
        /* The lock this claim renews lives 90 % of the lease from (at the
         * latest) now: past that, another scanner may own the shard, so
         * what is left of the batch is not sent (a pause, e.g. SIGSTOP,
         * mid-batch). */
        lock_until = lapse_clock_mono_ms() + s->cfg->scanner_lease_ms * 9 / 10;
        r = lapse_redis_eval(s->node, LAPSE_SCRIPT_CLAIM, CLAIM_NKEYS, argc, argv, argvlen);
        SET(redis_up, r != NULL);
    }
    enum { HEAD = 5 /* then the claimed IDs; payloads and seq in extras */ };
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements <= 2 && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer < 0) {
        long long why = r->element[0]->integer;
        freeReplyObject(r);
        if (why == -1) {
            scanner_fenced(s);
            return -1;
        }
        /* -2: the layout changed under us. Right after a fence the new
         * layout may not be published yet: then wait a little. */
        int64_t was = s->layout.epoch;
        scanner_reload(s);
        if (s->layout.epoch != was)
            return 0;
        lapse_log_limited(&s->lim_redis, 1, LAPSE_LOG_WARN,
                          "shard %u: fenced at a layout newer than epoch %lld that is not "
                          "published: an interrupted split or finish? (lapse-scale status)",
                          s->shard, (long long)was);
        return poll_ms;
    }
    long count = -1;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != HEAD + 1 ||
        r->element[4]->type != REDIS_REPLY_ARRAY || r->element[4]->elements % 3 != 0 ||
        (count = scanner_claimed(r->element[HEAD], NULL, NULL)) < 0) {
        scanner_redis_error(s, "claim", r);
        if (r)
            freeReplyObject(r);
        int wait = lapse_redis_backoff_ms(s->node);
        return wait > poll_ms ? wait : poll_ms;
    }
    long long now = r->element[0]->integer, next = r->element[2]->integer;
    const redisReply *lease = r->element[1];
    size_t claimed = (size_t)count;
    long long due_left = r->element[3]->integer;
    if (claimed == (size_t)want && want > 0 && s->active)
        scanner_claim_ahead(s, claimed);
    /* the batch keeps the reply: the flights' IDs live in it */
    struct batch *b =
        claimed ? malloc(sizeof *b + claimed * (sizeof(struct flight) + sizeof(long long) + 1))
                : NULL;
    if (!b) {
        freeReplyObject(r);
        if (claimed)
            return poll_ms; /* the leases run out; claimed again later */
    } else {
        struct flight *fl = (struct flight *)(b + 1);
        long long *deadlines = (long long *)(fl + claimed);
        char *verdict = (char *)(deadlines + claimed);
        *b = (struct batch){
            .reply = r, .lease = lease, .term = s->term, .refs = claimed + 1, .claimed = claimed};
        for (size_t i = 0; i < claimed; i++)
            fl[i] = (struct flight){.batch = b};
        scanner_claimed(r->element[HEAD], fl, deadlines);
        scanner_twins_check(s, fl, claimed, verdict);
        scanner_twins_drop(s, fl, claimed, verdict, lease->str, lease->len);
        const redisReply *extras = r->element[4];
        size_t x = 0; /* the next (k, payload, seq) */
        int old_taken = 0;
        for (size_t i = 0; i < claimed; i++) {
            const redisReply *payload = NULL;
            long long seq = 0;
            if (x < extras->elements && extras->element[x]->integer == (long long)i + 1) {
                payload = extras->element[x + 1];
                seq = extras->element[x + 2]->integer;
                x += 3;
            }
            long long deadline = deadlines[i];
            if (deadline <= now - s->cfg->scanner_fresh_ms)
                old_taken++;
            /* not sent (a stale twin; the lock may have expired; Kafka
             * refused it): it stays leased and is sent later, by whoever
             * holds the lock then */
            if (verdict[i] != 0 || lapse_clock_mono_ms() >= lock_until ||
                scanner_dispatch(s, &fl[i], deadline, payload, seq) < 0)
                b->refs--;
        }
        scanner_batch_unref(b, 1); /* the hold of the loop above */
        if (s->cfg->scanner_catchup_rate)
            s->backlog_tokens -= old_taken;
    }
    ADD(claimed, claimed);
    SET(due, due_left);
    SET(oldest_overdue_ms, next >= 0 && next <= now ? now - next : 0);
    if (claimed == (size_t)want && want > 0)
        return 0;
    if (due_left > 0 && s->cfg->scanner_catchup_rate) { /* held back: wait for budget */
        int step = 1000 / s->cfg->scanner_catchup_rate + 1;
        return step < poll_ms ? step : poll_ms;
    }
    if (next < 0 || next - now > poll_ms)
        return poll_ms;
    return next > now ? (int)(next - now) : 0;
}

/*
 * A fatal Kafka error (for the idempotent producer: a sequence out of sync
 * with the broker) ends that producer instance, not the service: a new
 * instance starts clean. Its unanswered events are purged; their IDs stay
 * leased and are claimed again when the leases run out. Returns -1 (exit
 * with LAPSE_SCANNER_FATAL) when it keeps happening: FATAL_MAX times within
 * FATAL_WINDOW_MS, or the new instance cannot be made.
 */
#define FATAL_MAX 3
#define FATAL_WINDOW_MS 60000
static int scanner_new_sink(lapse_scanner *s, const char *why)
{
    static int64_t seen[FATAL_MAX];
    static int next;
    int64_t now = lapse_clock_mono_ms();
    int64_t oldest = seen[next];
    seen[next] = now;
    next = (next + 1) % FATAL_MAX;
    if (oldest && now - oldest < FATAL_WINDOW_MS) {
        log_error("shard %u: %s (%d fatal Kafka errors within %d s: giving up)", s->shard, why,
                  FATAL_MAX, FATAL_WINDOW_MS / 1000);
        return -1;
    }
    log_error("shard %u: %s; starting a new Kafka producer (%zu unanswered events will be "
              "claimed again when their leases run out)",
              s->shard, why, s->inflight);
    INC(kafka_errors);
    lapse_sink_free(s->sink); /* purges: every flight is answered (failed) and freed */
    char err[512];
    s->sink = lapse_sink_new(s->cfg, scanner_delivered, scanner_kafka_error, s, err, sizeof err);
    if (!s->sink) {
        log_error("shard %u: %s", s->shard, err);
        return -1;
    }
    return 0;
}

int lapse_scanner_serve(lapse_scanner *s, volatile sig_atomic_t *stop)
{
    char err[512];
    if (scanner_attach(s, stop) < 0)
        return *stop ? LAPSE_SCANNER_OK : LAPSE_SCANNER_FAIL;
    log_info("shard %u of %u (namespace \"%s\", redis %s): waiting for the lease",
             s->shard, s->layout.shards, s->cfg->ns, lapse_redis_name(s->node));
    /* The lock must be renewed well within the lease even when idle. */
    int max_wait = s->cfg->scanner_lease_ms / 3;
    if (max_wait > s->cfg->scanner_poll_ms)
        max_wait = s->cfg->scanner_poll_ms;
    int rc = LAPSE_SCANNER_OK;
    uint64_t reconnects = 0;
    while (!*stop) {
        lapse_sink_poll(s->sink, 0);
        if (lapse_sink_fatal(s->sink, err, sizeof err) && scanner_new_sink(s, err) < 0) {
            rc = LAPSE_SCANNER_FATAL;
            break;
        }
        if (lapse_redis_reconnects(s->node) != reconnects) {
            reconnects = lapse_redis_reconnects(s->node);
            SET(redis_reconnects, reconnects);
        }
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
        if (room == 0 || wait > max_wait)
            wait = max_wait;
        /* Nothing more due for `wait` ms: what this pass claimed goes to
         * Kafka now rather than after linger.ms (which batches a backlog). */
        if (wait > 0)
            lapse_sink_push(s->sink, wait);
    }
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
