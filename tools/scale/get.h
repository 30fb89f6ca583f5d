/*
 * get — lapse-scale get <id> [--json]: where an ID lives and what lapse
 * holds for it (tools/scale/inspect.h), printed for people or as one JSON object.
 */
#ifndef LAPSE_SCALE_GET_H
#define LAPSE_SCALE_GET_H

#include <jansson.h>
#include <stddef.h>

#include "config.h"
#include "redis.h"
#include "status.h"

/* What get --json prints for the `len` bytes of `id`, as one object (new
 * reference): its shard, node, deadline (deadline_ms null when nothing is
 * pending), in flight, payload, repeat, scanner, during a split its twin.
 * Reads only. NULL with the reason in errstr ("get: ..." for a bad ID or
 * a failed read, the layout's reason when it cannot be read). */
json_t *lapse_scale_get_json(const struct lapse_config *cfg, lapse_redis **nodes, const char *id,
                             size_t len, lapse_scale_warn_fn *warn, void *ctx, char *errstr,
                             size_t size);

/* Prints what the ID holds. Returns the exit status: 0 (an unknown ID
 * too: nothing pending), 1 on a Redis or layout error, 2 on a bad ID; the
 * reason of a failure goes to stderr in one line. */
int lapse_scale_get(const struct lapse_config *cfg, lapse_redis **nodes, const char *id,
                    int as_json);

#endif
