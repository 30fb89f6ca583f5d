/*
 * memory — each Redis primary's memory for lapse-scale status and check:
 * used_memory, maxmemory and maxmemory-policy (INFO memory, or CONFIG GET
 * where the ACL denies INFO; "unknown" where it denies both). An evicting
 * policy loses deadlines silently (common/redis_policy.c says why), and a
 * primary near its maxmemory is about to refuse writes (noeviction), so
 * check fails on either.
 */
#ifndef LAPSE_SCALE_MEMORY_H
#define LAPSE_SCALE_MEMORY_H

#include <jansson.h>

#include "config.h"
#include "redis.h"

/* The default of check --max-memory: used_memory above this percentage of
 * maxmemory is a problem. */
#define LAPSE_SCALE_MAX_MEMORY_PCT 90

/* One primary's memory. */
struct lapse_scale_memory {
    char node[LAPSE_NODE_NAME_MAX]; /* the node's name ("cluster" for each primary of one) */
    char primary[300];              /* its primary's host:port ("-" unknown) */
    int read;                       /* 0: it did not answer (error says why) */
    struct lapse_redis_memory m;    /* with read: what it said */
    char error[256];                /* without read: why */
};

/* Reads every node's (every cluster primary's) memory into a new array
 * (*out, freed by the caller with free); returns how many. policy_checked
 * (redis.policy_checked) stands in for a policy the ACL hides. */
size_t lapse_scale_memory_read(const struct lapse_config *cfg, lapse_redis **nodes,
                               struct lapse_scale_memory **out);

/* One JSON object of a primary's memory: node, primary, used_memory,
 * maxmemory (null unknown), maxmemory_policy (null unknown), evicting
 * (true/false/null), error (unread only). */
json_t *lapse_scale_memory_json(const struct lapse_scale_memory *e);

/* Prints the table of status (a header, then a line per primary). */
void lapse_scale_memory_print(const struct lapse_scale_memory *e, size_t n);

/* used_memory as a percentage of maxmemory; -1 when either is unknown or
 * there is no maxmemory. */
double lapse_scale_memory_pct(const struct lapse_redis_memory *m);

#endif
