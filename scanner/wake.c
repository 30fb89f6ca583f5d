/*
 * wake — an idle scanner's nap. With nothing in flight and nothing due
 * within poll_ms, the scanner stops claiming every poll_ms and instead
 *   1. runs sleep.lua on the shard's node: it renews the lock and, in the
 *      same call, reads the shard's lowest score and leaves it in the mark
 *      NS:s:N;
 *   2. blocks on the bell NS:b:N (BLPOP, on a connection of its own) until
 *      that score falls due, a token arrives, or the lock wants renewing
 *      (scanner.idle_ms); then 1 again, or back to the loop to claim.
 * A producer's write that leaves a score below the mark (apply.lua,
 * take.lua, seed.lua: lib/wake.lua) deletes the mark and pushes a token
 * onto the bell. The mark is set by the call that read the zset, so no
 * write is missed between that read and the nap.
 *
 * Idle means one write per renewal: sleep.lua checks the lock, the mark
 * and the layout epoch (one MGET: a split is seen at the next renewal), renews the lock (PEXPIRE) and reads the lowest score
 * (ZRANGE), and writes the mark only when that changed; the Redis clock is
 * read only then, when the next deadline is near, or once a minute
 * (RESYNC_MS: this process's clock keeps the deadline in between).
 *
 * A lost wake-up (the mark or the token lost with a failover, a reshard, a
 * DEL; a write made by other means than lapse's scripts) costs at most
 * idle_ms, never a deadline: the nap's renewal comes by then and reads the
 * zset (or finds the node changed: the call fails, or the node reconnected
 * elsewhere, and the bell is reopened there). The bell's connection never checks its primary with the
 * sentinels by itself (it always owes a reply): it follows the node's.
 *
 * Waiting: the BLPOP is sent without waiting for its reply; the nap polls
 * its socket in steps of at most STEP_MS, serving Kafka's callbacks, the
 * metrics port's retries and checking *stop in between (the memory
 * metrics and the node's news at each renewal), so SIGTERM ends a nap within a step. Redis
 * times blocking commands out at its cron (hz 10: up to 100 ms late), so a
 * known deadline is kept by this process's clock, not by the BLPOP's
 * timeout, nor are the renewals; the BLPOP (timeout BELL_NAPS renewals)
 * stays out across renewals, naps and claims.
 */
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "redis.h"
#include "scanner_priv.h"

#define STEP_MS 100        /* longest poll between looks at *stop and Kafka */
#define RESYNC_MS 60000    /* the Redis clock and the zset read at least this often */
#define BELL_NAPS 8        /* a BLPOP's timeout: this many renewals */
#define BELL_GRACE_MS 2000 /* a BLPOP answered this late: its connection is dead */

/* The longest nap: scanner.idle_ms, at most half the lease, so the lock
 * (90 % of the lease) is renewed with a margin of 40 %. */
static int nap_max(const lapse_scanner *s)
{
    int m = s->cfg->scanner_idle_ms, half = s->cfg->scanner_lease_ms / 2;
    return m < half ? m : half;
}

/* Every ID due below Redis time `now` has been claimed (claim.c:
 * scanner_seen): written-past-due IDs woken later count from here. */
static void nap_seen(lapse_scanner *s, long long now)
{
    if (!lapse_layout_changing(&s->layout) &&
        now + 1 > s->seen_below) { /* (no mark during a split or merge) */
        s->seen_below = now + 1;
        s->seen_at = now;
    }
}

/*
 * sleep.lua: renews the lock and reads the zset (setting the mark); with
 * `full` (or a mark not known) learns the Redis time too. Returns 1 when
 * the next look is still ahead, 0 when it is due now or the layout changed
 * (a claim reloads it), -1 when fenced or the call failed (counted, logged).
 */
