/*
 * probe — whether the producer's Redis nodes answer, for a long-running
 * producer's redis_up gauge and /readyz (lapse-producer --from-kafka) while
 * no writes tell it. See lapse_producer_probe in producer.h.
 *
 * It only runs with nothing queued or in flight: a PING on a connection
 * that still owes replies to a pipelined batch would read one of them.
 */
#include "producer_priv.h"

int lapse_producer_probe(lapse_producer *p, uint64_t *reconnects)
{
    if (p->nops || p->nflight)
        return -1;
    int down = 0;
    uint64_t rc = 0;
    for (size_t n = 0; n < p->cfg->nnodes; n++) {
        /* (a node in its reconnect back-off fails at once, without I/O) */
        redisReply *r = lapse_redis_command(p->nodes[n], "PING");
        if (!r)
            down++;
        else
            freeReplyObject(r);
        rc += lapse_redis_reconnects(p->nodes[n]);
    }
    if (reconnects)
        *reconnects = rc;
    return down;
}
