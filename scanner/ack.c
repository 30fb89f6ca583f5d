/*
 * ack — the second half of the scanner's loop (claim.c has the first):
 * Kafka's answers come back here (scanner_delivered), acknowledged events
 * wait on their claim's list, and scanner_ack settles them in Redis through
 * ack.lua, grouped by claim (a claim acknowledged whole goes as its lease
 * and size alone). A failed or unanswered event is not settled: its ID
 * stays leased and is claimed again when the lease runs out.
 *
 * Calls go down: batch.c for the claims' lists, lease.c for the shard's
 * errors and a fence. The sink calls in here (scanner_delivered).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "redis.h"
#include "scanner_priv.h"

void scanner_delivered(void *ctx, void *opaque, int ok, const char *reason)
{
    lapse_scanner *s = ctx;
    struct flight *f = opaque;
    struct batch *b = f->batch;
    s->inflight--;
    METRIC_SET(s, inflight, (int64_t)s->inflight);
    if (ok && b->term == s->term && s->active) {
        METRIC_INC(s, acked);
        f->next = NULL;
        if (!b->acked) { /* joins the settle list */
            b->acked_ms = lapse_clock_mono_ms();
            b->acked_tail = &b->acked;
            b->next = NULL;
            *s->settle_tail = b;
            s->settle_tail = &b->next;
        }
        *b->acked_tail = f;
        b->acked_tail = &f->next;
        b->nacked++;
        return;
    }
    if (ok) {
        METRIC_INC(s, acked); /* delivered, but our lease term ended: the new holder settles it */
    } else {
        /* Not lost: the ID stays leased in Redis and is claimed again when
         * the lease runs out. */
        METRIC_INC(s, failed);
        lapse_log_limited(&s->lim_kafka, 2, LAPSE_LOG_WARN,
                          "shard %u: an event was not delivered (%s); it will be claimed again",
                          s->shard, reason);
    }
    scanner_batch_unref(b, 1);
}

/* A claim is settled once all of it is acknowledged (ack.lua then takes it
 * by its lease's score range, in one call), or once its first
 * acknowledgements waited ACK_WAIT_MS (a slow partition does not hold the
 * rest back for long), or when `force`d (stopping). */
static int scanner_ack_ready(const struct batch *b, int64_t now, int force)
{
    return force || b->nacked == b->refs || now - b->acked_ms >= ACK_WAIT_MS;
}

/* A claim all of whose events were acknowledged, none settled yet (acked
 * flights keep their refs until settled, so nacked reaches claimed only
 * then): ack.lua settles it by its lease and size alone (it deletes the
 * claim's record), without its IDs. */
static int scanner_whole(const struct batch *b)
{
    return b->nacked == b->claimed;
}

/* Settles acknowledged IDs in Redis, ACK_CHUNK at a time, grouped by claim
 * (one lease argument per group; a whole claim needs no more). On a Redis
 * failure they stay queued for the next pass (their leases keep them from
 * firing meanwhile; if the outage outlasts the lease they fire again:
 * at-least-once). */
void scanner_ack(lapse_scanner *s, int force)
{
    enum { MAXARGS = LAPSE_SHARD_NKEYS + 1 + 3 * ACK_CHUNK };
    const char *argv[MAXARGS];
    size_t argvlen[MAXARGS];
    char counts[ACK_CHUNK][12];
    struct batch *sent[ACK_CHUNK];
    int64_t now = lapse_clock_mono_ms();
    while (s->settle && s->active) {
        int n = 0, groups = 0, ids = 0;
        for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
            argv[n] = s->keys[k], argvlen[n++] = strlen(s->keys[k]);
        argv[n] = s->token, argvlen[n++] = strlen(s->token);
        /* ready batches' acked lists, the last one cut at the chunk size */
        struct flight *rest = NULL; /* where the cut batch goes on */
        for (struct batch *b = s->settle; b && ids < ACK_CHUNK; b = b->next) {
            if (!scanner_ack_ready(b, now, force))
                continue;
            int whole = scanner_whole(b);
            if (whole && groups > 0 && ids + (int)b->nacked > ACK_CHUNK)
                break; /* (a whole claim is not cut) */
            sent[groups] = b;
            argv[n] = b->lease->str, argvlen[n++] = b->lease->len;
            int at = n++, k = 0;
            struct flight *f = b->acked;
            if (whole)
                k = -(int)b->nacked, ids += (int)b->nacked, f = NULL;
            for (; f && ids < ACK_CHUNK; f = f->next, k++, ids++)
                argv[n] = f->id, argvlen[n++] = f->id_len;
            argvlen[at] = (size_t)snprintf(counts[groups], sizeof counts[groups], "%d", k);
            argv[at] = counts[groups++];
            rest = f;
        }
        if (groups == 0)
            return;
        redisReply *r =
            lapse_redis_eval(s->node, LAPSE_SCRIPT_ACK, LAPSE_SHARD_NKEYS, n, argv, argvlen);
        METRIC_SET(s, redis_up,
                   r != NULL); /* as scanner_eval: acks go past it for their argv size */
        if (lapse_script_fence(r, NULL) == LAPSE_FENCE_LOCK) {
            freeReplyObject(r);
            scanner_fenced(s);
            return;
        }
        if (!r || r->type != REDIS_REPLY_INTEGER) {
            scanner_redis_error(s, "ack", s->node, r);
            if (r)
                freeReplyObject(r);
            return;
        }
        long long settled = r->integer;
        METRIC_ADD(s, settled, (uint64_t)settled);
        freeReplyObject(r);
        /* what was sent: `groups` batches, the last one up to `rest` */
        for (int g = 0; g < groups; g++)
            if (sent[g])
                scanner_settled(s, sent[g], g == groups - 1 ? rest : NULL);
    }
}
