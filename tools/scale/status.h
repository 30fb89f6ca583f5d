/*
 * status — lapse-scale status [--json]: the layout; per node how it is
 * reached, its primary, replicas online and lag (per primary on a
 * cluster); per shard its node, pending, due, in flight, oldest overdue
 * and active scanner; during a split what is left to move.
 */
#ifndef LAPSE_SCALE_STATUS_H
#define LAPSE_SCALE_STATUS_H

#include "config.h"
#include "layout.h"
#include "redis.h"

/* Prints the status. Returns the exit status: 0, or 1 when the layout or
 * a shard cannot be read (the reason on stderr; the other shards are
 * shown all the same). */
int lapse_scale_status(const struct lapse_config *cfg, lapse_redis **nodes, int as_json);

/* The layout, read again while no reply comes (up to
 * redis.retry_timeout_ms); status, get and finish read it through this. 0, or -1 with the reason printed on stderr (an
 * uninitialised namespace: how to initialise it). */
int lapse_scale_layout(const struct lapse_config *cfg, lapse_redis **nodes, struct lapse_layout *l);

#endif
