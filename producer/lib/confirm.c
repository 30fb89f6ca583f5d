/*
 * confirm — see producer_priv.h. Each node's waiter has at most one INCR + WAIT in
 * flight: WAITs on one connection run one after the other, so a second one
 * queued behind the first would only confirm later than a WAIT asked once
 * the first answered, which covers more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "producer_priv.h"

/* The waiters, created on first use; NULL if out of memory. */
static struct confirm_waiter *confirm_waiters(lapse_producer *p)
{
    if (p->waiters)
        return p->waiters;
    struct confirm_waiter *w = calloc(p->cfg->nnodes, sizeof *w);
    for (size_t n = 0; w && n < p->cfg->nnodes; n++)
        if (!(w[n].r = lapse_node_open(p->cfg, n))) {
            while (n-- > 0)
                lapse_redis_free(w[n].r);
            free(w);
            w = NULL;
        }
    return p->waiters = w;
}

/* The waiter fell short: what it had in flight is lost with its connection. */
static int confirm_fail(struct confirm_waiter *w)
{
    lapse_redis_disconnect(w->r);
    w->asked = 0;
    return -1;
}

/* Which connection the waiter is on now (never 0). */
static uint64_t confirm_conn(const struct confirm_waiter *w)
{
    return lapse_redis_reconnects(w->r) + 1;
}

uint64_t confirm_witness(lapse_producer *p, size_t n)
{
    struct confirm_waiter *w = confirm_waiters(p);
    if (!w || lapse_redis_ensure(p->nodes[n]) < 0 || lapse_redis_ensure(w[n].r) < 0)
        return 0;
    /* a Sentinel node's two connections may have found different primaries
     * in the middle of a failover */
    if (strcmp(lapse_redis_addr(p->nodes[n]), lapse_redis_addr(w[n].r)) != 0) {
        (void)confirm_fail(&w[n]);
        return 0;
    }
    return confirm_conn(&w[n]);
}

int confirm_done(const lapse_producer *p, size_t k)
{
    for (size_t n = 0; n < p->cfg->nnodes; n++) {
        uint64_t witness = p->witness[k * p->cfg->nnodes + n];
        if (witness &&
            (p->waiters[n].confirmed < p->read_no[k] || p->waiters[n].confirmed_witness != witness))
            return 0;
    }
    return 1;
}

/* Sends node n's waiter a WAIT (with its INCR: redis.h) covering every
 * batch read so far. */
static int confirm_ask(lapse_producer *p, size_t n)
{
    struct confirm_waiter *w = &p->waiters[n];
    if (lapse_redis_append_wait(w->r, p->cfg->redis_wait_replicas, p->cfg->redis_wait_timeout_ms) <
            0 ||
        lapse_redis_send(w->r) < 0)
        return confirm_fail(w);
    w->asked = p->reads;
    w->asked_witness = confirm_conn(w);
    return 0;
}

/* Reads the answer of node n's WAIT in flight. */
static int confirm_take(lapse_producer *p, size_t n)
{
    struct confirm_waiter *w = &p->waiters[n];
    if (lapse_redis_wait_reply(w->r, p->cfg->redis_wait_replicas, p->cfg->redis_wait_timeout_ms) <
            0 ||
        confirm_conn(w) != w->asked_witness)
        return confirm_fail(w);
    w->confirmed = w->asked;
    w->confirmed_witness = w->asked_witness;
    w->asked = 0;
    return 0;
}

int confirm_step(lapse_producer *p, size_t k)
{
    for (size_t n = 0; n < p->cfg->nnodes; n++) {
        uint64_t witness = p->witness[k * p->cfg->nnodes + n];
        struct confirm_waiter *w = &p->waiters[n];
        if (!witness || (w->confirmed >= p->read_no[k] && w->confirmed_witness == witness))
            continue;
        if (w->asked)
            return w->asked_witness == witness ? confirm_take(p, n) : confirm_fail(w);
        return confirm_conn(w) == witness ? confirm_ask(p, n) : confirm_fail(w);
    }
    return 0;
}

void confirm_kick(lapse_producer *p, size_t k)
{
    for (size_t n = 0; n < p->cfg->nnodes; n++)
        if (p->witness[k * p->cfg->nnodes + n] && !p->waiters[n].asked)
            (void)confirm_ask(p, n); /* a failure shows at confirm_step */
}

void confirm_free(lapse_producer *p)
{
    for (size_t n = 0; p->waiters && n < p->cfg->nnodes; n++)
        lapse_redis_free(p->waiters[n].r);
    free(p->waiters);
    p->waiters = NULL;
}
