/*
 * split — doubling a namespace's shards online, N -> 2N, without moving data.
 *
 * An ID of old shard i either stays (bit N of its hash clear) or belongs to
 * new shard i + N. The layout changes in three crash-safe steps, each safe
 * to re-run (lapse_split_start resumes an interrupted split):
 *   1. the next layout is written beside the current one (NS:layout:next);
 *   2. every shard is fenced: its epoch key NS:e:I is raised to the new
 *      epoch, so scripts refuse producers and scanners that still use the
 *      old layout (they reload, and wait while it is not published yet);
 *   3. the next layout replaces the current one.
 * Between 2 and 3 writers and scanners pause (bounded by the time the tool
 * takes); no one ever acts on the old layout after step 2. While splitting,
 * producers write moving IDs in their new shard, accounting for the old
 * twin (docs/design.md, "Splits: how they stay exact"), and old shards' scanners drop twins that were
 * rewritten (scanner/twins.c). lapse_split_finish ends the split once no
 * old shard holds a moving ID; lapse_split_drain moves the rest itself.
 *
 * All functions return 0 or -1 with a one-line reason in errstr (and
 * lapse_split_finish 1, below). `nodes`
 * are connections to cfg->nodes, index for index.
 */
#ifndef LAPSE_SPLIT_H
#define LAPSE_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "layout.h"
#include "redis.h"

/*
 * Starts the split N -> 2N: new shard i + N goes on node to[(i) % nto] (indices
 * into cfg->nodes), or on the node of shard i when nto is 0. Resumes an
 * interrupted split (then `to` is ignored). Fills *out with the new layout.
 */
int lapse_split_start(lapse_redis **nodes, const struct lapse_config *cfg, const uint16_t *to,
                      size_t nto, struct lapse_layout *out, char *errstr, size_t size);

/* What is left to move out of one old shard. */
struct lapse_split_left {
    uint64_t ids;        /* moving IDs still in the old shard */
    int64_t last_due_ms; /* the latest deadline among them, -1 if none */
};

/* Counts old shard `shard`'s moving IDs (a full ZSCAN, hashing each ID; of
 * every bucket of a shard in small keys, bucket.h). */
int lapse_split_left(lapse_redis **nodes, const struct lapse_config *cfg,
                     const struct lapse_layout *l, uint32_t shard, struct lapse_split_left *out,
                     char *errstr, size_t size);

/*
 * Moves the moving IDs of every old shard into their new shards, at most
 * `rate` IDs a second, each move safe against a concurrent reset or fire
 * (take, seed, drop: as a producer would). IDs in flight are retried until
 * they are settled, for at most `timeout_ms`. *moved counts the moves.
 */
int lapse_split_drain(lapse_redis **nodes, const struct lapse_config *cfg,
                      const struct lapse_layout *l, int rate, int timeout_ms, uint64_t *moved,
                      char *errstr, size_t size);

/*
 * Ends the split if no old shard holds a moving ID; otherwise fails with
 * their count in errstr and *left set. Fills *out with the new layout.
 * Returns 1, *out the layout as it is, when no split is under way (a
 * finish run again: nothing to do).
 */
int lapse_split_finish(lapse_redis **nodes, const struct lapse_config *cfg, uint64_t *left,
                       struct lapse_layout *out, char *errstr, size_t size);

#endif
