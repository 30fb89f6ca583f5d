/*
 * kick — wakes librdkafka's fetcher once the consumer's queue has drained
 * (see kick.h for why and when).
 *
 * The thread looks at the queue's length (a lock in librdkafka) every
 * LAPSE_KICK_EVERY_MS; the lag (the assignment, the positions, the high
 * watermarks of the last fetches: all local) at most every
 * LAPSE_KICK_LAG_EVERY_MS, and only while the queue is low. A kick is one
 * rd_kafka_offsets_for_times call: a ListOffsets request to each leader,
 * whose answer is not used; the request is what wakes the broker thread.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "kick.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"

struct lapse_kick {
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue; /* the consumer's: its length is what librdkafka weighs */
    size_t queued_min;       /* queued.min.messages */
    const atomic_uint_fast64_t *taken;
    atomic_uint_fast64_t *kicks;
    pthread_t thread;
    pthread_mutex_t lock; /* over stop */
    pthread_cond_t wake;  /* stop (on the monotonic clock) */
    int stop;
};

/* Below this the queue is low: half of queued.min.messages. */
static size_t low_mark(size_t queued_min)
{
    return queued_min / 2 ? queued_min / 2 : 1;
}

int lapse_kick_due(size_t queued, int64_t arrived, size_t queued_min, int was_high,
                   int64_t unfetched)
{
    size_t low = low_mark(queued_min);
    /* a fetch that filled the queue paused the fetcher: seen above low at
     * a look, or (taken between two looks) by what arrived */
    return queued < low && (was_high || arrived >= (int64_t)low || unfetched > 0);
}

/* Messages of the assignment l at the brokers, as the last fetches saw
 * them, that are neither taken (the positions) nor in the queue. */
static int64_t unfetched(lapse_kick *k, rd_kafka_topic_partition_list_t *l, size_t queued)
{
    int64_t n = 0;
    if (l->cnt == 0 || rd_kafka_position(k->rk, l) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return 0;
    for (int i = 0; i < l->cnt; i++) {
        const rd_kafka_topic_partition_t *t = &l->elems[i];
        int64_t lo, hi;
        if (t->offset >= 0 &&
            rd_kafka_get_watermark_offsets(k->rk, t->topic, t->partition, &lo, &hi) ==
                RD_KAFKA_RESP_ERR_NO_ERROR &&
            hi > t->offset)
            n += hi - t->offset;
    }
    return n - (int64_t)queued;
}

/* A ListOffsets request to each leader of l (changed: its offsets). */
static void kick(lapse_kick *k, rd_kafka_topic_partition_list_t *l)
{
    for (int i = 0; i < l->cnt; i++)
        l->elems[i].offset = -1; /* the latest offset: any question wakes the broker */
    rd_kafka_offsets_for_times(k->rk, l, LAPSE_KICK_TIMEOUT_MS); /* its answer is not needed */
    atomic_fetch_add_explicit(k->kicks, 1, memory_order_relaxed);
}

/* Waits LAPSE_KICK_EVERY_MS or for a stop; 1 when stopped. */
static int kick_wait(lapse_kick *k)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += LAPSE_KICK_EVERY_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&k->lock);
    if (!k->stop)
        pthread_cond_timedwait(&k->wake, &k->lock, &until);
    int stop = k->stop;
    pthread_mutex_unlock(&k->lock);
    return stop;
}

static void *kick_main(void *arg)
{
    lapse_kick *k = arg;
    int was_high = 0;
    size_t queued_before = 0;
    uint64_t taken_before = atomic_load_explicit(k->taken, memory_order_relaxed);
    int64_t lag_at = 0; /* monotonic ms of the last look at the lag */
    while (!kick_wait(k)) {
        uint64_t taken = atomic_load_explicit(k->taken, memory_order_relaxed);
        size_t queued = rd_kafka_queue_length(k->queue);
        int64_t arrived =
            (int64_t)(taken - taken_before) + (int64_t)queued - (int64_t)queued_before;
        int64_t now = lapse_clock_mono_ms();
        int filled = lapse_kick_due(queued, arrived, k->queued_min, was_high, 0);
        if (filled ||
            (queued < low_mark(k->queued_min) && now - lag_at >= LAPSE_KICK_LAG_EVERY_MS)) {
            rd_kafka_topic_partition_list_t *l = NULL;
            if (rd_kafka_assignment(k->rk, &l) == RD_KAFKA_RESP_ERR_NO_ERROR && l) {
                if (!filled)
                    lag_at = now;
                if (l->cnt && (filled || lapse_kick_due(queued, arrived, k->queued_min, 0,
                                                        unfetched(k, l, queued))))
                    kick(k, l);
                rd_kafka_topic_partition_list_destroy(l);
            }
        }
        was_high = queued >= low_mark(k->queued_min);
        queued_before = queued;
        taken_before = taken;
    }
    return NULL;
}

lapse_kick *lapse_kick_new(rd_kafka_t *rk, rd_kafka_queue_t *queue, size_t queued_min,
                           const atomic_uint_fast64_t *taken, atomic_uint_fast64_t *kicks)
{
    lapse_kick *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->rk = rk;
    k->queue = queue;
    k->queued_min = queued_min;
    k->taken = taken;
    k->kicks = kicks;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) {
        free(k);
        return NULL;
    }
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int ok = pthread_mutex_init(&k->lock, NULL) == 0;
    if (ok && pthread_cond_init(&k->wake, &ca) != 0) {
        pthread_mutex_destroy(&k->lock);
        ok = 0;
    }
    pthread_condattr_destroy(&ca);
    if (ok) {
        /* signals go to the main thread, whose handler sets the stop flag
         * its loop reads: this thread blocks them all */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        ok = pthread_create(&k->thread, NULL, kick_main, k) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (ok) {
            pthread_setname_np(k->thread, "lapse-kick"); /* as top and perf show it */
            return k;
        }
        pthread_cond_destroy(&k->wake);
        pthread_mutex_destroy(&k->lock);
    }
    free(k);
    return NULL;
}

void lapse_kick_free(lapse_kick *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    k->stop = 1;
    pthread_cond_signal(&k->wake);
    pthread_mutex_unlock(&k->lock);
    pthread_join(k->thread, NULL);
    pthread_cond_destroy(&k->wake);
    pthread_mutex_destroy(&k->lock);
    free(k);
}
