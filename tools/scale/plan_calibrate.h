/*
 * plan_calibrate — lapse-scale plan --calibrate: what each operation costs
 * the configured Redis (the config's first node), measured now.
 *
 * A short bounded run in a scratch namespace of its own, NS.plan.<pid>
 * (namespace names take '.', keys are "NS:..." so no key of it can be a
 * key of NS or of any namespace lapse-scale init accepts without that
 * suffix), removed afterwards, also on failure and on SIGINT/SIGTERM. For
 * each shard form (one zset, small keys) in one shard: COUNT new IDs
 * through the producer library (touch), the same IDs reset (touch) and
 * extended, then made due and fired by claim.lua and ack.lua as a scanner
 * calls them (full claims of scanner.batch, each acknowledged whole), then
 * a few claims of one ID each (what a claim costs beyond its IDs), and
 * new IDs with a payload (what a payload costs beyond its bytes); once,
 * the reference: the same IDs as pipelined ZADDs into one plain zset.
 * Redis CPU per op is the INFO cpu delta (used_cpu_user + used_cpu_sys)
 * over each phase, memory per ID the INFO memory delta (used_memory), so
 * anything else the node runs meanwhile is counted too: calibrate on a
 * quiet node, or read the figures as an upper bound.
 *
 * Not on a Redis Cluster (its slots would spread the scratch shard's keys'
 * home to a primary other than the one measured): -1 saying so.
 */
#ifndef LAPSE_SCALE_PLAN_CALIBRATE_H
#define LAPSE_SCALE_PLAN_CALIBRATE_H

#include <stddef.h>

#include "config.h"
#include "plan.h"
#include "redis.h"

/* IDs a measurement of a write (one zset, at a set of _LOW and at one of
 * _TOP; small keys take fewer: plan_calibrate.c) and the longest the
 * whole run may take before it gives up (18 s alone on the machine of
 * docs/benchmarks.md; past 60 s with the test suite and a busy loop
 * beside it, since its sets are built with their deadlines scattered). */
#define LAPSE_PLAN_CALIBRATE_IDS 30000
#define LAPSE_PLAN_CALIBRATE_LOW 100000
#define LAPSE_PLAN_CALIBRATE_TOP 800000
#define LAPSE_PLAN_CALIBRATE_MAX_MS 120000

/*
 * Measures both forms' costs on `node` (cfg->nodes[0]'s handle, connected
 * or not) with IDs of id_bytes (4..512) into *out (source
 * LAPSE_PLAN_CALIBRATED). Returns 0; -1 with errstr on a failure (Redis
 * unreachable or refusing, a cluster, a run past
 * LAPSE_PLAN_CALIBRATE_MAX_MS) or when stopped by SIGINT/SIGTERM (errstr
 * "interrupted"). In every case the scratch namespace's keys are deleted
 * before it returns, as far as the node still answers (errstr then says
 * what was left).
 */
int lapse_plan_calibrate(const struct lapse_config *cfg, lapse_redis *node, int id_bytes,
                         struct lapse_plan_costs *out, char *errstr, size_t size);

#endif
