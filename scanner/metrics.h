/*
 * metrics — a scanner's counters and what it serves on scanner.metrics_port
 * (/metrics, /healthz, /readyz: common/httpd.h).
 *
 * The scanner thread updates the counters (atomics, relaxed: each is an
 * independent tally or a gauge read on its own); the HTTP thread renders a
 * snapshot. Rendering is a pure function of the struct, unit-tested without
 * sockets. Names follow Prometheus conventions (base units: seconds).
 */
#ifndef LAPSE_METRICS_H
#define LAPSE_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Upper bounds (ms) of the lateness histogram's buckets, rendered in
 * seconds (le="0.001" ...); +Inf follows. */
#define LAPSE_LATENESS_BUCKETS 12
extern const int64_t lapse_lateness_bounds[LAPSE_LATENESS_BUCKETS];

struct lapse_metrics {
    const char *ns; /* labels */
    uint32_t shard;
    atomic_uint_fast64_t claimed;      /* IDs claimed */
    atomic_uint_fast64_t sent;         /* events handed to Kafka */
    atomic_uint_fast64_t acked;        /* events Kafka acknowledged */
    atomic_uint_fast64_t failed;       /* events Kafka gave up on (re-claimed later) */
    atomic_uint_fast64_t settled;      /* acknowledged IDs removed or re-armed in Redis */
    atomic_uint_fast64_t fenced;       /* times the lease was found lost */
    atomic_uint_fast64_t takeovers;    /* times this scanner acquired the shard */
    atomic_uint_fast64_t recovered;    /* IDs a takeover took back from a dead holder */
    atomic_uint_fast64_t redis_errors; /* failed Redis calls */
    atomic_uint_fast64_t redis_reconnects;
    atomic_uint_fast64_t kafka_errors; /* librdkafka error callbacks */
    atomic_uint_fast64_t naps;         /* idle naps begun (wake.c) */
    atomic_uint_fast64_t woken;        /* naps a producer's write ended (the bell) */
    /* µs the loop worked while holding the shard: its passes less their
     * waits (for Kafka or the next deadline, the nap); µs because a pass
     * often takes less than a ms, rendered in seconds */
    atomic_uint_fast64_t busy_us;
    atomic_int_fast64_t inflight;          /* sent, not yet answered */
    atomic_int_fast64_t due;               /* due IDs left after the last claim */
    atomic_int_fast64_t oldest_overdue_ms; /* age of the oldest due ID, 0 if none */
    atomic_int_fast64_t lease_held;        /* 1 while this scanner is the active one */
    atomic_int_fast64_t redis_up;          /* 1: the shard's Redis answered the last call */
    atomic_int_fast64_t attached;     /* 1 once the layout was read and the shard's node known */
    atomic_int_fast64_t splitting;    /* 1 while the layout followed is splitting */
    atomic_int_fast64_t merging;      /* 1 while the layout followed is merging */
    atomic_int_fast64_t layout_epoch; /* epoch of the layout followed */
    /* the shard's Redis primary, read every LAPSE_MEMORY_EVERY_MS (INFO
     * memory); -1: not read, or not readable (not rendered then) */
    atomic_int_fast64_t memory_used;      /* used_memory, bytes */
    atomic_int_fast64_t memory_max;       /* maxmemory, bytes (0: no limit) */
    atomic_int_fast64_t evicting;         /* 1: maxmemory-policy evicts keys, 0: noeviction */
    atomic_int_fast64_t replicas;         /* connected_slaves of the shard's primary */
    atomic_int_fast64_t replicas_missing; /* redis.wait_replicas less that, at least 0 */
    atomic_uint_fast64_t lateness[LAPSE_LATENESS_BUCKETS + 1]; /* non-cumulative */
    atomic_uint_fast64_t lateness_sum_ms;
    atomic_uint_fast64_t
        written_past_due;                /* events whose lateness counts from after the deadline */
    atomic_uint_fast64_t recovered_sent; /* "recovered" events handed to Kafka */
    atomic_uint_fast64_t bad_records;    /* recovered events whose record was unreadable */
    atomic_uint_fast64_t offline_forgotten; /* offline IDs forgotten after the retention */
    atomic_int_fast64_t offline;            /* IDs offline in the shard (-1: not read yet) */
};

/* How often a scanner reads its Redis's memory (ms): often enough for an
 * alert, rarely enough to cost nothing beside the claims. */
#define LAPSE_MEMORY_EVERY_MS 5000

/* Counts one event's lateness (fired_ms - deadline_ms, clamped at 0). */
void lapse_metrics_lateness(struct lapse_metrics *m, int64_t late_ms);

/* Renders the Prometheus text format into buf. Returns the length, or -1 if
 * it did not fit. */
int lapse_metrics_render(struct lapse_metrics *m, char *buf, size_t size);

/* /readyz: 1 when the shard's Redis answered the last call and the scanner
 * holds the lease or stands by; else 0 with the reason in why. */
int lapse_metrics_ready(struct lapse_metrics *m, char *why, size_t size);

/* Serves `m` on bind:port (httpd.h); NULL with errstr when the port cannot
 * be opened. `m` must outlive the server; stop it with lapse_httpd_stop. */
struct lapse_httpd *lapse_metrics_serve(struct lapse_metrics *m, const char *bind, int port,
                                        char *errstr, size_t size);

#endif
