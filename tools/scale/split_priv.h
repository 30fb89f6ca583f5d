/*
 * split_priv — what split.c's finish takes from split_move.c.
 */
#ifndef LAPSE_SPLIT_PRIV_H
#define LAPSE_SPLIT_PRIV_H

#include <stdint.h>

#include "config.h"
#include "layout.h"
#include "redis.h"

/* IDs (and watch records) a call moves at most. */
#define MOVE_CHUNK 256

/* Deletes new shard j's split markers (its set, its buckets'); best effort. */
void split_unmark(lapse_redis *r, const struct lapse_config *cfg, uint32_t j);

/* Moves old shard `shard`'s watch records whose IDs belong to its new twin
 * there. 0, or -1 with errstr. */
int split_watch_move(lapse_redis **nodes, const struct lapse_config *cfg,
                     const struct lapse_layout *l, uint32_t shard, char *errstr, size_t size);

#endif
