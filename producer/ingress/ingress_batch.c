/*
 * ingress_batch — the --from-kafka batch and its settling (see ingress.h for
 * the rules; ingress.c takes the messages into it).
 *
 * A batch is the list of messages taken and not committed yet, in the order
 * the consumer returned them (so, per partition, in offset order). Each
 * message is either submitted to the producer library with a tag that
 * names its slot (ingress_priv.h), or marked "not understood" (and its
 * dead-letter copy produced at once). While the stream goes on,
 * ingress_advance() commits the batch's first messages as the producer
 * settles their submissions (lapse_producer_settled), without a flush.
 * ingress_settle() flushes the producer, turns ops Redis refused for good
 * into "not understood", waits for every dead-letter acknowledgement, and
 * commits, per partition, the offset after the batch's last message there.
 *
 * Invariants:
 *  - An offset is committed only when every message before it in its
 *    partition is applied and acknowledged: by ingress_advance(), for a run
 *    of the first messages whose submissions the producer settled with
 *    none refused (and no dead-letter copy among them to wait for); by
 *    commit(), when the whole batch is; or by ingress_batch_partial(), up
 *    to each partition's first message whose write failed. A failed op is
 *    reported before the producer's settled count passes it, and
 *    ingress_advance() does nothing between a failed send and the settle
 *    that spreads its reports (send_failed). Anything else drops the batch through
 *    ingress_batch_failed(), which seeks every partition of the batch back
 *    to the batch's first message there, so the next poll reads it again: a
 *    later commit can never cover a message whose writes failed.
 *  - When that seek fails, the ingress stops (fatal): a consumer whose
 *    position is past unapplied messages must not commit again.
 *  - The producer's queue holds only this batch's ops: every path that
 *    drops the batch follows a flush (which empties the queue, applied or
 *    not), so tags always index the current batch; and tags only grow
 *    (base), so a report about a message released before is ignored.
 *  - Logging of what input can trigger is rate-limited.
 */
#include "ingress_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

#define SEEK_MS 5000          /* longest wait for a seek back */
#define DLQ_STOP_WAIT_MS 5000 /* at a stop, longest wait for dead-letter acks */

/* Frees the messages of slots [from, to): destroyed by the reaper, or at
 * once when there is none (a failed lapse_ingress_new, or after it was
 * freed). */
static void release_slots(lapse_ingress *ing, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        if (ing->reaper)
            lapse_reaper_put(ing->reaper, ing->batch[i].m);
        else
            rd_kafka_message_destroy(ing->batch[i].m);
        free(ing->batch[i].why);
    }
    if (ing->reaper)
        lapse_reaper_hand(ing->reaper);
}

void ingress_release(lapse_ingress *ing)
{
    release_slots(ing, ing->first, ing->n);
    ing->base += ing->n; /* tags of released messages never index a new one */
    ing->first = ing->n = 0;
    ing->send_failed = 0;
}

int ingress_reserve(lapse_ingress *ing)
{
    if (ing->n < ing->cap)
        return 0;
    if (ing->first > 0) { /* the committed slots' room, first */
        memmove(ing->batch, ing->batch + ing->first, (ing->n - ing->first) * sizeof *ing->batch);
        ing->base += ing->first;
        ing->n -= ing->first;
        ing->first = 0;
        if (ing->n < ing->cap / 2 + 1)
            return 0;
    }
    size_t cap = ing->cap ? ing->cap * 2 : 1024;
    struct slot *b = realloc(ing->batch, cap * sizeof *b);
    if (!b)
        return -1;
    ing->batch = b;
    ing->cap = cap;
    return 0;
}

static const char *topic_of(const rd_kafka_message_t *m)
{
    return rd_kafka_topic_name(m->rkt);
}

static void set_why(struct slot *s, const char *why)
{
    free(s->why);
    s->why = strdup(why); /* NULL on OOM: logged as "?" */
}

void lapse_ingress_on_error(void *ctx, uint64_t tag, const char *reason)
{
    lapse_ingress *ing = ctx;
    if (tag < ing->base + ing->first || tag >= ing->base + ing->n)
        return; /* a message committed or dropped already: read again, or cannot happen */
    struct slot *s = &ing->batch[tag - ing->base];
    s->refused = 1;
    set_why(s, reason);
}

/* Slot i is not understood: count, log, copy. */
void ingress_mark_bad(lapse_ingress *ing, size_t i, const char *why, enum lapse_ingress_reject r)
{
    struct slot *s = &ing->batch[i];
    s->bad = 1;
    set_why(s, why);
    ing->st.rejected++;
    lapse_ingress_metrics_reject(ing->metrics, r);
    lapse_log_limited(&ing->lim_bad, LOG_PER_SEC, LAPSE_LOG_WARN, "ingress: %s/%d/%lld: %s",
                      topic_of(s->m), (int)s->m->partition, (long long)s->m->offset,
                      s->why ? s->why : "?");
    if (ing->dlq)
        lapse_deadletter_send(ing->dlq, s->m, s->why ? s->why : "?");
}

