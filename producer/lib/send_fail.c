/*
 * send_fail — what a send (send.c) reports failed, and when: the ops of a
 * call Redis refused or that could not be applied in time (with the
 * extends bounded slack absorbed because of them), and, judged per node
 * and primary against its window (degrade.c), the ops of a node that does
 * not answer or of a primary that cannot confirm.
 *
 * What it keeps true: an op is reported at most once and then done (never
 * sent again); an op is done without a report only when its node applied
 * it (and with redis.wait_replicas, confirmed it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "producer_priv.h"
#include "slot.h"

/* The extends absorbed by this batch's writes of the IDs whose hashes are
 * set in `hashes` (open addressing, mask + 1 slots, 0 = empty) are
 * reported failed too: one pass over the absorbed list, not one per op. */
static void send_report_absorbed(lapse_producer *p, const uint64_t *hashes, size_t mask,
                                 const char *reason)
{
    for (size_t k = 0; k < p->nabsorbed; k++) {
        struct producer_absorbed *a = &p->absorbed[k];
        if (a->seq != p->seq || a->reported)
            continue;
        uint64_t h = a->hash ? a->hash : 1;
        size_t i = (size_t)h & mask;
        while (hashes[i] && hashes[i] != h)
            i = (i + 1) & mask;
        if (!hashes[i])
            continue;
        a->reported = 1;
        p->stats.failed++;
        if (p->on_error)
            p->on_error(p->ctx, a->tag, reason);
    }
}

/* Reports the call's ops as not applied, and with each the extends that
 * bounded slack absorbed because of it (producer.c: producer_absorbed; by
 * ID hash). Their IDs are also forgotten by bounded slack: a later extend
 * must be written, not absorbed. */
void send_report(struct send *s, const struct send_call *c, const char *reason)
{
    lapse_producer *p = s->p;
    p->stats.failed += c->count;
    for (size_t i = 0; i < c->count; i++) {
        const struct producer_op *op = &p->ops[c->ops[i]];
        if (p->slack)
            lapse_slack_forget(p->slack, op->hash, p->arena + op->id_off, op->id_len);
        if (p->on_error)
            p->on_error(p->ctx, op->tag, reason);
    }
    if (p->nabsorbed == 0)
        return;
    size_t slots = 2;
    while (slots < 2 * c->count)
        slots *= 2;
    uint64_t *hashes = calloc(slots, sizeof *hashes);
    if (!hashes) { /* out of memory: the slow way, one pass per op */
        for (size_t i = 0; i < c->count; i++) {
            uint64_t one[2] = {0, 0}, h = p->ops[c->ops[i]].hash;
            one[(size_t)(h ? h : 1) & 1] = h ? h : 1;
            send_report_absorbed(p, one, 1, reason);
        }
        return;
    }
    for (size_t i = 0; i < c->count; i++) {
        uint64_t h = p->ops[c->ops[i]].hash;
        h = h ? h : 1; /* 0 marks an empty slot */
        size_t k = (size_t)h & (slots - 1);
        while (hashes[k] && hashes[k] != h)
            k = (k + 1) & (slots - 1);
        hashes[k] = h;
    }
    send_report_absorbed(p, hashes, slots - 1, reason);
    free(hashes);
}

/* Reports `count` ops (indices in ops) failed with reason, and marks them
 * done; their count is added to *failed. */
void send_fail_ops(struct send *s, size_t *ops, size_t count, const char *reason, size_t *failed)
{
    struct send_call call = {LAPSE_SCRIPT_APPLY, 0, 0, ops, count};
    send_report(s, &call, reason);
    for (size_t i = 0; i < count; i++)
        s->p->ops[ops[i]].done = 1;
    *failed += count;
}

/* Reports the ops of shard k's group (send_group) failed with reason,
 * and marks them done; their count is added to *failed. */
static void send_fail_shard(struct send *s, uint32_t k, const char *reason, size_t *failed)
{
    send_fail_ops(s, s->order + s->start[k], s->start[k + 1] - s->start[k], reason, failed);
}

/* 1 when shard k's primary has fewer replicas connected than
 * redis.wait_replicas (INFO replication: one round trip, no write), so that
 * a WAIT there cannot see enough; 0 when it has enough, or when that cannot
 * be read (an ACL that denies INFO; a connection failure, which the
 * writes then find). */
static int send_replicas_short(lapse_producer *p, uint32_t k)
{
    const char *key = p->keys->keys[k][0];
    struct lapse_redis_memory m;
    if (lapse_redis_memory(p->nodes[p->layout.node_of[k]], lapse_slot(key, strlen(key)), &m) < 0)
        return 0;
    return m.replicas >= 0 && m.replicas < p->cfg->redis_wait_replicas;
}

