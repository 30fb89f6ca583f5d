/*
 * scanner_priv — the scanner's internals, shared by its files and no others. Each
 * file calls only those below it in this list (the sink calls back into
 * ack.c: scanner_delivered; a nap keeps the loop's housekeeping going:
 * scanner_tend, scanner_metrics_retry):
 *   scanner.c   the handle and the loop (serve): acquire, ack, claim, wait
 *   wake.c      an idle scanner's nap: renews the lock, waits to be woken
 *   claim.c     claim.lua, the claim sent ahead, a claim's IDs into a batch
 *   ack.c       Kafka's answers, settling them in Redis
 *   twins.c     what an old shard does during a split
 *   dispatch.c  the send path: claim.lua's reply parsed, one ID's event to the sink
 *   lease.c     the shard's node, layout and lock; fenced; the bell's connection
 *   batch.c     a claim's references and the settle list
 * Not part of any public API.
 */
#ifndef LAPSE_SCANNER_PRIV_H
#define LAPSE_SCANNER_PRIV_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "httpd.h"
#include "layout.h"
#include "log.h"
#include "metrics.h"
#include "redis.h"
#include "scanner.h"
#include "sink.h"

#define ACK_CHUNK 1024 /* IDs per ack.lua call */
#define ACK_WAIT_MS \
    100                        /* longest a claim's first acked ID waits for the rest of it:
                                    * more than linger.ms (sink.c), whose batches
                                    * answer a claim over several round trips */
#define SHUTDOWN_WAIT_MS 10000 /* longest wait for in-flight events on stop */

/*
 * One claim's IDs in flight. They share the claim's lease and its reply,
 * which holds their bytes, so a whole claim costs one allocation, not one
 * per ID; it is freed when its last ID is settled or given up.
 */
struct flight;
struct batch {
    struct batch *next;      /* in the scanner's settle list while acked is not empty */
    redisReply *reply;       /* claim.lua's answer: IDs and lease point into it */
    const redisReply *lease; /* the score claim.lua gave every ID of the batch */
    uint64_t term;           /* the lease term it was claimed in */
    size_t refs;             /* flights not yet settled or given up */
    size_t claimed;          /* IDs the claim took */
    size_t nacked;           /* flights on the acked list */
    int64_t acked_ms;        /* monotonic time of its first acknowledgement */
    struct flight *acked;    /* acknowledged, waiting to be settled */
    struct flight **acked_tail;
};

/* One event handed to Kafka and not yet settled in Redis. */
struct flight {
    struct batch *batch;
    struct flight *next; /* in batch->acked once acknowledged */
    const char *id;      /* the ID's bytes, inside batch->reply (not NUL-terminated) */
    size_t id_len;
};

/* Kafka fatal errors within a minute that end the scanner (scanner.c) */
#define SINK_FATAL_MAX 3

struct lapse_scanner {
    const struct lapse_config *cfg;
    uint32_t shard;
    lapse_redis *home;   /* cfg->nodes[0]: the layout */
    lapse_redis *node;   /* the shard's node (may be home) */
    lapse_redis **peers; /* other nodes by config index, opened on demand */
    struct lapse_layout layout;
    char keys[LAPSE_SHARD_NKEYS][LAPSE_KEY_MAX]; /* the shard's keys (layout.h) */
    char lease_key[LAPSE_KEY_MAX];               /* claim.lua's KEYS[8]: the shard's last lease */
    char pair_keys[2][LAPSE_KEY_MAX];            /* KEYS[9], [10] in a change (twins.c) */
    char token[96];                              /* ours in the lock: host:pid:random */
    int active;                                  /* we hold the lock */
    uint64_t term; /* bumped on every acquire: stale acks are dropped */
    /* Claim ahead: while a backlog drains, the next claim goes out on a
     * second connection before this one's events are sent, so Redis runs
     * it meanwhile (claim.c: scanner_claim_ahead). */
    lapse_redis *ahead;       /* opened on first use */
    int ahead_pending;        /* a claim sent there, its reply not read */
    int ahead_want;           /* its batch size */
    int64_t ahead_lock_until; /* as scanner_claim's lock_until */
    int no_ahead;             /* stopping: no more claims ahead */
    int retired;              /* a merge retired the shard: the loop ends, exit 0 */
    lapse_sink *sink;
    int64_t sink_fatal_at[SINK_FATAL_MAX]; /* when the last Kafka fatal errors came */
    int sink_fatal_next;                   /* ... the oldest of them */
    struct batch *settle;                  /* batches with acknowledged IDs to settle */
    struct batch **settle_tail;
    char *event; /* the event being encoded (reused) */
    size_t event_size;
    size_t inflight;           /* sent and not yet answered by Kafka */
    long long seen_below;      /* every ID with a deadline below this had been claimed */
    long long seen_at;         /* ... by the claim at this Redis time (claim.c: scanner_seen) */
    double backlog_tokens;     /* catch-up budget (scanner.catchup_rate) */
    int64_t backlog_refill_ms; /* monotonic time of the last refill */
    struct lapse_metrics metrics;
    lapse_httpd *httpd;        /* NULL while metrics are off or their port is taken */
    int metrics_port;          /* scanner.metrics_port + shard; 0: off */
    int64_t metrics_retry_ms;  /* monotonic time of the next try to listen */
    char metrics_err[256];     /* why the last try failed, as logged; "" when none did */
    int64_t metrics_warned_ms; /* monotonic time that was logged */
    int64_t memory_at_ms;      /* monotonic: when to read the Redis's memory next */
    int64_t forget_at_ms;      /* monotonic: when to look for offline IDs to forget next */
    char forget_cursor[24];    /* where the pass of forget.lua is ("0": a new one) */
    struct lapse_log_limit lim_redis, lim_kafka;
    /* Idle naps (wake.c): the mark in NS:s:N, the bell NS:b:N blocked on
     * with BLPOP on a connection of its own. */
    char sleep_key[LAPSE_KEY_MAX]; /* NS:s:N: the mark (sleep.lua) */
    char bell_key[LAPSE_KEY_MAX];  /* NS:b:N: the bell (lib/wake.lua) */
    lapse_redis *bell;             /* the connection blocked on the bell; opened on first use */
    int bell_pending;              /* a BLPOP sent there, its reply not read */
    int64_t bell_sent_ms;          /* monotonic: when */
    char mark[32];                 /* the mark we set, "" when not known (sleep.lua's ARGV[3]) */
    int64_t mark_due_ms;           /* monotonic: when its score falls due (INT64_MAX: "inf") */
    int64_t synced_ms;             /* monotonic: the last nap that read the zset and Redis time */
    long long synced_redis_ms;     /* ... that Redis time */
    int64_t renewed_ms;            /* monotonic: the lock's last renewal by a nap or claim */
    uint64_t bell_reconnects;      /* the node's reconnects when the bell was opened */
    char standby_holder[96];       /* the holder last logged while standing by; "" when active */
    int64_t standby_logged_ms;     /* monotonic time of that line or the last summary */
    uint64_t standby_polls;        /* lock polls since then */
    int64_t busy_since_us;         /* monotonic µs: the loop's work since then is not counted
                                      yet in metrics.busy_us; 0 while waiting or standing by */
};

