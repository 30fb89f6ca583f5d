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

#include <jansson.h>

#include "config.h"
#include "redis.h"
#include "status.h"

/* What offline --json prints, as one object (new reference): ns, offline
 * [{id, shard, deadline_ms, since_ms}] (the `limit` longest offline, 0:
 * all, whose ID starts with prefix), total, truncated. Walks every shard
 * whole, a slice of records a call; *failed 1 when a shard could not be
 * read (said to warn). NULL with errstr when the layout cannot be read. */
json_t *lapse_scale_offline_json(const struct lapse_config *cfg, lapse_redis **nodes, long limit,
                                 const char *prefix, lapse_scale_warn_fn *warn, void *ctx,
                                 int *failed, char *errstr, size_t size);

/*
 * One page of the offline IDs, for a caller that must not walk everything
 * at once (lapse-console): from `cursor` ("SHARD:N" as the last page's
 * "cursor" said; NULL or "" from the start), shard by shard in storage
 * order, until about `limit` IDs were found, every shard was read, or
 * `budget_ms` passed (at least one slice is read). The object has the
 * names of offline --json (ns, offline: this page's IDs, longest offline
 * first within the page; total: how many the page found; truncated: more
 * shards or records remain) and "cursor" (the next page's, null at the
 * end), "shards_from", "shards_scanned", "shards" (how far the walk got),
 * "unread_shards". NULL with errstr for a malformed cursor or an unread layout.
 */
json_t *lapse_scale_offline_page_json(const struct lapse_config *cfg, lapse_redis **nodes,
                                      const char *cursor, const char *prefix, long limit,
                                      int budget_ms, lapse_scale_warn_fn *warn, void *ctx,
                                      char *errstr, size_t size);

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
