/*
 * merge — halving a namespace's shards online, 2N -> N: the split run
 * backwards (docs/design.md, "Merges").
 *
 * Shard j = i + N retires into shard i. The layout changes in the split's
 * three crash-safe steps (split.h: layout:next, fence, publish), with state
 * "merging", shards N and prev_shards 2N. While merging, producers write
 * every ID of a retiring shard in its new home (taking its twin there, as
 * in a split), the retiring shards' scanners fire what still lives in them
 * and drop the twins that were rewritten, and lapse_split_finish ends it
 * once the retiring shards hold nothing (lapse_split_drain moves what is
 * left): it removes their keys and publishes N shards, and their scanners
 * stop by themselves (scanner/lease.c).
 *
 * Returns 0 or -1 with a one-line reason in errstr. `nodes` are
 * connections to cfg->nodes, index for index.
 */
#ifndef LAPSE_MERGE_H
#define LAPSE_MERGE_H

#include <stddef.h>

#include "config.h"
#include "layout.h"
#include "redis.h"

/*
 * Starts the merge 2N -> N. Refused during a split or a merge, and with one
 * shard. Resumes an interrupted merge. Fills *out with the new layout.
 */
int lapse_merge_start(lapse_redis **nodes, const struct lapse_config *cfg, struct lapse_layout *out,
                      char *errstr, size_t size);

#endif
