/*
 * watch — lapse-scale status --watch [--interval S] [--count N]: the
 * shards' counters refreshed like watch(1). On a terminal the screen is
 * cleared and redrawn; otherwise each refresh is a block of plain lines
 * that opens with "[<ISO-8601 UTC time>]". During a split (and a
 * `finish --drain`) it shows the IDs left to check in the old shards, the
 * rate they go down at and when that ends at this rate.
 */
#ifndef LAPSE_SCALE_WATCH_H
#define LAPSE_SCALE_WATCH_H

#include "config.h"
#include "redis.h"

/*
 * Refreshes every interval_ms until SIGINT or SIGTERM (it installs their
 * handlers) or, count > 0, after `count` refreshes. A refresh that fails
 * (Redis unreachable) says so in its block and the watch goes on. Returns
 * the exit status: 0.
 */
int lapse_scale_watch(const struct lapse_config *cfg, lapse_redis **nodes, int interval_ms,
                      int count);

#endif
