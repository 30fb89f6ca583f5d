/*
 * autoscale_scrape — the scanners' own figures for the scaler
 * (scale.scanner_hosts): per shard, its scanner's busy fraction and
 * lateness p99 between two readings, from its /metrics
 * (lapse_scanner_busy_seconds_total and the lapse_scanner_lateness_seconds
 * histogram, scanner/metrics.h).
 *
 * Shard N's scanner serves on scanner.metrics_port + N (scanner.c); the
 * scaler cannot know on which host, so it tries each of scanner_hosts in
 * turn and keeps, per shard, the one that answered (tried first next
 * time). Only the active scanner of a shard works: a standby on another
 * host answers too, with a busy counter that does not move, so a page that
 * says lease_held 0 is taken only when no host has the shard's active
 * scanner.
 *
 * The HTTP client is the smallest that does: HTTP/1.0 GET /metrics on a
 * TCP socket, connect and read within one deadline (1 s a host), the body
 * capped. The parser takes text, not a socket, and is unit-tested on a real
 * scanner's page. A shard whose scanner cannot be reached is counted in the
 * reading (scanners_unread) and named in a message for the caller to log;
 * it leaves the figures to the others and never makes the reading fail: a
 * scanner may be down while the Redis figures still stand.
 */
#ifndef LAPSE_SCALE_AUTOSCALE_SCRAPE_H
#define LAPSE_SCALE_AUTOSCALE_SCRAPE_H

#include <stddef.h>
#include <stdint.h>

#include "autoscale.h"
#include "config.h"

/* Lateness buckets a page may have (the scanner renders 13, +Inf included). */
#define LAPSE_SCRAPE_BUCKETS_MAX 32

/* What one /metrics page says (summed over its samples when several label
 * sets carry the same name, matched by le for the buckets). */
struct lapse_scrape_page {
    double busy_s;                       /* lapse_scanner_busy_seconds_total, -1 absent */
    int lease_held;                      /* lapse_scanner_lease_held: 1, 0 (a standby), -1 absent */
    size_t nbuckets;                     /* lateness buckets found, by le ascending */
    double le[LAPSE_SCRAPE_BUCKETS_MAX]; /* upper bounds, seconds (+Inf: INFINITY) */
    double count[LAPSE_SCRAPE_BUCKETS_MAX]; /* cumulative event counts */
};

/* Parses a Prometheus text page into *p (always filled). Returns 0 when the
 * busy counter was there, -1 when not (not a lapse scanner's page). */
int lapse_scrape_parse(const char *text, struct lapse_scrape_page *p);

/* The busy fraction between two pages wall_ms apart (0..1), or -1 when it
 * cannot be told: a counter absent or gone back (a restart), no time. */
double lapse_scrape_busy(const struct lapse_scrape_page *prev, const struct lapse_scrape_page *cur,
                         int64_t wall_ms);

/* The lateness p99 (ms) of the events counted between two pages: the upper
 * bound of the first bucket whose count reaches 99 % of them, INT64_MAX
 * when that is +Inf; -1 when no event was counted. A histogram that went
 * back (a restart) counts from zero. */
int64_t lapse_scrape_p99(const struct lapse_scrape_page *prev, const struct lapse_scrape_page *cur);

/* GETs http://host:port/metrics (HTTP/1.0), connect and read within
 * timeout_ms. Returns the body (malloc'd, NUL-terminated; the caller frees
 * it), or NULL with the reason in err. Never prints. */
char *lapse_scrape_get(const char *host, int port, int timeout_ms, char *err, size_t size);

/* The scaler's memory of each shard's scanner between readings. */
struct lapse_autoscale_scanners {
    uint32_t shards;                /* the shard count it was made for (0: none yet) */
    int *host;                      /* per shard: the index of the host that answered, -1 */
    struct lapse_scrape_page *prev; /* per shard: its page at the last reading */
    int64_t *prev_at;               /* ... when (monotonic ms), 0: none */
    int *said; /* per shard: the host last named in the log (the caller's to keep), -1 */
};

void lapse_autoscale_scanners_free(struct lapse_autoscale_scanners *s); /* accepts zeros */

/*
 * Reads the scanners of r->shards shards (r filled by lapse_autoscale_read)
 * into r->busy, r->lateness_p99_ms, r->scanners_read and
 * r->scanners_unread, at monotonic time now_ms. Does nothing without
 * cfg->scale_scanner_hosts or with scanner.metrics_port 0. The shards whose
 * scanner did not answer are named in unread ("" when none). s starts
 * again (forgets every shard) when the shard count changed. Never prints.
 */
void lapse_autoscale_scanners_read(const struct lapse_config *cfg,
                                   struct lapse_autoscale_scanners *s, int64_t now_ms,
                                   struct lapse_autoscale_reading *r, char *unread, size_t size);

#endif
