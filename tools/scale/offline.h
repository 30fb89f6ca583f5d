/*
 * offline — lapse-scale offline [--json] [--limit N] [--prefix P]: the IDs
 * offline now, those written with recovery on (`watch`, an ingress rule's
 * recover = true) whose timeout fired and that have not been written since
 * (common/lua/lib/watch.lua), with the deadline that fell due and since
 * when (when Kafka took the timeout event), longest offline first: the
 * order of an operator looking for devices long dead.
 *
 * It walks every shard's watch records (common/lua/offline.lua, a slice a
 * call, read only): a listing, not a count. The count per shard is in
 * `lapse-scale status` and the scanners' lapse_scanner_offline gauge.
 */
#ifndef LAPSE_SCALE_OFFLINE_H
#define LAPSE_SCALE_OFFLINE_H

#include "config.h"
#include "redis.h"

/* Prints the offline IDs (the `limit` longest offline; 0: all) whose ID
 * starts with prefix ("" for all), oldest first: for people, a header line
 * and a table (ISO times, "offline for" on this host's clock), or a line
 * saying none is; with as_json one object (ns, offline: [{id, shard,
 * deadline_ms, since_ms}], total, truncated). Returns the exit status: 0
 * (also when none is offline), or 1 when the layout or a shard cannot be
 * read (named on stderr; the others are listed). */
int lapse_scale_offline(const struct lapse_config *cfg, lapse_redis **nodes, int as_json,
                        long limit, const char *prefix);

#endif