static int nap_renew(lapse_scanner *s, int full)
{
    char px[16], epoch[24];
    snprintf(px, sizeof px, "%d", s->cfg->scanner_lease_ms * 9 / 10);
    snprintf(epoch, sizeof epoch, "%lld", (long long)s->layout.epoch);
    /* (keys 0, 5, 6, 2 of lapse_shard_keys: z, the lock, the epoch, f) */
    const char *argv[10] = {s->keys[0], s->keys[5], s->sleep_key, s->keys[6],          s->lease_key,
                            s->keys[2], s->token,   px,           full ? "" : s->mark, epoch};
    size_t len[10];
    for (int i = 0; i < 10; i++)
        len[i] = strlen(argv[i]);
    redisReply *r = lapse_redis_eval(s->node, LAPSE_SCRIPT_SLEEP, 6, 10, argv, len);
    METRIC_SET(s, redis_up, r != NULL);
    int64_t mono = lapse_clock_mono_ms();
    enum lapse_fence fence = lapse_script_fence(r, NULL);
    if (fence == LAPSE_FENCE_LOCK) {
        freeReplyObject(r);
        scanner_fenced(s);
        return -1;
    }
    if (fence == LAPSE_FENCE_STALE) {
        freeReplyObject(r); /* a split: the claim reloads the layout */
        s->renewed_ms = mono;
        return 0;
    }
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == 0 && s->mark[0]) {
        freeReplyObject(r); /* the lowest score is still the mark */
        s->renewed_ms = mono;
        if (s->mark_due_ms > mono)
            nap_seen(s, s->synced_redis_ms + (mono - s->synced_ms));
        return s->mark_due_ms > mono;
    }
    /* sleep.lua's reply when it set a mark: { Redis time ms, the mark } */
    enum { S_NOW, S_MARK, S_PARTS };
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != S_PARTS ||
        r->element[S_NOW]->type != REDIS_REPLY_INTEGER ||
        r->element[S_MARK]->type != REDIS_REPLY_STRING) {
        scanner_redis_error(s, "nap", s->node, r);
        if (r)
            freeReplyObject(r);
        return -1;
    }
    long long now = r->element[S_NOW]->integer;
    const char *mark = r->element[S_MARK]->str;
    s->renewed_ms = s->synced_ms = mono;
    s->synced_redis_ms = now;
    if (strcmp(mark, "inf") == 0) {
        s->mark_due_ms = INT64_MAX;
    } else {
        char *end;
        double at = strtod(mark, &end);
        if (end == mark || *end) {
            scanner_redis_error(s, "nap", s->node, NULL);
            freeReplyObject(r);
            return -1;
        }
        long long due = (long long)ceil(at); /* (a lease: x.5 falls due at x + 1) */
        s->mark_due_ms = due > now ? mono + (due - now) : mono;
    }
    /* a mark too long to keep (not one lapse writes) is read afresh each time */
    if (r->element[S_MARK]->len < sizeof s->mark)
        snprintf(s->mark, sizeof s->mark, "%s", mark);
    else
        s->mark[0] = '\0';
    freeReplyObject(r);
    if (s->mark_due_ms <= mono)
        return 0;
    nap_seen(s, now);
    return 1;
}

/* Sends BLPOP bell, timeout BELL_NAPS renewals: the renewals keep their
 * own time, and a BLPOP sent again at each would be one more command
 * each. 0, or -1 (not connected: counted, logged). */
static int bell_send(lapse_scanner *s, int max)
{
    if (!s->bell) {
        if (!(s->bell = lapse_node_open(s->cfg, s->layout.node_of[s->shard])))
            return -1;
        s->bell_reconnects = lapse_redis_reconnects(s->node);
    }
    char timeout[32];
    snprintf(timeout, sizeof timeout, "%.3f", (double)max * BELL_NAPS / 1000.0);
    const char *argv[3] = {"BLPOP", s->bell_key, timeout};
    size_t len[3] = {5, strlen(s->bell_key), strlen(timeout)};
    if (lapse_redis_append_argv(s->bell, 3, argv, len) < 0 || lapse_redis_send(s->bell) < 0) {
        scanner_redis_error(s, "bell", s->bell, NULL);
        return -1;
    }
    s->bell_pending = 1;
    s->bell_sent_ms = lapse_clock_mono_ms();
    return 0;
}

