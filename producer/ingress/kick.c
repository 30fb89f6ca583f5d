/*
 * kick — wakes librdkafka's fetcher once the consumer's queue has drained
 * (see kick.h for why and when).
 *
 * The owner applies the rule at each read and wakes the thread only when
 * it asks for a kick or a look at the lag (the assignment, the positions,
 * the high watermarks of the last fetches: all local to librdkafka). A
 * kick is one rd_kafka_offsets_for_times call: a ListOffsets request to
 * each leader, whose answer is not used; the request is what wakes the
 * broker thread. The thread sleeps otherwise: a followed stream costs a
 * look every LAPSE_KICK_CHECK_MS at most.
 */
#include "kick.h"

#include <pthread.h>
#include <stdlib.h>

#include "clock.h"
#include "stop.h"

struct lapse_kick {
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue; /* the consumer's: its length is what librdkafka weighs */
    size_t queued_min;       /* queued.min.messages */
    atomic_uint_fast64_t *kicks;
    int was_high;              /* the owner's: lapse_kick_rule */
    int64_t checked_ms;        /* the owner's: monotonic ms of the last look asked for */
    pthread_t thread;          /* kick_main */
    pthread_mutex_t lock;      /* over want and stop */
    pthread_cond_t wake;       /* want or stop set */
    enum lapse_kick_want want; /* what the owner asked for since the thread last took it */
    int stop;
};

/* Below this the queue is low: half of queued.min.messages. */
static size_t low_mark(size_t queued_min)
{
    return queued_min / 2 ? queued_min / 2 : 1;
}

enum lapse_kick_want lapse_kick_rule(size_t before, size_t taken, size_t queued_min, int *was_high)
{
    size_t low = low_mark(queued_min), after = before > taken ? before - taken : 0;
    if (before >= low) /* (also a fetch that arrived and was taken in one read) */
        *was_high = 1;
    if (after < low && *was_high) {
        *was_high = 0;
        return LAPSE_KICK_NOW;
    }
    return after == 0 ? LAPSE_KICK_CHECK : LAPSE_KICK_NONE;
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

static void *kick_main(void *arg)
{
    lapse_kick *k = arg;
    pthread_mutex_lock(&k->lock);
    for (;;) {
        while (k->want == LAPSE_KICK_NONE && !k->stop)
            pthread_cond_wait(&k->wake, &k->lock);
        if (k->stop)
            break;
        enum lapse_kick_want want = k->want;
        k->want = LAPSE_KICK_NONE;
        pthread_mutex_unlock(&k->lock);
        rd_kafka_topic_partition_list_t *l = NULL;
        if (rd_kafka_assignment(k->rk, &l) == RD_KAFKA_RESP_ERR_NO_ERROR && l) {
            if (l->cnt &&
                (want == LAPSE_KICK_NOW || unfetched(k, l, rd_kafka_queue_length(k->queue)) > 0))
                kick(k, l);
            rd_kafka_topic_partition_list_destroy(l);
        }
        pthread_mutex_lock(&k->lock);
    }
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

void lapse_kick_read(lapse_kick *k, size_t before, size_t taken)
{
    enum lapse_kick_want w = lapse_kick_rule(before, taken, k->queued_min, &k->was_high);
    if (w == LAPSE_KICK_CHECK) { /* a look at the lag: not at every read of a followed stream */
        int64_t now = lapse_clock_mono_ms();
        if (now - k->checked_ms < LAPSE_KICK_CHECK_MS)
            return;
        k->checked_ms = now;
    }
    if (w == LAPSE_KICK_NONE)
        return;
    pthread_mutex_lock(&k->lock);
    if (w > k->want) {
        k->want = w;
        pthread_cond_signal(&k->wake);
    }
    pthread_mutex_unlock(&k->lock);
}

lapse_kick *lapse_kick_new(rd_kafka_t *rk, rd_kafka_queue_t *queue, size_t queued_min,
                           atomic_uint_fast64_t *kicks)
{
    lapse_kick *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->rk = rk;
    k->queue = queue;
    k->queued_min = queued_min;
    k->kicks = kicks;
    k->checked_ms = lapse_clock_mono_ms() - LAPSE_KICK_CHECK_MS;
    int locked = pthread_mutex_init(&k->lock, NULL) == 0;
    int waits = locked && pthread_cond_init(&k->wake, NULL) == 0;
    if (waits && lapse_stop_thread(&k->thread, kick_main, k, "lapse-kick") == 0)
        return k;
    if (waits)
        pthread_cond_destroy(&k->wake);
    if (locked)
        pthread_mutex_destroy(&k->lock);
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
