/*
 * resize — lapse-scale's commands that change the layout: init, split, merge
 * and finish (the layout's steps are common/layout.c, split.c and merge.c; these print
 * what an operator reads and say what to do next). Each returns the
 * program's exit status.
 */
#ifndef LAPSE_SCALE_RESIZE_H
#define LAPSE_SCALE_RESIZE_H

#include "config.h"
#include "redis.h"

/* init N: form 0 (default) and -1 (--one-zset) a new namespace in one zset a
 * shard, an existing one as it is; 1 (--small-keys) a new namespace in
 * small keys, and an existing one in one zset a shard converted. */
int scale_init(const struct lapse_config *cfg, lapse_redis **nodes, const char *arg, int form);

/* split [--to NODES] [--start-cmd CMD]: to_list and start_cmd may be NULL. */
int scale_split(const struct lapse_config *cfg, lapse_redis **nodes, const char *to_list,
                const char *start_cmd);

/* merge [--stop-cmd CMD]: stop_cmd may be NULL. */
int scale_merge(const struct lapse_config *cfg, lapse_redis **nodes, const char *stop_cmd);

/* finish [--drain [--rate N]]. */
int scale_finish(const struct lapse_config *cfg, lapse_redis **nodes, int drain, int rate);

#endif
