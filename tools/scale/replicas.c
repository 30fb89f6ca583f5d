/*
 * replicas — see replicas.h.
 */
#include "replicas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

long lapse_scale_connected_replicas(const redisReply *rep)
{
    if (!rep || rep->type != REDIS_REPLY_STRING)
        return -1;
    const char *p = strstr(rep->str, "connected_slaves:");
    return p ? atol(p + strlen("connected_slaves:")) : -1;
}

/* Replicas of the primary behind r (slot: a cluster's, of that primary). */
static long replicas_of(lapse_redis *r, int cluster, uint16_t slot)
{
    const char *info[] = {"INFO", "replication"}, *wait[] = {"WAIT", "1000", "1100"};
    size_t infol[] = {4, 11}, waitl[] = {4, 4, 4};
    redisReply *rep = cluster ? lapse_redis_command_slot(r, slot, 2, info, infol)
                              : lapse_redis_command_argv(r, 2, info, infol);
    long n = lapse_scale_connected_replicas(rep);
    if (rep && rep->type == REDIS_REPLY_ERROR) { /* the ACL forbids INFO */
        freeReplyObject(rep);
        rep = cluster ? lapse_redis_command_slot(r, slot, 3, wait, waitl)
                      : lapse_redis_command_argv(r, 3, wait, waitl);
        n = rep && rep->type == REDIS_REPLY_INTEGER ? (long)rep->integer : -1;
    }
    if (rep)
        freeReplyObject(rep);
    return n;
}

int lapse_scale_replicas_each(const struct lapse_config *cfg, lapse_redis **nodes,
                              lapse_scale_replicas_cb *cb, void *ctx)
{
    int missing = 0;
    for (size_t n = 0; cfg->redis_wait_replicas > 0 && n < cfg->nnodes; n++) {
        lapse_redis *r = nodes[n];
        if (lapse_redis_one_server(r)) {
            long k = lapse_redis_ensure(r) < 0 ? -1 : replicas_of(r, 0, 0);
            missing += k >= 0 && k < cfg->redis_wait_replicas;
            cb(ctx, lapse_redis_name(r), lapse_redis_addr(r)[0] ? lapse_redis_addr(r) : "-", k);
            continue;
        }
        const struct lapse_cluster_map *m = lapse_redis_cluster_map(r);
        for (size_t p = 0; m && p < m->nprimaries; p++) {
            int first = -1;
            for (int s = 0; s < LAPSE_SLOTS && first < 0; s++)
                if (m->owner[s] == p)
                    first = s;
            if (first < 0)
                continue;
            char addr[LAPSE_CLUSTER_ADDR_MAX];
            snprintf(addr, sizeof addr, "%s", m->primaries[p]);
            long k = replicas_of(r, 1, (uint16_t)first);
            missing += k >= 0 && k < cfg->redis_wait_replicas;
            cb(ctx, "cluster", addr, k);
            m = lapse_redis_cluster_map(r); /* (a failed call may have read it again) */
        }
    }
    return missing;
}
