/*
 * health — one shard's counters as an operator reads them: how many IDs
 * it holds, how many are due, how many are in flight, how late the oldest
 * undelivered deadline is, and whether a scanner holds its lock.
 *
 * Read in one read-only Lua call per shard (common/lua/health.lua; a shard
 * in small keys bucket by bucket, bucket.h), so "now" is the shard's own
 * Redis clock and every count agrees with the others; nothing is written.
 * Used by lapse-scale status, status --watch and check.
 */
#ifndef LAPSE_HEALTH_H
#define LAPSE_HEALTH_H

#include <stdint.h>

#include "redis.h"

struct lapse_health {
    int64_t now_ms;             /* the shard's Redis clock when read */
    long long pending;          /* IDs in the shard (in flight included) */
    long long due;              /* scores at or before now: the backlog */
    long long inflight;         /* IDs holding a lease that has a record */
    int64_t oldest_due_ms;      /* age of the lowest score if due, else -1 */
    int64_t oldest_inflight_ms; /* age of the earliest deadline being dispatched
                                   (or leased, its lease run out), -1 if none */
    char holder[128];           /* the lock holder's token, "" when no scanner is active */
    long long keys;             /* its zsets that hold IDs: 1, or its buckets (bucket.h) */
    long long largest_ids;      /* IDs in the largest of them */
    long long largest_bytes;    /* its MEMORY USAGE, -1 when not allowed */
    long long over_listpack;    /* zsets over LAPSE_HEALTH_LISTPACK members: Redis keeps
                                those in its large encoding */
    long long offline;          /* IDs offline: recovery on, timed out, not back (lib/watch.lua) */
};

/* Redis's default zset-max-listpack-entries (a raised limit is not read:
 * CONFIG is often denied to lapse's user). */
#define LAPSE_HEALTH_LISTPACK 128

/*
 * Reads shard `shard` of namespace `ns` through r (the shard's node).
 * Returns 0; -2 with the reason in errstr when no reply came (a lost
 * connection, a failover, a cluster slot moving: trying again may help);
 * -1 with it on an unexpected reply. *out is unspecified then.
 */
int lapse_health_read(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard,
                      struct lapse_health *out, char *errstr, size_t size);

/* The same, with key_bytes 0: without the largest key's MEMORY USAGE
 * (largest_bytes -1), which walks that key whole; for a reader that comes
 * back every second whatever the shard's size (lapse-console). */
int lapse_health_read_sized(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard,
                            int key_bytes, struct lapse_health *out, char *errstr, size_t size);

/* How late the shard's oldest undelivered deadline is, in ms (pending and
 * due, or in flight): the larger of the two ages, -1 when nothing is due. */
int64_t lapse_health_overdue_ms(const struct lapse_health *h);

#endif
