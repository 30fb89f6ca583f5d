/*
 * ingress_metrics — what lapse-producer --from-kafka counts, and its
 * ingress.metrics_port endpoint (/metrics, /healthz, /readyz: httpd.h).
 *
 * The consuming thread updates everything: counters and gauges as atomics
 * (relaxed: each is read on its own), the per-partition consumer lag as a
 * table under a mutex, replaced whole from librdkafka's statistics (which
 * the consumer's own poll serves, so nothing blocks the loop). The HTTP
 * thread only renders. Rendering is a function of the struct alone,
 * unit-tested without sockets.
 */
#ifndef LAPSE_INGRESS_METRICS_H
#define LAPSE_INGRESS_METRICS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "producer.h"

/* Why a message was not understood: the label reason="..." of
 * lapse_ingress_rejected_total. */
enum lapse_ingress_reject {
    LAPSE_REJECT_BAD_COMMAND,   /* "bad_command": has "op", but is no valid command */
    LAPSE_REJECT_NO_RULE,       /* "no_rule": no command, and no watchdog rule matches */
    LAPSE_REJECT_BAD_SIGNAL,    /* "bad_signal": a rule matched a bad ID or time field */
    LAPSE_REJECT_INVALID,       /* "invalid": the producer refused the operation */
    LAPSE_REJECT_REDIS_REFUSED, /* "redis_refused": Redis refused the write for good */
    LAPSE_REJECT_COUNT
};

/* Where the consuming thread's time goes: the label stage="..." of
 * lapse_ingress_stage_seconds_total. Every moment of the thread counts in
 * exactly one stage (the stages are laps of one clock: ingress_lap). */
enum lapse_ingress_stage {
    LAPSE_STAGE_FETCH,  /* "fetch": in the consumer's poll (waiting for messages
                           included) and the loop's upkeep around it */
    LAPSE_STAGE_PARSE,  /* "parse": decoding a message's value (and freeing it) */
    LAPSE_STAGE_RULE,   /* "rule": a command's fields or the watchdog rules */
    LAPSE_STAGE_WRITE,  /* "write": handing ops to the producer library, which
                           sends full batches and reads older ones' replies */
    LAPSE_STAGE_WAIT,   /* "wait": a batch's flush, until every write of it is
                           applied (and confirmed); a failed batch's back-off */
    LAPSE_STAGE_COMMIT, /* "commit": settling a batch after its writes:
                           dead-letter acknowledgements, the offsets' commit */
    LAPSE_STAGE_COUNT
};

/* Primaries short of replicas shown by lapse_ingress_primary_replicas_missing, at most. */
#define LAPSE_INGRESS_UNCONFIRMED_MAX 16

/* Upper bounds (ms) of lapse_ingress_batch_apply_seconds; +Inf follows. */
#define LAPSE_APPLY_BUCKETS 14
extern const int64_t lapse_apply_bounds[LAPSE_APPLY_BUCKETS];

/* One assigned partition's lag, in messages. */
struct lapse_ingress_lag {
    char topic[256];
    int32_t partition;
    int64_t lag;
};

struct lapse_ingress_metrics {
    const char *ns;                        /* label; the config's, outlives this */
    atomic_uint_fast64_t messages;         /* taken from Kafka (a re-read counts again) */
    atomic_uint_fast64_t commands_applied; /* command messages whose writes were applied */
    atomic_uint_fast64_t signals_extended; /* signals whose extend was applied or absorbed */
    atomic_uint_fast64_t absorbed;         /* extends absorbed by producer slack (a copy) */
    atomic_uint_fast64_t dead_lettered;    /* copies the dead-letter topic acknowledged */
    atomic_uint_fast64_t rejected[LAPSE_REJECT_COUNT];
    atomic_uint_fast64_t fetch_kicks;      /* the fetcher woken after the queue drained (kick.h) */
    atomic_uint_fast64_t redis_errors;     /* batches not applied for Redis's sake */
    atomic_uint_fast64_t redis_reconnects; /* (a copy of the producer's) */
    atomic_int_fast64_t redis_up;          /* 1: Redis answered the last write or probe */
    atomic_int_fast64_t consuming;         /* 1: subscribed, with partitions or waiting */
    atomic_uint_fast64_t apply[LAPSE_APPLY_BUCKETS + 1]; /* non-cumulative */
    atomic_uint_fast64_t apply_sum_ms;
    atomic_uint_fast64_t stage_ns[LAPSE_STAGE_COUNT]; /* time spent in each stage */
    int64_t probe_ms;                                 /* consuming thread only: the last probe */
    pthread_mutex_t lock;          /* guards lag, nlag, unconfirmed, nunconfirmed */
    struct lapse_ingress_lag *lag; /* owned; replaced by set_lag */
    size_t nlag;
    char unconfirmed[LAPSE_INGRESS_UNCONFIRMED_MAX][300]; /* primaries short of replicas */
    size_t nunconfirmed;
};