/* Before a send: the ops whose primary has failed to answer or to confirm
 * for its whole window (degrade.c) are reported failed at once, and done
 * (a probe of one that answers but cannot confirm goes out only if it has
 * enough replicas connected: a WAIT would otherwise hold the batch, the
 * other primaries' writes too, for redis.wait_timeout_ms, to no use);
 * during a split also those whose twin is to be taken on such a node.
 * Returns how many ops are left to send. */
size_t send_gate(struct send *s, size_t *failed, char *errstr, size_t size)
{
    lapse_producer *p = s->p;
    size_t left = send_group(s, 0, 0);
    if (left == (size_t)-1 || p->ndegraded == 0)
        return left == (size_t)-1 ? p->nops : left;
    int64_t now = lapse_clock_mono_ms();
    char why[512];
    for (uint32_t k = 0; k < lapse_layout_span(&p->layout); k++) {
        if (s->start[k + 1] == s->start[k])
            continue;
        size_t n = p->layout.node_of[k];
        if (degrade_probing(p, n, degrade_addr(p, k), now) && send_replicas_short(p, k))
            degrade_probe_short(p, n, degrade_addr(p, k), now);
        const char *reason = degrade_gate(p, n, degrade_addr(p, k), now, why, sizeof why);
        if (reason) {
            snprintf(errstr, size, "%s", reason);
            left -= s->start[k + 1] - s->start[k];
            send_fail_shard(s, k, reason, failed);
        }
    }
    for (size_t n = 0; lapse_layout_changing(&p->layout) && n < p->cfg->nnodes; n++) {
        size_t count = 0;
        for (size_t i = 0; i < p->nops; i++) {
            struct producer_op *op = &p->ops[i];
            if (op->done || !send_taking(op) || p->layout.node_of[op->old_shard] != n)
                continue;
            const char *reason =
                degrade_gate(p, n, degrade_addr(p, op->old_shard), now, why, sizeof why);
            if (reason) {
                snprintf(errstr, size, "%s", reason);
                s->picked[count++] = i;
            }
        }
        if (count)
            send_fail_ops(s, s->picked, count, errstr, failed);
        left -= count;
    }
    return left;
}

/* After the applies (send.c: the judge phase): the ops whose primary applied (and with
 * redis.wait_replicas, confirmed) them are done; those of a node that
 * failed or of a primary whose WAIT saw too few replicas are sent again
 * while its window is open (degrade.c), else reported failed. Returns how
 * many ops are left to send. */
size_t send_judge(struct send *s, size_t *failed, char *errstr, size_t size)
{
    lapse_producer *p = s->p;
    if (send_group(s, 0, 0) == (size_t)-1)
        return p->nops; /* out of memory: the whole batch again */
    int64_t now = lapse_clock_mono_ms();
    size_t left = 0;
    char why[512];
    for (uint32_t k = 0; k < lapse_layout_span(&p->layout); k++) {
        size_t count = s->start[k + 1] - s->start[k];
        if (count == 0)
            continue;
        size_t n = p->layout.node_of[k];
        const char *addr = degrade_addr(p, k);
        if (!s->short_shard[k]) {
            degrade_ok(p, n, addr);
            for (size_t i = s->start[k]; i < s->start[k + 1]; i++)
                p->ops[s->order[i]].done = 1;
        } else if (s->down[n] ? degrade_down(p, n, addr, s->down_why[n], now)
                              : degrade_short(p, n, addr, lapse_redis_errstr(p->nodes[n]), now)) {
            const char *reason = degrade_gate(p, n, addr, now, why, sizeof why);
            snprintf(errstr, size, "%s",
                     reason       ? reason
                     : s->down[n] ? s->down_why[n]
                                  : lapse_redis_errstr(p->nodes[n]));
            send_fail_shard(s, k, errstr, failed);
        } else {
            left += count;
        }
    }
    return left;
}

/* After a take (send.c: a split round's take phase) that a node did not
 * answer: opens or runs its window (degrade.c) for its old shards; once
 * that closed, the ops moving out of them are reported failed, since their
 * twins cannot be taken, and the other ops go on without them. */
void send_take_down(struct send *s, size_t *failed, char *errstr, size_t size)
{
    lapse_producer *p = s->p;
    int64_t now = lapse_clock_mono_ms();
    char why[512];
    for (uint32_t k = 0; k < lapse_layout_span(&p->layout); k++) {
        size_t node = p->layout.node_of[k];
        if (!s->short_shard[k] || !s->down[node] ||
            !degrade_down(p, node, degrade_addr(p, k), s->down_why[node], now))
            continue;
        const char *reason = degrade_gate(p, node, degrade_addr(p, k), now, why, sizeof why);
        snprintf(errstr, size, "%s", reason ? reason : s->down_why[node]);
        size_t count = 0;
        for (size_t i = s->start[k]; i < s->start[k + 1]; i++) /* (grouped by old shard) */
            s->picked[count++] = s->order[i];
        send_fail_ops(s, s->picked, count, errstr, failed);
    }
}
