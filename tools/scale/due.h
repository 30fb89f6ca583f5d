/*
 * due — lapse-scale status --due [--json]: how many pending deadlines fall
 * due when, per shard and in total: overdue, within the next minute, the
 * next 10 minutes, hour, day, and later; and, as a column of its own, the
 * IDs in flight (being dispatched), which are in none of the others; and
 * when the next deadline still to come falls due.
 *
 * Cheap enough to run every few seconds against millions of pending IDs:
 * one read-only script per shard that counts with ZCOUNT ranges on the
 * shard's sorted set (O(log n) each, never a scan), on the shard's own
 * Redis clock (TIME), the scripts of one node pipelined in one round trip.
 *
 * During a split an ID that has not moved yet still sits in its old shard:
 * it is counted there, per shard as stored, as every other count of
 * lapse-scale status is.
 */
#ifndef LAPSE_SCALE_DUE_H
#define LAPSE_SCALE_DUE_H

#include <jansson.h>
#include <stdint.h>

#include "config.h"
#include "redis.h"
#include "status.h"

/* The buckets, in order; each one's upper edge is now + this many ms
 * (inclusive), its lower edge the previous one's (exclusive); "overdue"
 * reaches down to -inf, "later" up to +inf. */
#define LAPSE_SCALE_DUE_BUCKETS 6
extern const int64_t lapse_scale_due_edge_ms[LAPSE_SCALE_DUE_BUCKETS - 1];
extern const char *const lapse_scale_due_name[LAPSE_SCALE_DUE_BUCKETS];
/* The text table's header of each bucket, saying its range ("10m..1h"). */
extern const char *const lapse_scale_due_header[LAPSE_SCALE_DUE_BUCKETS];

/* One shard's histogram. */
struct lapse_scale_due {
    int64_t now_ms;                            /* the shard's Redis clock when read */
    long long bucket[LAPSE_SCALE_DUE_BUCKETS]; /* pending IDs not in flight, by due time */
    long long inflight;                        /* IDs being dispatched */
    int64_t next_ms; /* the earliest pending deadline after now_ms, -1 if none */
    int read;        /* 0: an error reply (error says why) */
    char error[256];
};

/*
 * Reads the histograms of `nshards` shards, all on node r, in one pipeline:
 * shard[k]'s into out[k] (out[k].read 0 and out[k].error when Redis
 * answered that shard with an error). Returns 0, or -2 with the reason in
 * errstr when the connection failed (no reply: trying again may help; out
 * is unspecified then).
 */
int lapse_scale_due_read(lapse_redis *r, const struct lapse_config *cfg, const uint32_t *shard,
                         size_t nshards, struct lapse_scale_due *out, char *errstr, size_t size);

/* What status --due --json prints, as one object (new reference): per
 * shard and in total the counts by range, in flight, pending, the next
 * deadline; a shard that cannot be read has "error" (said to warn, and
 * counted in *unread). NULL with errstr when the layout cannot be read. */
json_t *lapse_scale_due_json(const struct lapse_config *cfg, lapse_redis **nodes,
                             lapse_scale_warn_fn *warn, void *ctx, int *unread, char *errstr,
                             size_t size);

/* Prints the histogram. Returns the exit status: 0, or 1 when the layout
 * or a shard cannot be read (named on stderr; the others are shown). */
int lapse_scale_due(const struct lapse_config *cfg, lapse_redis **nodes, int as_json);

#endif
