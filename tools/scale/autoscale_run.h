/*
 * autoscale_run — lapse-scale autoscale [--dry-run]: the scaler's loop.
 * Every scale.interval_ms it reads the figures (autoscale_read.h), logs
 * them at debug, decides (autoscale.h), logs each decision at info with
 * the figures behind it, and carries it out with the commands an operator
 * would run: split --start-cmd, merge --stop-cmd, finish --drain --rate
 * (resize.h). With --dry-run it prints each decision on stdout as
 * "autoscale: would ..." and changes nothing.
 *
 * SIGTERM and SIGINT end it between steps (a drain under way ends first).
 * A split or merge it started and had not finished is finished by the
 * next run (its first rule) or by hand: lapse-scale finish --drain.
 */
#ifndef LAPSE_SCALE_AUTOSCALE_RUN_H
#define LAPSE_SCALE_AUTOSCALE_RUN_H

#include "config.h"
#include "redis.h"

/* Runs until SIGTERM or SIGINT. Returns the exit status: 0 once stopped,
 * 1 on a failure to start (out of memory), 2 for a scale.metrics_bind
 * that is no address. */
int lapse_scale_autoscale(const struct lapse_config *cfg, lapse_redis **nodes, int dry_run);

#endif
