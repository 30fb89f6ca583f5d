/*
 * lease — the shard's hold on Redis: attaching to its node (the layout),
 * the lock (acquire.lua) and losing it (fenced), and the shard scripts'
 * calls. Everything else in the scanner reaches the shard's node through
 * here or through the connection attached here; this file calls down only
 * into batch.c (a fence forgets what waits to be settled).
 *
 * Keeps invariant 3 of scanner.c: the term is bumped on every acquire, so
 * Kafka's answers to a previous term are never settled (ack.c), and a fence
 * drops back to standby with nothing of the old term left to settle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "layout.h"
#include "log.h"
#include "redis.h"
#include "scanner_priv.h"
#include "waiting.h"

void scanner_redis_error(lapse_scanner *s, const char *what, const lapse_redis *from,
                         const redisReply *r)
{
    METRIC_INC(s, redis_errors);
    lapse_log_limited(&s->lim_redis, 1, LAPSE_LOG_WARN, "shard %u: %s: %s", s->shard, what,
                      !r                             ? lapse_redis_errstr(from)
                      : r->type == REDIS_REPLY_ERROR ? r->str
                                                     : "unexpected reply");
}

void scanner_log_moved(lapse_scanner *s)
{
    const char *m;
    for (size_t i = 0; s->peers && i < s->cfg->nnodes; i++) /* (node and home are peers too) */
        if (s->peers[i] && (m = lapse_redis_moved(s->peers[i])))
            log_warn("shard %u: %s", s->shard, m);
    if (s->ahead && (m = lapse_redis_moved(s->ahead)))
        log_warn("shard %u: claims sent ahead: %s", s->shard, m);
    int error = 0;
    for (size_t i = 0; s->peers && i < s->cfg->nnodes; i++)
        while (s->peers[i] && (m = lapse_redis_policy_news(s->peers[i], &error)))
            LAPSE_LOG(error ? LAPSE_LOG_ERROR : LAPSE_LOG_WARN, "shard %u: %s", s->shard, m);
    while (s->ahead && (m = lapse_redis_policy_news(s->ahead, &error)))
        LAPSE_LOG(error ? LAPSE_LOG_ERROR : LAPSE_LOG_WARN, "shard %u: %s", s->shard, m);
}

void scanner_memory(lapse_scanner *s, int64_t now)
{
    if (!s->httpd || !s->node || now < s->memory_at_ms)
        return;
    s->memory_at_ms = now + LAPSE_MEMORY_EVERY_MS;
    struct lapse_redis_memory m;
    if (lapse_redis_memory(s->node, lapse_shard_slot(s->cfg->ns, s->shard), &m) < 0)
        return; /* (the claims say it is down; the last reading stays) */
    const char *policy = m.policy[0] ? m.policy : s->cfg->redis_policy_checked;
    METRIC_SET(s, memory_used, m.used);
    METRIC_SET(s, memory_max, m.max);
    METRIC_SET(s, evicting, policy ? lapse_redis_policy_evicts(policy) : -1);
    /* with redis.wait_replicas: how many replicas the primary lacks (its
     * writes cannot be confirmed: producers report them failed) */
    int want = s->cfg->redis_wait_replicas;
    METRIC_SET(s, replicas, m.replicas);
    METRIC_SET(s, replicas_missing,
               want <= 0 || m.replicas < 0 ? -1
               : m.replicas >= want        ? 0
                                           : want - m.replicas);
}

/* Publishes the layout followed (metrics: splitting, merging, layout_epoch). */
static void scanner_layout_gauges(lapse_scanner *s)
{
    METRIC_SET(s, splitting, s->layout.state == LAPSE_LAYOUT_SPLITTING);
    METRIC_SET(s, merging, s->layout.state == LAPSE_LAYOUT_MERGING);
    METRIC_SET(s, layout_epoch, (int64_t)s->layout.epoch);
}

/* Reads the layout and opens the shard's node, waiting out a Redis outage
 * for up to redis.retry_timeout_ms (a start before Redis, a failover).
 * Returns 0, or -1 on a lasting problem (not initialised, bad shard,
 * refused, or still unreachable then). */
