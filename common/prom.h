/*
 * prom — writes the Prometheus text exposition format (version 0.0.4) into
 * a caller's buffer.
 *
 * Why it exists: the scanner and the ingress render their metrics the same
 * way (HELP and TYPE before each family, escaped label values, cumulative
 * histogram buckets in seconds); keeping that here keeps both renderers
 * pure functions over their counters, unit-tested without sockets.
 *
 * A writer never writes past its buffer: once something does not fit it
 * stops writing and lapse_prom_end reports the overflow, so the caller can
 * retry with a larger buffer.
 */
#ifndef LAPSE_PROM_H
#define LAPSE_PROM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct lapse_prom {
    char *buf;    /* the caller's buffer */
    size_t size;  /* its size */
    size_t len;   /* bytes written, without the NUL */
    int overflow; /* something did not fit: the text is cut short */
};

void lapse_prom_init(struct lapse_prom *o, char *buf, size_t size);

/* Appends formatted text as is. */
void lapse_prom_printf(struct lapse_prom *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "# HELP name help" and "# TYPE name type" (type: counter, gauge,
 * histogram). `help` must not hold a newline or a backslash. */
void lapse_prom_family(struct lapse_prom *o, const char *name, const char *type, const char *help);

/* Copies `src` into dst as a label value: backslash, double quote and
 * newline escaped. Cut short (still NUL-terminated) if dst is too small. */
void lapse_prom_escape(char *dst, size_t size, const char *src);

/*
 * A histogram as its owner keeps it: integers in 1/per_second of a second
 * (1000: ms, 1000000: µs), n bounds and n + 1 non-cumulative counts (the
 * last one above every bound), updated by other threads while it renders.
 */
struct lapse_prom_hist {
    const int64_t *bounds;
    size_t n;
    double per_second;
    atomic_uint_fast64_t *counts;
    atomic_uint_fast64_t *sum;
};

/* Counts one value v (in the histogram's units; below 0 counts as 0). */
void lapse_prom_observe(const struct lapse_prom_hist *h, int64_t v);

/* One histogram family in seconds: HELP and TYPE, name_bucket{labels,le=...}
 * for each bound and +Inf (cumulative), name_sum and name_count. `labels` is
 * the label text without braces (already escaped), e.g. `ns="demo",shard="0"`. */
void lapse_prom_histogram(struct lapse_prom *o, const char *name, const char *help,
                          const char *labels, const struct lapse_prom_hist *h);

/* The text length, or -1 if it did not fit. */
int lapse_prom_end(const struct lapse_prom *o);

#endif
