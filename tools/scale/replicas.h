/*
 * replicas — which primaries have fewer replicas than redis.wait_replicas
 * needs (lapse-scale status and check). Such a primary still applies
 * writes, but no WAIT there can confirm them: producers report its writes
 * failed (docs/operating.md, "Durable acknowledgement").
 *
 * Replicas are counted from INFO replication's connected_slaves; where the
 * ACL forbids INFO (-@dangerous), from a WAIT asking more replicas than can
 * be there (it answers, after the replicas' next acknowledgement, how many
 * there are).
 */
#ifndef LAPSE_SCALE_REPLICAS_H
#define LAPSE_SCALE_REPLICAS_H

#include <hiredis/hiredis.h>

#include "config.h"
#include "redis.h"

/* One primary: the node's name ("cluster" for a cluster), its address and
 * its replicas (-1: could not be asked). */
typedef void lapse_scale_replicas_cb(void *ctx, const char *node, const char *primary,
                                     long replicas);

/* Calls cb for each primary of each node (every primary of a cluster).
 * Returns how many have fewer than cfg->redis_wait_replicas replicas (0
 * when wait_replicas is 0: then cb is not called). */
int lapse_scale_replicas_each(const struct lapse_config *cfg, lapse_redis **nodes,
                              lapse_scale_replicas_cb *cb, void *ctx);

/* connected_slaves of an INFO replication reply, or -1 when it is none. */
long lapse_scale_connected_replicas(const redisReply *rep);

#endif