int scanner_attach(lapse_scanner *s, volatile sig_atomic_t *stop)
{
    char err[512];
    int64_t give_up = lapse_clock_mono_ms() + s->cfg->redis_retry_timeout_ms;
    struct lapse_waiting waiting; /* what it says meanwhile */
    lapse_waiting_init(&waiting, s->cfg, 0, give_up - s->cfg->redis_retry_timeout_ms);
    while (!*stop) {
        int rc = lapse_redis_ensure(s->home) < 0
                     ? -2
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
        METRIC_SET(s, redis_up, 0);
        if (lapse_waiting_line(&waiting, lapse_redis_errstr(s->home), lapse_clock_mono_ms(), err,
                               sizeof err))
            log_warn("%s", err);
        lapse_clock_sleep_ms(200);
    }
    if (*stop)
        return -1;
    if (lapse_layout_retired(&s->layout, s->shard)) {
        log_info("shard %u was retired by a merge: namespace \"%s\" has %u shards; nothing to do",
                 s->shard, s->cfg->ns, s->layout.shards);
        s->retired = 1;
        return -1;
    }
    if (s->shard >= lapse_layout_span(&s->layout)) {
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
    METRIC_SET(s, redis_up, 1);
    METRIC_SET(s, attached, 1);
    if (n == 0)
        s->node = s->home;
    else if (!(s->node = s->peers[n] = lapse_node_open(s->cfg, n))) {
        log_error("out of memory");
        return -1;
    }
    /* the shard's own node refuses as the home node would (a wrong
     * password, an evicting maxmemory-policy); one that is down now is
     * waited for by the loop, as after a failover */
    if (s->node != s->home && lapse_redis_ensure(s->node) < 0) {
        if (lapse_redis_refused(s->node)) {
            log_error("%s", lapse_redis_errstr(s->node));
            return -1;
        }
        /* (said once with the config's line: the loop's own lines about
         * it are rate-limited and name only the server) */
        log_warn("shard %u: its node (%s) does not answer yet, waiting for it: %s", s->shard,
                 s->cfg->nodes[n].where ? s->cfg->nodes[n].where : "?",
                 lapse_redis_errstr(s->node));
    }
    return 0;
}

/* Re-reads the layout after claim.lua said it changed (split or finish).
 * The shard itself never moves: only what is known about the others. */
void scanner_reload(lapse_scanner *s)
{
    struct lapse_layout l;
    char err[512];
    if (lapse_layout_load(s->home, s->cfg, &l, err, sizeof err) != 0) {
        METRIC_INC(s, redis_errors);
        lapse_log_limited(&s->lim_redis, 1, LAPSE_LOG_WARN, "shard %u: layout: %s", s->shard, err);
        return;
    }
    if (l.epoch != s->layout.epoch)
        log_info("shard %u: layout epoch %lld: %u shards%s%s", s->shard, (long long)l.epoch,
                 l.shards, lapse_layout_changing(&l) ? ", " : "",
                 lapse_layout_changing(&l) ? lapse_layout_state_name(l.state) : "");
    /* A finished merge retired this shard: it holds nothing any more
     * (finish waited for that), so the scanner stops (lapse_scanner_serve). */
    if (lapse_layout_retired(&l, s->shard) && !s->retired) {
        log_info("shard %u: retired by a merge (namespace \"%s\" has %u shards): stopping",
                 s->shard, s->cfg->ns, l.shards);
        s->retired = 1;
    }
    lapse_layout_free(&s->layout);
    s->layout = l;
    scanner_layout_gauges(s);
}

/* Runs a shard script with the shard's keys and lock, then `args` (any
 * number: twins.c drops up to 128 at once). NULL on a Redis failure or
 * when out of memory. */
redisReply *scanner_eval(lapse_scanner *s, enum lapse_script script, const char **args,
                         const size_t *lens, int nargs)
{
    enum { SMALL = LAPSE_SHARD_NKEYS + 8 };
    const char *small_argv[SMALL];
    size_t small_len[SMALL];
    const char **argv = small_argv;
    size_t *argvlen = small_len;
    if (LAPSE_SHARD_NKEYS + nargs > SMALL) {
        argv = malloc((size_t)(LAPSE_SHARD_NKEYS + nargs) * sizeof *argv);
        argvlen = malloc((size_t)(LAPSE_SHARD_NKEYS + nargs) * sizeof *argvlen);
        if (!argv || !argvlen) {
            free(argv);
            free(argvlen);
            return NULL;
        }
    }
    for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
        argv[k] = s->keys[k], argvlen[k] = strlen(s->keys[k]);
    for (int i = 0; i < nargs; i++)
        argv[LAPSE_SHARD_NKEYS + i] = args[i],
                                 argvlen[LAPSE_SHARD_NKEYS + i] = lens ? lens[i] : strlen(args[i]);
    redisReply *r = lapse_redis_eval(s->node, script, LAPSE_SHARD_NKEYS, LAPSE_SHARD_NKEYS + nargs,
                                     argv, argvlen);
    if (argv != small_argv) {
        free(argv);
        free(argvlen);
    }
    METRIC_SET(s, redis_up, r != NULL); /* NULL: the node did not answer (redis.h) */
    return r;
}

/* Reads and drops the reply of a claim sent ahead, if one is out: its IDs
 * (if it got any) keep their leases and are claimed again when those run
 * out, or at once by the next holder of the shard (acquire.lua). */
void scanner_ahead_drop(lapse_scanner *s)
{
    redisReply *r;
    if (s->ahead_pending && lapse_redis_get_reply(s->ahead, &r) == 0)
        freeReplyObject(r);
    s->ahead_pending = 0;
}

/* Closes the bell's connection (wake.c), if open: a BLPOP still out ends
 * with it; the next nap opens it again. */
void scanner_bell_free(lapse_scanner *s)
{
    lapse_redis_free(s->bell);
    s->bell = NULL;
    s->bell_pending = 0;
}

/* Lost the lock: forget what is queued for settling (the new holder
 * redelivers those IDs), close the bell, and go back to standby. */
void scanner_fenced(lapse_scanner *s)
{
    scanner_ahead_drop(s);
    scanner_bell_free(s); /* a BLPOP left out would take a token meant for the new holder */
    log_warn("shard %u: lost the lease (paused or cut off for longer than %d ms); "
             "another scanner serves the shard now; back to standby",
             s->shard, s->cfg->scanner_lease_ms);
    METRIC_INC(s, fenced);
    s->active = 0;
    METRIC_SET(s, lease_held, 0);
    scanner_drop_acks(s);
}

/*
 * A standby polls the lock ten times a lease and would say so every time:
 * it logs what changes (it became standby, the lease passed to another
 * holder; taking over is logged by scanner_acquire), and while nothing
 * does, one line every STANDBY_SUMMARY_MS that it is still there.
 */
#define STANDBY_SUMMARY_MS 600000
static void scanner_standby_log(lapse_scanner *s, const char *holder)
{
    int64_t now = lapse_clock_mono_ms();
    s->standby_polls++;
    if (!*holder) /* the lock ran out between our try and the read: the next poll tells */
        return;
    if (strncmp(holder, s->standby_holder, sizeof s->standby_holder - 1) != 0) {
        if (!s->standby_holder[0])
            log_info("shard %u: standby; held by %s", s->shard, holder);
        else
            log_info("shard %u: standby; the lease passed from %s to %s", s->shard,
                     s->standby_holder, holder);
        snprintf(s->standby_holder, sizeof s->standby_holder, "%s", holder);
    } else if (now - s->standby_logged_ms >= STANDBY_SUMMARY_MS) {
        log_info("shard %u: still standby; held by %s (%llu polls of the lock in %lld s)", s->shard,
                 holder, (unsigned long long)s->standby_polls,
                 (long long)(now - s->standby_logged_ms) / 1000);
    } else {
        return;
    }
    s->standby_logged_ms = now;
    s->standby_polls = 0;
}

/* Tries to become the shard's active scanner. Returns 1 if it did. */
int scanner_acquire(lapse_scanner *s)
{
    char lease[16];
    snprintf(lease, sizeof lease, "%d", s->cfg->scanner_lease_ms);
    const char *args[2] = {s->token, lease};
    redisReply *r = scanner_eval(s, LAPSE_SCRIPT_ACQUIRE, args, NULL, 2);
    /* acquire.lua's reply: { 1, recovered } (ours now) or { 0, holder } */
    enum { A_GOT, A_RECOVERED, A_HOLDER = A_RECOVERED, A_PARTS };
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != A_PARTS ||
        r->element[A_GOT]->type != REDIS_REPLY_INTEGER) {
        scanner_redis_error(s, "acquire", s->node, r);
        if (r)
            freeReplyObject(r);
        return 0;
    }
    int got = r->element[A_GOT]->integer == 1;
    if (got) {
        s->active = 1;
        s->term++;
        s->backlog_tokens = s->cfg->scanner_catchup_rate;
        s->backlog_refill_ms = lapse_clock_mono_ms();
        s->seen_below = 0; /* what fell due meanwhile waited (claim.c: scanner_seen) */
        METRIC_INC(s, takeovers);
        METRIC_ADD(s, recovered, (uint64_t)r->element[A_RECOVERED]->integer);
        METRIC_SET(s, lease_held, 1);
        log_info("shard %u: active (token %s); %lld in-flight IDs of a previous holder due again",
                 s->shard, s->token, r->element[A_RECOVERED]->integer);
        s->standby_holder[0] = '\0';
    } else if (r->element[A_HOLDER]->type == REDIS_REPLY_STRING) {
        scanner_standby_log(s, r->element[A_HOLDER]->str);
    }
    freeReplyObject(r);
    return got;
}