/* The scanner s's metrics (metrics.h), updated from its loop and read by the
 * HTTP thread. */
#define METRIC_INC(s, x) atomic_fetch_add_explicit(&(s)->metrics.x, 1, memory_order_relaxed)
#define METRIC_ADD(s, x, n) atomic_fetch_add_explicit(&(s)->metrics.x, (n), memory_order_relaxed)
#define METRIC_SET(s, x, v) atomic_store_explicit(&(s)->metrics.x, (v), memory_order_relaxed)

/* lease.c: the shard's node, layout and lock (see there). */

/* Logs each of the scanner's handles that followed its node's primary to
 * another server by itself (lapse_redis_moved). */
void scanner_log_moved(lapse_scanner *s);

/* Reads the memory of the shard's Redis into the metrics (used, max,
 * evicting), at most every LAPSE_MEMORY_EVERY_MS, only when metrics are
 * served. A policy changed at runtime shows here before any reconnect. */
void scanner_memory(lapse_scanner *s, int64_t now);

/* forget.c: forgets offline IDs past scanner.offline_retention_s, a slice a
 * second while a pass runs, a pass every 10 s; publishes the offline count. */
void scanner_forget(lapse_scanner *s, int64_t now);

/* Counts and logs (rate-limited) a failed Redis call of the shard: the
 * error reply r, or when r is NULL why the call on `from` failed (the
 * shard's node, or the other node a split check asked). */
void scanner_redis_error(lapse_scanner *s, const char *what, const lapse_redis *from,
                         const redisReply *r);

/* Runs a shard script with the shard's keys, then `args` (lens may be NULL
 * for NUL-terminated args). The reply, or NULL on a connection failure. */
redisReply *scanner_eval(lapse_scanner *s, enum lapse_script script, const char **args,
                         const size_t *lens, int nargs);

int scanner_attach(lapse_scanner *s, volatile sig_atomic_t *stop);
void scanner_reload(lapse_scanner *s);
int scanner_acquire(lapse_scanner *s);
void scanner_ahead_drop(lapse_scanner *s);
void scanner_bell_free(lapse_scanner *s); /* closes the bell's connection (wake.c) */

/* Lost the lock: forgets what is queued for settling and goes back to
 * standby. */
void scanner_fenced(lapse_scanner *s);

/* scanner.c: tries the metrics port again when it was taken and the time
 * has come (the loop, and a nap, call it often). */
void scanner_metrics_retry(lapse_scanner *s, int64_t now);

/* scanner.c: the loop's housekeeping steps, listed there, on one clock
 * (the loop and a nap call it every pass). */
void scanner_tend(lapse_scanner *s);

/* wake.c: an idle scanner's nap (see there). */
int scanner_nap(lapse_scanner *s, volatile sig_atomic_t *stop);

/* claim.c: claims due IDs and sends them (see there). */
int scanner_claim(lapse_scanner *s, int want);

/* dispatch.c: claim.lua's IDs and one ID's event to the sink (see there). */
long scanner_claimed(const redisReply *c, struct flight *fl, long long *deadlines);
int scanner_dispatch(lapse_scanner *s, struct flight *f, long long deadline, long long since,
                     const redisReply *payload, long long seq);

/* twins.c: during a split or merge, whether claim.lua can drop the shard's
 * stale twins itself (its pair on the same server, not a Cluster); if so,
 * the pair's z and m are in s->pair_keys. */
int scanner_twins_in_claim(lapse_scanner *s);
/* twins.c: during a split, sorts an old shard's claimed IDs (see there). */
void scanner_twins_check(lapse_scanner *s, const struct flight *fl, size_t n, char *verdict);
void scanner_twins_drop(lapse_scanner *s, const struct flight *fl, size_t n, const char *verdict,
                        const char *lease, size_t lease_len);

/* ack.c: Kafka's answers and their settling in Redis (see there). */
void scanner_delivered(void *ctx, void *opaque, int ok, const char *reason);
void scanner_ack(lapse_scanner *s, int force);

/* batch.c: a claim's references and the settle list (see there). */
void scanner_batch_unref(struct batch *b, size_t n);
void scanner_settled(lapse_scanner *s, struct batch *b, struct flight *stop);
void scanner_drop_acks(lapse_scanner *s);

#endif
