/*
 * autoscale_read — one reading of the scaler's figures from Redis, with
 * bounded calls only: the layout (one HGETALL), per node one pipelined
 * due-times script for its shards (due.h: ZCOUNTs, never a scan), per shard
 * the counters' script (health.h: pending, the oldest overdue, whether a
 * scanner holds it), per node its memory (memory.h) and INFO cpu.
 *
 * What it does not read: the scanners' own busy fraction and lateness
 * histogram (they are on each scanner's /metrics, one port per shard and
 * host, which the scaler cannot find in general). The Redis side stands in:
 * the oldest overdue ID of a served shard is lateness as Redis sees it, and
 * due IDs per second is the work the scanners must keep up with.
 */
#ifndef LAPSE_SCALE_AUTOSCALE_READ_H
#define LAPSE_SCALE_AUTOSCALE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "autoscale.h"
#include "config.h"
#include "redis.h"

/* Redis CPU counters of each node between readings (INFO cpu). */
struct lapse_autoscale_cpu {
    size_t n;       /* cfg->nnodes */
    double *sec;    /* used_cpu_sys + used_cpu_user at the last reading, -1 unread */
    int64_t *at_ms; /* when (monotonic) */
};

/* Allocates the counters for cfg's nodes. 0, or -1 (out of memory). */
int lapse_autoscale_cpu_init(struct lapse_autoscale_cpu *c, size_t nnodes);
void lapse_autoscale_cpu_free(struct lapse_autoscale_cpu *c); /* accepts zeros */

/*
 * Reads one reading into *r at monotonic time now_ms: always fills it; a
 * shard or node that did not answer leaves r->ok 0 and says which in
 * r->why (the figures read are kept, for the log and the metrics).
 * cpu carries the INFO cpu counters from one reading to the next (the
 * first reading of a node has no CPU figure). Never prints.
 */
void lapse_autoscale_read(const struct lapse_config *cfg, lapse_redis **nodes,
                          struct lapse_autoscale_cpu *cpu, int64_t now_ms,
                          struct lapse_autoscale_reading *r);

/* The CPU seconds (used_cpu_sys + used_cpu_user) in an INFO cpu text, or
 * -1 when neither is there. */
double lapse_autoscale_cpu_parse(const char *info);

#endif
