/*
 * check — lapse-scale check [--max-overdue S] [--json]: one health verdict
 * for cron jobs, probes and scripts. Exit statuses (also in --help and the
 * docs/protocol.md, "Exit statuses and signals"):
 *   0  every shard has an active scanner and nothing is overdue beyond S
 *   1  a problem: one line per problem on stdout, e.g.
 *      "shard 3: no active scanner", "shard 5: oldest due ID is 93 s
 *      overdue (max 60)"; also a namespace not initialised or a split or
 *      finish left half-way; a primary whose maxmemory-policy evicts, or whose
 *      used memory is past --max-memory percent (default 90) of maxmemory; and with
 *      redis.wait_replicas a primary with fewer replicas than that
 *      ("replicas_missing")
 *   2  usage or config errors (decided by the caller, main)
 *   3  Redis unreachable: a node could not be asked (its shards are named)
 */
#ifndef LAPSE_SCALE_CHECK_H
#define LAPSE_SCALE_CHECK_H

#include <stdint.h>

#include "config.h"
#include "redis.h"

#define LAPSE_CHECK_OK 0
#define LAPSE_CHECK_PROBLEM 1
#define LAPSE_CHECK_USAGE 2
#define LAPSE_CHECK_UNREACHABLE 3

/* Checks every shard; returns one of the statuses above. */
int lapse_scale_check(const struct lapse_config *cfg, lapse_redis **nodes, int64_t max_overdue_ms,
                      int max_memory_pct, int as_json);

#endif