/* A zeroed struct with its lock; NULL when out of memory. `ns` must outlive
 * it. Free with lapse_ingress_metrics_free (accepts NULL). */
struct lapse_ingress_metrics *lapse_ingress_metrics_new(const char *ns);
void lapse_ingress_metrics_free(struct lapse_ingress_metrics *m);

void lapse_ingress_metrics_reject(struct lapse_ingress_metrics *m, enum lapse_ingress_reject r);

/* Adds `ns` nanoseconds to stage `s`. */
void lapse_ingress_metrics_stage(struct lapse_ingress_metrics *m, enum lapse_ingress_stage s,
                                 uint64_t ns);

/* Counts one batch applied `ms` after its first message was taken. */
void lapse_ingress_metrics_apply(struct lapse_ingress_metrics *m, int64_t ms);

/* A batch was applied `ms` after its first message was taken, with `cmds`
 * command messages and `signals` extends: counts them, and copies the
 * producer's absorbed count and the dead-letter acknowledgements so far. */
void lapse_ingress_metrics_settled(struct lapse_ingress_metrics *m, const lapse_producer *p,
                                   uint64_t dead_lettered, uint64_t cmds, uint64_t signals,
                                   int64_t ms);

/* With redis.wait_replicas: which primaries the producer finds short of
 * replicas now (lapse_producer_unconfirmed), for
 * lapse_ingress_primary_replicas_missing. */
void lapse_ingress_metrics_unconfirmed(struct lapse_ingress_metrics *m, const lapse_producer *p);

/* Redis's state while no writes tell it: PINGs the producer's nodes
 * (lapse_producer_probe) at most every LAPSE_INGRESS_PROBE_MS and sets
 * redis_up and redis_reconnects. Call it only between batches. */
#define LAPSE_INGRESS_PROBE_MS 1000
void lapse_ingress_metrics_probe(struct lapse_ingress_metrics *m, lapse_producer *p);

/*
 * Takes the lag of every partition the consumer fetches from librdkafka's
 * statistics JSON (the stats callback's text): hi_offset (or the last stable
 * offset) minus the committed offset ("consumer_lag"), or minus the
 * consumed position before anything was committed. Partitions whose lag is
 * unknown are left out. Returns 0, or -1 (nothing changed) when the text is
 * not the statistics JSON or memory runs out.
 */
int lapse_ingress_metrics_stats(struct lapse_ingress_metrics *m, const char *json, size_t len);

/* Renders the Prometheus text into buf: its length, or -1 if it did not fit. */
int lapse_ingress_metrics_render(struct lapse_ingress_metrics *m, char *buf, size_t size);

/* /readyz: 1 when Redis answered the last write or probe and the consumer
 * is subscribed; else 0 with the reason in why. */
int lapse_ingress_metrics_ready(struct lapse_ingress_metrics *m, char *why, size_t size);

/* Serves `m` on bind:port (httpd.h); NULL with errstr when the port cannot
 * be opened. `m` must outlive the server; stop it with lapse_httpd_stop. */
struct lapse_httpd *lapse_ingress_metrics_serve(struct lapse_ingress_metrics *m, const char *bind,
                                                int port, char *errstr, size_t size);

#endif
