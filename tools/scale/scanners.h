/*
 * scanners — which shards have an active scanner, and what starts one.
 *
 * A shard whose lock (NS:l:I) nobody holds fires nothing: its deadlines
 * wait in Redis until a scanner takes it. split prints what starts the new
 * shards' scanners (or runs --start-cmd); finish, which makes the new
 * shards the only home of their IDs, names every shard still without one
 * and prints the same lines for it, so that the operator who skipped the
 * first hears it at the moment it starts to matter, not at the next check.
 */
#ifndef LAPSE_SCALE_SCANNERS_H
#define LAPSE_SCALE_SCANNERS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "layout.h"
#include "redis.h"

/* "lapse-scanner -c FILE --shard J   # on a host that reaches NODE": what
 * starts shard j's scanner, into out (cut short past size). Returns out. */
char *lapse_scale_start_line(const struct lapse_config *cfg, lapse_redis **nodes,
                             const struct lapse_layout *l, uint32_t j, char *out, size_t size);

/* Shard numbers, ascending, as "3, 8-15" into out (cut short past size,
 * still a string). Returns out. */
char *lapse_scale_shard_list(const uint32_t *shard, size_t n, char *out, size_t size);

/*
 * Reads every shard's lock once (health.h) and, for the shards that no
 * scanner holds, prints on stderr a warning that names them ("lapse-scale:
 * CMD: warning: ...") and a start line each; a shard that cannot be read is
 * named as such. Prints nothing when every shard has a scanner. Returns
 * how many shards it named.
 */
size_t lapse_scale_warn_unserved(const struct lapse_config *cfg, lapse_redis **nodes,
                                 const struct lapse_layout *l, const char *cmd);

#endif
