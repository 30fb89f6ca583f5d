/*
 * offline — lapse-scale offline [--json] [--limit N] [--prefix P]: the IDs
 * offline now, those written with recovery on (`watch`, an ingress rule's
 * recover = true) whose timeout fired and that have not been written since
 * (common/lua/lib/watch.lua), with the deadline that fell due and since
 * when (when Kafka took the timeout event), shard by shard.
 *
 * It walks every shard's watch records (common/lua/offline.lua, a slice a
 * call, read only): a listing, not a count. The count per shard is in
 * `lapse-scale status` and the scanners' lapse_scanner_offline gauge.
 */
#ifndef LAPSE_SCALE_OFFLINE_H
#define LAPSE_SCALE_OFFLINE_H

#include "config.h"
#include "redis.h"

/* Prints the offline IDs (at most limit; 0: all) whose ID starts with
 * prefix ("" for all): "id<TAB>shard<TAB>deadline_ms<TAB>since_ms" a line,
 * or --json. Returns the exit status: 0, or 1 when the layout or a shard
 * cannot be read (named on stderr; the others are listed). */
int lapse_scale_offline(const struct lapse_config *cfg, lapse_redis **nodes, int as_json,
                        long limit, const char *prefix);

#endif
