/*
 * flight — the ring of full batches sent without waiting for their replies
 * (producer_flush_full in producer.c puts them there): reading the replies,
 * oldest first; with redis.wait_replicas, waiting for confirm.c to confirm
 * each batch read; releasing confirmed batches; and, when one fell short,
 * sending every batch in flight again the careful way.
 *
 * What it keeps true: batches leave the ring in the order they were sent,
 * and when one was not applied or confirmed, all of them are sent again,
 * oldest first, so each ID's ops end up applied in the order they were
 * queued. A send (send.c, send_pipe.c) works only on the queue: a batch is
 * swapped into it for a send (producer_swap) and back.
 */
#include <stddef.h>

#include "producer_priv.h"

/* Exchanges the queue with batch b (one in flight): a send works on the
 * queue. */
void producer_swap(lapse_producer *p, struct producer_batch *b)
{
    struct producer_batch q = {p->ops,       p->nops,      p->cap_ops, p->arena,
                               p->arena_len, p->arena_cap, p->seq};
    p->ops = b->ops;
    p->nops = b->nops;
    p->cap_ops = b->cap_ops;
    p->arena = b->arena;
    p->arena_len = b->arena_len;
    p->arena_cap = b->arena_cap;
    p->seq = b->seq;
    *b = q;
}

/* A batch settled with rc (< 0: not applied, each op reported): bounded
 * slack's memory of what was written may then be wrong: forget it all. The
 * extends its writes absorbed were reported with any that failed. */
void producer_settled(lapse_producer *p, int rc)
{
    if (rc < 0 && p->slack) {
        lapse_slack_free(p->slack);
        p->slack = lapse_slack_new();
    }
    size_t kept = 0;
    for (size_t i = 0; i < p->nabsorbed; i++)
        if (p->absorbed[i].seq != p->seq)
            p->absorbed[kept++] = p->absorbed[i];
    p->nabsorbed = kept;
}

/* The oldest batch in flight is confirmed: it leaves the ring. */
static void producer_release(lapse_producer *p)
{
    size_t k = p->flight_first;
    p->settled = p->upto[k]; /* batches leave in order: every earlier submission too */
    producer_swap(p, &p->flight[k]);
    producer_settled(p, 0);
    p->nops = 0; /* counted and unindexed when it was sent */
    p->arena_len = 0;
    producer_swap(p, &p->flight[k]); /* the queue back; flight[k] keeps the buffers */
    p->flight_first = (k + 1) % FLIGHTS;
    p->nflight--;
    p->nread--;
}

/*
 * Something in flight fell short (a lost connection, a failover, a WAIT that
 * saw too few replicas, a changed layout): every batch in flight is sent
 * again the careful way, oldest first, the read ones too (their writes may
 * die with the primary before a replica took them). Every op is idempotent,
 * so applying a batch again is safe; sending them in order keeps each ID's
 * ops in order (IDs in several of them only have bare extends there:
 * producer_overlaps). Returns as lapse_producer_flush.
 */
static int producer_resend(lapse_producer *p, char *errstr, size_t size)
{
    int rc = 0;
    /* the replies of batches sent and not read yet are still coming on
     * these connections: read by the careful sends, they would pass for
     * theirs (and theirs would never be sent) */
    for (size_t n = 0; n < p->cfg->nnodes; n++)
        lapse_redis_disconnect(p->nodes[n]);
    while (p->nflight > 0) {
        size_t k = p->flight_first;
        producer_send_abandon(p->sending[k]);
        p->sending[k] = NULL;
        producer_swap(p, &p->flight[k]);
        int one = producer_send(p, errstr, size);
        producer_settled(p, one);
        p->settled = p->upto[k]; /* applied, or its failures reported */
        p->nops = 0;
        p->arena_len = 0;
        producer_swap(p, &p->flight[k]);
        p->flight_first = (k + 1) % FLIGHTS;
        p->nflight--;
        if (rc == 0)
            rc = one;
    }
    p->nread = 0;
    return rc;
}

/* Reads the replies of the oldest batch not read yet. With
 * redis.wait_replicas it then waits for confirm.c, else it leaves the ring.
 * Returns as lapse_producer_flush. */
int producer_read_one(lapse_producer *p, char *errstr, size_t size)
{
    size_t k = (p->flight_first + p->nread) % FLIGHTS;
    struct send *s = p->sending[k];
    p->sending[k] = NULL;
    producer_swap(p, &p->flight[k]);
    int rc = producer_send_finish(p, s, &p->witness[k * p->cfg->nnodes]);
    producer_swap(p, &p->flight[k]);
    if (rc < 0)
        return producer_resend(p, errstr, size);
    p->read_no[k] = ++p->reads;
    p->nread++;
    if (p->cfg->redis_wait_replicas <= 0 || p->several_servers)
        /* (no WAIT, or several servers: its WAITs were in its pipeline) */
        producer_release(p);
    else
        confirm_kick(p, k);
    return 0;
}

/* Confirms the oldest batch in flight (reading it first if need be), and
 * then every later one already confirmed. Returns as lapse_producer_flush. */
int producer_confirm_one(lapse_producer *p, char *errstr, size_t size)
{
    if (p->nread == 0)
        return producer_read_one(p, errstr, size);
    while (!confirm_done(p, p->flight_first))
        if (confirm_step(p, p->flight_first) < 0)
            return producer_resend(p, errstr, size);
    do
        producer_release(p);
    while (p->nread > 0 && confirm_done(p, p->flight_first));
    return 0;
}

/* Waits for every batch in flight. Returns as lapse_producer_flush. */
int producer_collect(lapse_producer *p, char *errstr, size_t size)
{
    int rc = 0;
    while (p->nflight > 0) {
        int one = producer_confirm_one(p, errstr, size);
        if (rc == 0)
            rc = one;
    }
    return rc;
}