/* The offset of each partition of the batch where reading must start
 * again: its first message there, or with `refused` its first message
 * whose op the producer reported (partitions with none are left out). */
static rd_kafka_topic_partition_list_t *first_offsets(lapse_ingress *ing, int refused)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (size_t i = ing->first; i < ing->n; i++) {
        const rd_kafka_message_t *m = ing->batch[i].m;
        if ((!refused || ing->batch[i].refused) &&
            !rd_kafka_topic_partition_list_find(l, topic_of(m), m->partition))
            rd_kafka_topic_partition_list_add(l, topic_of(m), m->partition)->offset = m->offset;
    }
    return l;
}

int ingress_seek_back(lapse_ingress *ing, rd_kafka_topic_partition_list_t *l)
{
    /* librdkafka before 2.1.0 reads seek_partitions' timeout as microseconds
     * (librdkafka PR #4230), so a busy fetcher "times out" within 5 ms. A
     * timed-out seek is still queued, and seeking again to the same offsets
     * is harmless: keep asking until our own clock says SEEK_MS passed. */
    int rc = 0;
    int64_t end = lapse_clock_mono_ms() + SEEK_MS;
    rd_kafka_error_t *e;
    while ((e = rd_kafka_seek_partitions(ing->rk, l, SEEK_MS)) &&
           rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR__TIMED_OUT && lapse_clock_mono_ms() < end) {
        rd_kafka_error_destroy(e);
        for (int i = 0; i < l->cnt; i++)
            l->elems[i].err = RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    if (e) {
        log_error("ingress: cannot seek back: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        rc = -1;
    }
    for (int i = 0; rc == 0 && i < l->cnt; i++)
        if (l->elems[i].err) {
            log_error("ingress: cannot seek %s/%d back to %lld: %s", l->elems[i].topic,
                      (int)l->elems[i].partition, (long long)l->elems[i].offset,
                      rd_kafka_err2str(l->elems[i].err));
            rc = -1;
        }
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

/* Sleeps `ms`, in steps that notice a stop and serve dead-letter reports. */
static void pause_ms(lapse_ingress *ing, int ms)
{
    int64_t end = lapse_clock_mono_ms() + ms;
    while (!*ing->stop && lapse_clock_mono_ms() < end) {
        if (ing->dlq)
            lapse_deadletter_poll(ing->dlq, 0);
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The batch could not be settled: commit nothing of it, read it again. */
int ingress_batch_failed(lapse_ingress *ing, const char *why)
{
    ing->st.retries++;
    ing->backoff_ms = lapse_backoff_next(&ing->backoff);
    lapse_log_limited(&ing->lim_retry, 1, LAPSE_LOG_WARN,
                      "ingress: %zu messages not applied (%s): not committed, reading them "
                      "again in %d ms",
                      ing->n - ing->first, why, ing->backoff_ms);
    if (ingress_seek_back(ing, first_offsets(ing, 0)) < 0)
        ing->fatal = 1;
    ingress_release(ing);
    ingress_lap(ing, LAPSE_STAGE_COMMIT);
    if (!ing->in_rebalance && !ing->fatal) {
        pause_ms(ing, ing->backoff_ms);
        ingress_lap(ing, LAPSE_STAGE_WAIT);
    }
    return -1;
}

static void commit_list(lapse_ingress *ing, rd_kafka_topic_partition_list_t *l, int sync);

/*
 * The flush failed for some messages only (with redis.wait_replicas, a
 * primary that cannot confirm fails only the writes it holds): per
 * partition, what comes before its first failed message is applied and
 * committed, and reading starts again at that message; a partition with
 * none is committed whole. Nothing after a failed message is committed,
 * since a Kafka commit covers every offset before it, and a later write of
 * the same ID must not land before it; so a partition holding a failed
 * message waits there (read again with the back-off, each try failing fast
 * while the primary cannot confirm), and the others go on. Returns -1.
 */
static int ingress_batch_partial(lapse_ingress *ing, const char *why, int sync)
{
    rd_kafka_topic_partition_list_t *again = first_offsets(ing, 1), *done = first_offsets(ing, 0);
    size_t failed = 0;
    for (size_t i = ing->first; i < ing->n; i++)
        failed += ing->batch[i].refused != 0;
    for (int k = 0; k < done->cnt; k++) {
        rd_kafka_topic_partition_t *t = &done->elems[k];
        const rd_kafka_topic_partition_t *a =
            rd_kafka_topic_partition_list_find(again, t->topic, t->partition);
        if (a) {
            t->offset = a->offset; /* up to its first failed message */
            continue;
        }
        for (size_t i = ing->first; i < ing->n; i++) { /* after its last message */
            const rd_kafka_message_t *m = ing->batch[i].m;
            if (m->partition == t->partition && strcmp(topic_of(m), t->topic) == 0 &&
                t->offset < m->offset + 1)
                t->offset = m->offset + 1;
        }
    }
    ing->st.retries++;
    ing->backoff_ms = lapse_backoff_next(&ing->backoff);
    lapse_log_limited(&ing->lim_retry, 1, LAPSE_LOG_WARN,
                      "ingress: %zu of %zu messages not applied (%s): the partitions holding "
                      "them are read again from the first in %d ms, the others committed",
                      failed, ing->n - ing->first, why, ing->backoff_ms);
    if (ingress_seek_back(ing, again) < 0)
        ing->fatal = 1;
    else
        commit_list(ing, done, sync);
    rd_kafka_topic_partition_list_destroy(done);
    ingress_release(ing);
    ingress_lap(ing, LAPSE_STAGE_COMMIT);
    if (!ing->in_rebalance && !ing->fatal) {
        pause_ms(ing, ing->backoff_ms);
        ingress_lap(ing, LAPSE_STAGE_WAIT);
    }
    return -1;
}

/* Redis errors that say "not now" rather than "never": read again. */
static int transient(const char *why)
{
    static const char *const prefixes[] = {
        "OOM",      "BUSY",        "LOADING",    "READONLY", "MASTERDOWN",
        "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS", "MISCONF",
    };
    for (size_t i = 0; why && i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(why, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return why == NULL; /* out of memory copying the reason: do not guess */
}

/* Commits the offsets of l (kept). */
static void commit_list(lapse_ingress *ing, rd_kafka_topic_partition_list_t *l, int sync)
{
    rd_kafka_resp_err_t err = rd_kafka_commit(ing->rk, l, !sync);
    if (err && sync) /* async: on_commit reports */
        lapse_log_limited(&ing->lim_kafka, LOG_PER_SEC, LAPSE_LOG_WARN,
                          "ingress: commit failed: %s", rd_kafka_err2str(err));
}

/* 1 when partition p of the batch's topic (rkt) was listed already in this
 * commit (stamp); else marks it and returns 0. -1 when it cannot tell (another
 * topic, out of memory): look it up in the list. */
static int listed(lapse_ingress *ing, const rd_kafka_message_t *m, const rd_kafka_topic_t *rkt,
                  uint64_t stamp)
{
    if (m->rkt != rkt || m->partition < 0)
        return -1;
    size_t p = (size_t)m->partition;
    if (p >= ing->nstamps) { /* a partition higher than any before: rare */
        size_t n = p + 64;
        uint64_t *s = realloc(ing->stamps, n * sizeof *s);
        if (!s)
            return -1;
        memset(s + ing->nstamps, 0, (n - ing->nstamps) * sizeof *s);
        ing->stamps = s;
        ing->nstamps = n;
    }
    if (ing->stamps[p] == stamp)
        return 1;
    ing->stamps[p] = stamp;
    return 0;
}

/* Commits, per partition, the offset after the last message there of
 * slots [from, to). From the last one back: the first seen of a partition
 * is its last (per partition the batch is in offset order), and a stamp
 * per partition number says whether it was seen, so a commit costs no
 * search of the list per message (64 partitions made it show). */
static void commit(lapse_ingress *ing, size_t from, size_t to, int sync)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    const rd_kafka_topic_t *rkt = ing->batch[from].m->rkt;
    uint64_t stamp = ++ing->commit_stamp;
    for (size_t i = to; i-- > from;) {
        const rd_kafka_message_t *m = ing->batch[i].m;
        int seen = listed(ing, m, rkt, stamp);
        if (seen == 1)
            continue;
        rd_kafka_topic_partition_t *t =
            seen == 0 ? NULL : rd_kafka_topic_partition_list_find(l, topic_of(m), m->partition);
        if (!t)
            t = rd_kafka_topic_partition_list_add(l, topic_of(m), m->partition);
        if (t->offset < m->offset + 1)
            t->offset = m->offset + 1;
    }
    commit_list(ing, l, sync);
    rd_kafka_topic_partition_list_destroy(l);
}

/*
 * The producer folds the ops of one ID into one (their net effect) and
 * reports a failed op by the tag of the message that folded in last; the
 * messages folded in before it failed as much (their effect was that op):
 * marks every submitted message of a failed one's ID refused too, so no
 * partition is committed past one of them. (Two IDs with one hash are
 * both held back: safe.) Quadratic in the failed messages, on a failure.
 */
static void spread_refusals(lapse_ingress *ing)
{
    for (size_t i = ing->first; i < ing->n; i++) {
        const struct slot *f = &ing->batch[i];
        if (!f->refused || f->bad || !f->kind)
            continue;
        for (size_t j = ing->first; j < ing->n; j++) {
            struct slot *o = &ing->batch[j];
            if (!o->refused && !o->bad && o->kind && o->id_hash == f->id_hash) {
                o->refused = 1;
                set_why(o, f->why ? f->why : "?");
            }
        }
    }
}

/* Slots [first, to) were applied and committed: counts them. */
static void counted(lapse_ingress *ing, size_t to)
{
    size_t kinds[2] = {0, 0}; /* commands, signals applied */
    for (size_t i = ing->first; i < to; i++)
        if (!ing->batch[i].bad && ing->batch[i].kind)
            kinds[ing->batch[i].kind == 's']++;
    lapse_ingress_metrics_settled(
        ing->metrics, ing->p, ing->dlq ? lapse_deadletter_acked(ing->dlq) : 0, kinds[0], kinds[1],
        lapse_clock_mono_ms() - ing->batch[ing->first].taken_ms);
    ing->st.batches++;
    ingress_laps_publish(ing);
}

void ingress_advance(lapse_ingress *ing)
{
    uint64_t settled = lapse_producer_settled(ing->p);
    ing->seen_settled = settled;
    if (ing->send_failed) /* reports not yet spread to their IDs' messages */
        return;
    size_t k = ing->first;
    for (; k < ing->n; k++) {
        const struct slot *s = &ing->batch[k];
        /* a refused op is for ingress_settle() to judge; a bad message's
         * copy must be acknowledged first (ingress_settle() waits for it) */
        if (s->refused || (s->bad ? ing->dlq != NULL : !s->kind || s->submission > settled))
            break;
    }
    if (k == ing->first)
        return;
    commit(ing, ing->first, k, 0);
    counted(ing, k);
    release_slots(ing, ing->first, k);
    ing->first = k;
    ingress_lap(ing, LAPSE_STAGE_COMMIT);
}

/* Applies, dead-letters and commits the batch; 0, or -1 via batch_failed. */
int ingress_settle(lapse_ingress *ing, int sync)
{
    char why[WHY_MAX];
    if (ing->n == ing->first)
        return 0;
    int flushed = lapse_producer_flush(ing->p, why, sizeof why);
    if (flushed == 0 && ing->send_failed) { /* some ops of the batch failed before */
        flushed = -1;
        snprintf(why, sizeof why, "%s", ing->send_why);
    }
    ing->send_failed = 0;
    ingress_lap(ing, LAPSE_STAGE_WAIT);
    lapse_ingress_metrics_unconfirmed(ing->metrics, ing->p);
    if (flushed < 0) {
        M_INC(redis_errors);
        M_SET(redis_up, 0);
        /* every message whose op failed was reported (refused); those
         * not reported were applied. Dead-letter copies of the batch's
         * bad ones must be acknowledged before anything is committed. */
        spread_refusals(ing);
        size_t refused = 0;
        for (size_t i = ing->first; i < ing->n; i++)
            refused += ing->batch[i].refused && !ing->batch[i].bad;
        if (refused == 0 || refused == ing->n - ing->first ||
            (ing->dlq &&
             lapse_deadletter_wait(ing->dlq, ing->stop, DLQ_STOP_WAIT_MS, why, sizeof why) < 0))
            return ingress_batch_failed(ing, why);
        return ingress_batch_partial(ing, why, sync);
    }
    M_SET(redis_up, 1);
    for (size_t i = ing->first; i < ing->n; i++)
        if (ing->batch[i].refused && !ing->batch[i].bad && transient(ing->batch[i].why)) {
            snprintf(why, sizeof why, "Redis: %s", ing->batch[i].why ? ing->batch[i].why : "?");
            M_INC(redis_errors);
            return ingress_batch_failed(ing, why);
        }
    for (size_t i = ing->first; i < ing->n; i++)
        if (ing->batch[i].refused && !ing->batch[i].bad) {
            snprintf(why, sizeof why, "refused by Redis: %s", ing->batch[i].why);
            ingress_mark_bad(ing, i, why, LAPSE_REJECT_REDIS_REFUSED);
        }
    if (ing->dlq &&
        lapse_deadletter_wait(ing->dlq, ing->stop, DLQ_STOP_WAIT_MS, why, sizeof why) < 0)
        return ingress_batch_failed(ing, why);
    commit(ing, ing->first, ing->n, sync);
    counted(ing, ing->n);
    ing->backoff_ms = 0;
    lapse_backoff_reset(&ing->backoff);
    ingress_release(ing);
    ingress_lap(ing, LAPSE_STAGE_COMMIT);
    return 0;
}
