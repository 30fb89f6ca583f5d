/*
 * ingress_priv — private to the ingress (ingress.c, ingress_batch.c): the
 * handle's fields, the batch of messages taken since the last commit, and
 * what settles it (ingress_batch.c). ingress.c calls into ingress_batch.c,
 * never the other way.
 */
#ifndef LAPSE_INGRESS_PRIV_H
#define LAPSE_INGRESS_PRIV_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "backoff.h"
#include "config.h"
#include "deadletter.h"
#include "httpd.h"
#include "ingress.h"
#include "ingress_metrics.h"
#include "kick.h"
#include "log.h"
#include "producer.h"
#include "reaper.h"

#define LOG_PER_SEC 10 /* rate limit of each input-triggered log line */
#define WHY_MAX 512    /* a reason, as logged and put in the header */

struct slot {
    rd_kafka_message_t *m; /* owned until the batch is released */
    char *why;             /* why it is not understood, or what Redis said; or NULL */
    int bad;               /* not understood: counted, logged, dead-lettered */
    int refused;           /* the producer reported an error for its op */
    char kind;             /* submitted: 'c' a command, 's' a signal's extend */
    uint64_t id_hash;      /* submitted: lapse_hash of its ID (ops of one ID fold into one) */
    uint64_t submission;   /* submitted: its number (lapse_producer_settled) */
    int64_t taken_ms;      /* monotonic ms it was taken */
};

struct lapse_ingress {
    const struct lapse_config *cfg;
    rd_kafka_t *rk;              /* the consumer */
    lapse_deadletter *dlq;       /* dead-letter copies, or NULL: none */
    lapse_reaper *reaper;        /* destroys released messages; NULL (freed): at once */
    lapse_kick *kick;            /* wakes the fetcher while serving, or NULL */
    size_t queued_min;           /* the consumer's queued.min.messages */
    lapse_producer *p;           /* set by serve */
    volatile sig_atomic_t *stop; /* set by serve */
    /* The batch: the messages taken and not committed yet, in consumer
     * order, are batch[first..n); those before `first` were committed and
     * released (their slots are reused once the rest moves down). A
     * message's tag for the producer is base + its index: base grows by
     * every slot released, so a late report about a released message
     * (tag < base) is never taken for a newer one. */
    struct slot *batch;
    size_t first, n, cap;
    uint64_t base;
    uint64_t seen_settled; /* lapse_producer_settled at the last ingress_advance */
    int send_failed;       /* a submit's automatic send failed: settle at once */
    uint64_t *stamps;      /* per partition number: the last commit() that listed it */
    size_t nstamps;
    uint64_t commit_stamp; /* commit()s so far */
    char send_why[WHY_MAX];
    int backoff_ms;               /* the last back-off; 0 after a settled batch */
    struct lapse_backoff backoff; /* its steps (jittered: backoff.h) */
    int in_rebalance;             /* ingress_settle() called from the rebalance callback */
    rd_kafka_queue_t *queue;      /* the consumer's queue (read_some) */
    rd_kafka_topic_partition_list_t *revoked; /* revoked during the read call, or NULL */
    int fatal;                                /* stop serving and commit nothing more */
    struct lapse_ingress_stats st, st_logged;
    int64_t stats_at; /* monotonic ms of the last counters line */
    struct lapse_log_limit lim_bad, lim_retry, lim_kafka;
    struct lapse_ingress_metrics *metrics; /* always counted; served with metrics_port */
    lapse_httpd *httpd;                    /* ingress.metrics_port, or NULL */
    uint64_t lap_ns;                       /* monotonic ns the current stage began (ingress_lap) */
    uint64_t laps[LAPSE_STAGE_COUNT];      /* ns per stage not yet added to the metrics */
};

#define M_INC(f) atomic_fetch_add_explicit(&ing->metrics->f, 1, memory_order_relaxed)
#define M_SET(f, v) atomic_store_explicit(&ing->metrics->f, (v), memory_order_relaxed)

/* The thread's time since the last lap counts in stage s (ingress_metrics.h):
 * the stages are laps of one clock, so every moment counts once, nested
 * calls (a settle in the rebalance callback, inside the poll) included.
 * Kept here, and added to the metrics by ingress_laps_publish (an atomic
 * add per lap, several a message, showed in profiles). */
static inline uint64_t ingress_now_ns(void)
{
    /* The coarse clock (a tick of 1-4 ms) costs a fraction of the precise
     * one, read several times a message. Summed laps stay right: each
     * tick falls in exactly one stage, so a stage's share of the ticks is
     * its share of the time, and the stages still add up to the wall. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void ingress_lap(lapse_ingress *ing, enum lapse_ingress_stage s)
{
    uint64_t now = ingress_now_ns();
    ing->laps[s] += now - ing->lap_ns;
    ing->lap_ns = now;
}

/* Adds the laps counted so far to the metrics: at each commit, and while
 * the consumer has nothing ready. */
static inline void ingress_laps_publish(lapse_ingress *ing)
{
    for (int s = 0; s < LAPSE_STAGE_COUNT; s++) {
        lapse_ingress_metrics_stage(ing->metrics, (enum lapse_ingress_stage)s, ing->laps[s]);
        ing->laps[s] = 0;
    }
}

/* Frees the batch's messages and reasons; the batch is empty after. */
void ingress_release(lapse_ingress *ing);

/* Makes room for one more slot (moving the batch down, growing it);
 * 0, or -1 when out of memory. */
int ingress_reserve(lapse_ingress *ing);

/* Commits, without waiting, the longest run of the batch's first messages
 * that is done: every write applied (lapse_producer_settled), none refused,
 * and no dead-letter copy to wait for; releases them. Called as the
 * producer's batches in flight are read, so offsets are committed while
 * reading goes on, with no flush. */
void ingress_advance(lapse_ingress *ing);

/* Slot i is not understood: count, log, copy. */
void ingress_mark_bad(lapse_ingress *ing, size_t i, const char *why, enum lapse_ingress_reject r);

/* Seeks the partitions of l to their offsets, so they are read again from
 * there (frees l); 0, or -1 (logged) when one could not be. */
int ingress_seek_back(lapse_ingress *ing, rd_kafka_topic_partition_list_t *l);

/* The batch could not be settled: commit nothing of it, read it again.
 * Returns -1. */
int ingress_batch_failed(lapse_ingress *ing, const char *why);

/* Applies, dead-letters and commits the batch; 0, or -1 via
 * ingress_batch_failed. `sync`: commit synchronously. */
int ingress_settle(lapse_ingress *ing, int sync);

#endif