enum nap_end { NAP_UNTIL, NAP_TICK, NAP_RUNG, NAP_STOP, NAP_FAIL };

/* Waits on the bell until `until` (monotonic), a token (RUNG: look now),
 * the BLPOP's own timeout (TICK: send it again), *stop, or a failure. */
static enum nap_end nap_wait(lapse_scanner *s, volatile sig_atomic_t *stop, int64_t until, int max)
{
    for (;;) {
        if (*stop)
            return NAP_STOP;
        int64_t now = lapse_clock_mono_ms();
        if (now >= until)
            return NAP_UNTIL;
        /* the node came back or moved (a Sentinel failover: the node
         * confirms its primary at its calls) since the bell was opened: the
         * bell may block on the old server, where nobody rings it now (its
         * own connection always owes a reply, so it never asks) */
        if (s->bell && lapse_redis_reconnects(s->node) != s->bell_reconnects)
            scanner_bell_free(s);
        if (s->bell_pending && now - s->bell_sent_ms > (int64_t)max * BELL_NAPS + BELL_GRACE_MS) {
            lapse_redis_disconnect(s->bell); /* no answer: the server went away silently */
            s->bell_pending = 0;
        }
        if (!s->bell_pending && bell_send(s, max) < 0)
            return NAP_FAIL;
        int fd = lapse_redis_reply_fd(s->bell);
        if (fd < 0) {
            s->bell_pending = 0;
            return NAP_FAIL;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t step = until - now < STEP_MS ? until - now : STEP_MS;
        int n = poll(&p, 1, (int)step);
        lapse_sink_poll(s->sink, 0);
        scanner_metrics_retry(s, lapse_clock_mono_ms());
        if (n <= 0)
            continue; /* (EINTR: a signal; *stop tells) */
        redisReply *r;
        s->bell_pending = 0;
        if (lapse_redis_get_reply(s->bell, &r) < 0) {
            scanner_redis_error(s, "bell", s->bell, NULL);
            return NAP_FAIL;
        }
        enum nap_end end = r->type == REDIS_REPLY_NIL ? NAP_TICK : NAP_RUNG;
        if (r->type == REDIS_REPLY_ERROR) { /* UNBLOCKED by a failover, an ACL denial */
            scanner_redis_error(s, "bell", s->bell, r);
            end = NAP_FAIL;
        }
        freeReplyObject(r);
        return end;
    }
}

/*
 * Naps until the shard has something due, a write woke it, or *stop.
 * Returns 0 when it napped (the loop claims now), -1 when it did not or
 * failed: due already, fenced, Redis or the bell failed (the loop waits as
 * it did before naps, poll_ms, and claims).
 */
int scanner_nap(lapse_scanner *s, volatile sig_atomic_t *stop)
{
    int max = nap_max(s);
    uint64_t reconnects = lapse_redis_reconnects(s->node);
    int rc = nap_renew(s, 1); /* claims moved scores: read the zset */
    if (rc <= 0)
        return -1;
    METRIC_INC(s, naps);
    for (;;) {
        if (lapse_redis_reconnects(s->node) != reconnects)
            return 0; /* the node came back or moved: the loop claims there once */
        scanner_tend(s);
        int64_t renew = s->renewed_ms + max;
        enum nap_end end = nap_wait(s, stop, s->mark_due_ms < renew ? s->mark_due_ms : renew, max);
        int64_t now = lapse_clock_mono_ms();
        if (end == NAP_FAIL) /* the loop polls as before naps until the bell answers */
            return -1;
        if (end == NAP_STOP || now >= s->mark_due_ms)
            return 0;
        if (end == NAP_TICK)
            continue; /* the BLPOP timed out: send the next */
        if (end == NAP_RUNG)
            METRIC_INC(s, woken);
        int full = end == NAP_RUNG || !s->mark[0] || now - s->synced_ms >= RESYNC_MS ||
                   s->mark_due_ms - now <= 2 * (int64_t)max;
        if ((rc = nap_renew(s, full)) <= 0)
            return rc;
    }
}
