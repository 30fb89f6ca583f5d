/*
 * get — lapse-scale get <id> [--json]: where an ID lives and what lapse
 * holds for it (tools/scale/inspect.h), printed for people or as one JSON object.
 */
#ifndef LAPSE_SCALE_GET_H
#define LAPSE_SCALE_GET_H

#include "config.h"
#include "redis.h"

/* Prints what the ID holds. Returns the exit status: 0 (an unknown ID
 * too: nothing pending), 1 on a Redis or layout error, 2 on a bad ID; the
 * reason of a failure goes to stderr in one line. */
int lapse_scale_get(const struct lapse_config *cfg, lapse_redis **nodes, const char *id,
                    int as_json);

#endif
