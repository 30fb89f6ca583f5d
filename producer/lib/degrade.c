/*
 * degrade — primaries that cannot confirm writes: one that does not answer
 * (a node down, refusing connections, or a Sentinel primary that died and
 * is not replaced yet), or with redis.wait_replicas one whose replicas are
 * gone (its only replica was promoted when it died, or they lost their
 * link): it still applies writes, but no WAIT there sees enough replicas.
 * Either way none of those writes may be reported applied.
 *
 * What it keeps true: a batch's writes are judged per primary, so writes
 * on primaries that applied (and confirmed) them are done and only the
 * others are sent again (send_fail.c: send_judge). The retry window is the
 * primary's, not the batch's: it opens at the first write there that failed
 * or whose WAIT saw too few replicas, and is shared by every batch after
 * it, so once a primary failed to answer or to confirm for
 * redis.retry_timeout_ms, writes for it are reported failed at once instead
 * of each batch waiting that long again. Now and then (a back-off,
 * PROBE_MIN_MS doubling to PROBE_MAX_MS) one batch's writes for it are sent
 * anyway, as a probe: an answer (with a WAIT that sees enough replicas, if
 * asked) ends the fail-fast, with no restart: the node is back, or a
 * replica is. A probe of a primary that answers but cannot confirm first
 * asks it (INFO, send_fail.c) how many replicas it has: with fewer than
 * redis.wait_replicas connected, a WAIT there cannot see enough and would
 * only hold the batch, the other primaries' writes too, for
 * redis.wait_timeout_ms, so that probe fails at once, with no write sent
 * (degrade_probe_short). A primary is named by the node it belongs to and
 * its "host:port" (a cluster's slot owner, a Sentinel node's current
 * primary), so one that replaced it after a failover starts afresh; once a
 * plain or Sentinel node answers, its entries of primaries that did not are
 * dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "producer_priv.h"
#include "slot.h"

#define PROBE_MIN_MS 250  /* the wait before a failing primary is tried again: */
#define PROBE_MAX_MS 5000 /* doubling, jittered (backoff.h) */
#define FORGET_MS 30000   /* an entry no write went near for this long is dropped */

struct degrade_primary {
    size_t node;      /* index of cfg->nodes */
    char addr[300];   /* the primary's "host:port" */
    int64_t since;    /* monotonic: the first WAIT in a row that fell short */
    int64_t last;     /* monotonic: the last one */
    int64_t probe_at; /* once the window closed: when to try it again */
    int down;         /* the last failure: it did not answer (else: WAIT fell short) */
    struct lapse_backoff backoff;
    char why[256]; /* what that WAIT said */
};

const char *degrade_addr(lapse_producer *p, uint32_t shard)
{
    lapse_redis *r = p->nodes[p->layout.node_of[shard]];
    const char *key = p->keys->keys[shard][0];
    const char *addr = lapse_redis_slot_owner(r, lapse_slot(key, strlen(key)));
    return addr ? addr : "";
}

/* The entry of node n's primary at addr, or NULL. */
static struct degrade_primary *degrade_find(lapse_producer *p, size_t n, const char *addr)
{
    for (size_t i = 0; i < p->ndegraded; i++)
        if (p->degraded[i].node == n && strcmp(p->degraded[i].addr, addr) == 0)
            return &p->degraded[i];
    return NULL;
}

static void degrade_drop(lapse_producer *p, struct degrade_primary *d)
{
    *d = p->degraded[--p->ndegraded];
}

int degrade_any(lapse_producer *p)
{
    int64_t now = lapse_clock_mono_ms();
    for (size_t i = 0; i < p->ndegraded;)
        if (now - p->degraded[i].last >= FORGET_MS) /* a primary gone from the map */
            degrade_drop(p, &p->degraded[i]);
        else
            i++;
    return p->ndegraded > 0;
}

const char *degrade_gate(lapse_producer *p, size_t n, const char *addr, int64_t now, char *why,
                         size_t size)
{
    struct degrade_primary *d = degrade_find(p, n, addr);
    if (!d || now - d->since < p->cfg->redis_retry_timeout_ms || now >= d->probe_at)
        return NULL;
    if (d->down)
        snprintf(why, size, "primary %s has not answered for %lld ms: %s", addr,
                 (long long)(now - d->since), d->why);
    else
        snprintf(why, size,
                 "primary %s has had fewer than %d replicas for %lld ms "
                 "(redis.wait_replicas): %s",
                 addr, p->cfg->redis_wait_replicas, (long long)(now - d->since), d->why);
    return why;
}

int degrade_probing(lapse_producer *p, size_t n, const char *addr, int64_t now)
{
    struct degrade_primary *d = degrade_find(p, n, addr);
    return d && !d->down && now - d->since >= p->cfg->redis_retry_timeout_ms && now >= d->probe_at;
}

void degrade_probe_short(lapse_producer *p, size_t n, const char *addr, int64_t now)
{
    struct degrade_primary *d = degrade_find(p, n, addr);
    if (!d)
        return;
    d->last = now;
    d->probe_at = now + lapse_backoff_next(&d->backoff);
}

/* A failure of node n's primary at addr (down: it did not answer): opens
 * its window, or says whether it has closed. */
static int degrade_fail(lapse_producer *p, size_t n, const char *addr, const char *reason,
                        int64_t now, int down)
{
    struct degrade_primary *d = degrade_find(p, n, addr);
    if (!d) {
        if (p->ndegraded == p->cap_degraded) {
            size_t cap = p->cap_degraded ? 2 * p->cap_degraded : 4;
            struct degrade_primary *a = realloc(p->degraded, cap * sizeof *a);
            if (!a)
                return 0; /* out of memory: that batch waits its own window */
            p->degraded = a;
            p->cap_degraded = cap;
        }
        d = &p->degraded[p->ndegraded++];
        memset(d, 0, sizeof *d);
        d->node = n;
        snprintf(d->addr, sizeof d->addr, "%s", addr);
        d->since = now;
        lapse_backoff_init(&d->backoff, PROBE_MIN_MS, PROBE_MAX_MS);
    }
    d->last = now;
    d->down = down;
    snprintf(d->why, sizeof d->why, "%s", reason);
    if (now - d->since < p->cfg->redis_retry_timeout_ms)
        return 0;
    if (d->probe_at <= now) /* one step of the back-off per probe, not per shard */
        d->probe_at = now + lapse_backoff_next(&d->backoff);
    return 1;
}

int degrade_short(lapse_producer *p, size_t n, const char *addr, const char *reason, int64_t now)
{
    return degrade_fail(p, n, addr, reason, now, 0);
}

int degrade_down(lapse_producer *p, size_t n, const char *addr, const char *reason, int64_t now)
{
    return degrade_fail(p, n, addr, reason, now, 1);
}

void degrade_ok(lapse_producer *p, size_t n, const char *addr)
{
    /* a plain or Sentinel node that answered is not down, whatever its
     * primary's address was (after a failover, the old one's entry goes
     * too); a cluster's other primaries may still be (its pipeline failed
     * as a whole, so they are judged by their own probes) */
    for (size_t i = 0; i < p->ndegraded;)
        if (p->degraded[i].node == n && ((p->degraded[i].down && !p->several_servers) ||
                                         strcmp(p->degraded[i].addr, addr) == 0))
            degrade_drop(p, &p->degraded[i]);
        else
            i++;
}

/* Only primaries that answer and lack replicas: one that does not answer
 * is lapse_producer_probe's to count. */
int lapse_producer_unconfirmed(const lapse_producer *p, size_t i, char *addr, size_t size)
{
    for (size_t k = 0; k < p->ndegraded; k++)
        if (!p->degraded[k].down && i-- == 0) {
            snprintf(addr, size, "%s", p->degraded[k].addr);
            return 1;
        }
    return 0;
}

void degrade_free(lapse_producer *p)
{
    free(p->degraded);
    p->degraded = NULL;
    p->ndegraded = p->cap_degraded = 0;
}
