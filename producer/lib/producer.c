/*
 * producer — see producer.h.
 *
 * Queued operations live in one array plus one byte arena (IDs, payloads) and
 * are only turned into Redis calls at flush time, by a send (send.c). A full batch
 * goes out without waiting for its replies, into the ring of batches in
 * flight (flight.c).
 *
 * Coalescing: a small open-addressing index (ID hash -> latest queued op of
 * that ID) lets submit fold a new operation into the queued one when the
 * pair has a single-operation equivalent (producer_fold). Folding happens
 * in place, so the op keeps its position; per-ID order is all that matters,
 * since different IDs never interact.
 */
#include "producer.h"
#include "producer_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "hash.h"
#include "layout.h"
#include "redis.h"
#include "slack.h"
#include "stop.h"

lapse_producer *lapse_producer_new(const struct lapse_config *cfg,
                                   lapse_producer_error_cb *on_error, void *ctx, char *errstr,
                                   size_t size)
{
    return lapse_producer_new_waiting(cfg, on_error, NULL, ctx, errstr, size);
}

lapse_producer *lapse_producer_new_waiting(const struct lapse_config *cfg,
                                           lapse_producer_error_cb *on_error,
                                           lapse_producer_wait_cb *on_wait, void *ctx, char *errstr,
                                           size_t size)
{
    int why = EIO; /* errno on failure */
    lapse_producer *p = calloc(1, sizeof *p);
    if (!p)
        goto oom;
    p->cfg = cfg;
    p->seq = p->last_seq = 1;
    p->on_error = on_error;
    p->ctx = ctx;
    size_t slots = 2;
    while (slots < 2 * (size_t)cfg->producer_batch)
        slots *= 2;
    p->index_mask = slots - 1;
    p->index = calloc(slots, sizeof *p->index);
    p->nodes = calloc(cfg->nnodes, sizeof *p->nodes);
    p->witness = calloc(FLIGHTS * cfg->nnodes, sizeof *p->witness);
    if (!p->index || !p->nodes || !p->witness)
        goto oom;
    if (cfg->producer_slack_ms > 0 && !(p->slack = lapse_slack_new()))
        goto oom;
    for (size_t i = 0; i < cfg->nnodes; i++)
        if (!(p->nodes[i] = lapse_node_open(cfg, i)))
            goto oom;
    p->several_servers = !lapse_redis_one_server(p->nodes[0]); /* (a cluster is the one node) */
    /* an unreachable node is waited for as flush waits (a start during a
     * failover follows it); a refusal stops at once */
    if (lapse_redis_ensure_within(p->nodes[0], cfg->redis_retry_timeout_ms, &lapse_stop, on_wait,
                                  ctx) < 0) {
        snprintf(errstr, size, "%s", lapse_redis_errstr(p->nodes[0]));
        why = lapse_redis_refused(p->nodes[0]) ? EACCES : lapse_stop ? EINTR : ETIMEDOUT;
        goto fail;
    }
    /* The other nodes once each: one that refuses us (password, ACL, TLS,
     * an evicting maxmemory-policy) is a config error to stop on now, not
     * at its first write; one that does not answer yet is waited for by
     * its writes, as when it goes away later. */
    for (size_t i = 1; i < cfg->nnodes; i++)
        if (lapse_redis_ensure(p->nodes[i]) < 0 && lapse_redis_refused(p->nodes[i])) {
            snprintf(errstr, size, "%s", lapse_redis_errstr(p->nodes[i]));
            why = EACCES;
            goto fail;
        }
    if (producer_load_layout(p, errstr, size) < 0)
        goto fail;
    return p;
oom:
    snprintf(errstr, size, "out of memory");
    why = ENOMEM;
fail:
    lapse_producer_free(p);
    errno = why; /* (after free, which may set it) */
    return NULL;
}

const char *lapse_producer_notice(lapse_producer *p, int *error)
{
    const char *m = NULL;
    for (size_t i = 0; !m && i < p->cfg->nnodes; i++)
        m = lapse_redis_policy_news(p->nodes[i], error);
    return m;
}

lapse_producer *lapse_producer_open(const char *path, lapse_producer_error_cb *on_error, void *ctx,
                                    char *errstr, size_t size)
{
    struct lapse_config *own = lapse_config_open(path, errstr, size);
    if (!own)
        return NULL;
    lapse_producer *p = lapse_producer_new(own, on_error, ctx, errstr, size);
    if (!p) {
        int why = errno; /* lapse_producer_new's */
        lapse_config_close(own);
        errno = why;
        return NULL;
    }
    p->owned_cfg = own;
    return p;
}

void lapse_producer_free(lapse_producer *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->nodes && i < p->cfg->nnodes; i++)
        lapse_redis_free(p->nodes[i]);
    free(p->nodes);
    free(p->witness);
    confirm_free(p);
    degrade_free(p);
    lapse_layout_free(&p->layout);
    lapse_slack_free(p->slack);
    free(p->absorbed);
    for (size_t k = 0; k < FLIGHTS; k++) {
        producer_send_abandon(p->sending[k]);
        free(p->flight[k].ops);
        free(p->flight[k].arena);
    }
    lapse_config_close(p->owned_cfg);
    free(p->keys);
    free(p->ops);
    free(p->index);
    free(p->arena);
    free(p);
}

size_t lapse_producer_pending(const lapse_producer *p)
{
    size_t n = p->nops;
    for (size_t i = 0; i < p->nflight; i++)
        n += p->flight[(p->flight_first + i) % FLIGHTS].nops;
    return n;
}

void lapse_producer_stats(const lapse_producer *p, struct lapse_producer_stats *out)
{
    *out = p->stats;
}

int producer_arena_put(lapse_producer *p, const char *b, size_t len, size_t *off)
{
    if (p->arena_len + len > p->arena_cap) {
        size_t cap = p->arena_cap ? p->arena_cap : 65536;
        while (cap < p->arena_len + len)
            cap *= 2;
        char *a = realloc(p->arena, cap);
        if (!a)
            return -1;
        p->arena = a;
        p->arena_cap = cap;
    }
    memcpy(p->arena + p->arena_len, b, len);
    *off = p->arena_len;
    p->arena_len += len;
    return 0;
}

/* The index slot of the ID: its latest queued op, or the empty slot where
 * one goes. */
static uint32_t *producer_slot(lapse_producer *p, uint64_t hash, const char *id, size_t len)
{
    for (size_t i = hash & p->index_mask;; i = (i + 1) & p->index_mask) {
        uint32_t *slot = &p->index[i];
        if (*slot == 0)
            return slot;
        const struct producer_op *op = &p->ops[*slot - 1];
        if (op->hash == hash && op->id_len == len && memcmp(p->arena + op->id_off, id, len) == 0)
            return slot;
    }
}

enum fold {
    FOLD_NONE,    /* no single equivalent: queue both */
    FOLD_DROP,    /* the new op changes nothing after the queued one */
    FOLD_REPLACE, /* the new op alone has the effect of both */
    FOLD_TOUCH,   /* the queued touch/repeat becomes a touch to the new time,
                     keeping its payload unless the new op brings one */
};

/*
 * How the queued op `x` and the new command `y` (same ID, y after x)
 * combine. Each op has four effects: on the deadline, on the payload (set,
 * keep, delete), on the repeat record and on recovery (a watch turns it on,
 * a cancel or a repeat off, a touch or an extend keeps it); y replaces x
 * only if it overrides all four. An extend's effect depends on the pending
 * deadline, known exactly after a touch/repeat and bounded below after an
 * extend, and only comparable when both times are of one kind (+rel within
 * a batch share the moment the batch applies).
 */
static enum fold producer_fold_effect(const struct producer_op *x, const struct lapse_cmd *y,
                                      int64_t y_when)
{
    int y_payload = y->payload != NULL;
    /* recovery on starts a watch record and may bring an ID back: a watch
     * and another op are both sent (a cancel or repeat forgets either way) */
    if ((y->op == LAPSE_OP_WATCH) != x->recover && y->op != LAPSE_OP_CANCEL &&
        y->op != LAPSE_OP_REPEAT)
        return FOLD_NONE;
    switch (y->op) {
    case LAPSE_OP_CANCEL:
        return FOLD_REPLACE;
    case LAPSE_OP_TOUCH:
    case LAPSE_OP_REPEAT:
        /* a payload-less y keeps the stored payload: only fine if x left it */
        return y_payload || (!x->has_payload && x->op != LAPSE_APPLY_CANCEL) ? FOLD_REPLACE
                                                                             : FOLD_NONE;
    case LAPSE_OP_EXTEND:
    case LAPSE_OP_WATCH:
        if (x->op == LAPSE_APPLY_CANCEL) /* nothing pending: the extend sets, like a touch */
            return y_payload ? FOLD_TOUCH : FOLD_NONE;
        if (x->kind != y->when_kind)
            return FOLD_NONE;
        if (y_when <= x->when_ms) /* pending is at least x's time already */
            return FOLD_DROP;
        if (x->op == LAPSE_APPLY_EXTEND)
            return y_payload || !x->has_payload ? FOLD_REPLACE : FOLD_NONE;
        return FOLD_TOUCH; /* pending is exactly x's time; y moves it */
    }
    return FOLD_NONE;
}

static enum fold producer_fold(const struct producer_op *x, const struct lapse_cmd *y,
                               int64_t y_when)
{
    enum fold f = producer_fold_effect(x, y, y_when);
    /* x turned recovery off and y keeps it as it is: y alone (or x made a
     * touch) would leave on a watch queued before x */
    if ((f == FOLD_REPLACE || f == FOLD_TOUCH) &&
        (x->op == LAPSE_APPLY_CANCEL || x->op == LAPSE_APPLY_REPEAT) &&
        (y->op == LAPSE_OP_TOUCH || y->op == LAPSE_OP_EXTEND))
        return FOLD_NONE;
    return f;
}

/* Writes y's fields into op (whose ID bytes are already in the arena). */
static int producer_fill(lapse_producer *p, struct producer_op *op, const struct lapse_cmd *y,
                         int64_t when, uint64_t tag)
{
    static const char codes[] = {[LAPSE_OP_TOUCH] = LAPSE_APPLY_TOUCH,
                                 [LAPSE_OP_EXTEND] = LAPSE_APPLY_EXTEND,
                                 [LAPSE_OP_REPEAT] = LAPSE_APPLY_REPEAT,
                                 [LAPSE_OP_CANCEL] = LAPSE_APPLY_CANCEL,
                                 [LAPSE_OP_WATCH] = LAPSE_APPLY_EXTEND};
    op->op = codes[y->op];
    op->recover = y->op == LAPSE_OP_WATCH;
    op->kind = y->when_kind;
    op->when_ms = when;
    op->period_ms = y->op == LAPSE_OP_REPEAT ? y->period_ms : 0;
    op->tag = tag;
    op->has_payload = y->payload != NULL;
    op->pl_len = 0;
    if (y->payload) {
        if (producer_arena_put(p, y->payload, y->payload_len, &op->pl_off) < 0)
            return -1;
        op->pl_len = y->payload_len;
    }
    return 0;
}

/* An extend absorbed by a write of batch `seq`: while that batch is not
 * settled (queued or in flight), remember the extend's tag, so that it is
 * reported if that write fails (send_fail.c: send_report). 0 or -1 (no memory). */
static int producer_absorbed(lapse_producer *p, uint64_t hash, uint64_t tag, uint32_t seq)
{
    uint32_t oldest = p->nflight ? p->flight[p->flight_first].seq : p->seq;
    if ((uint32_t)(seq - oldest) > (uint32_t)(p->seq - oldest))
        return 0; /* settled: applied (a failed batch forgets all slack) */
    if (p->nabsorbed == p->cap_absorbed) {
        size_t cap = p->cap_absorbed ? 2 * p->cap_absorbed : 64;
        struct producer_absorbed *a = realloc(p->absorbed, cap * sizeof *a);
        if (!a)
            return -1;
        p->absorbed = a;
        p->cap_absorbed = cap;
    }
    p->absorbed[p->nabsorbed++] = (struct producer_absorbed){hash, tag, seq, 0};
    return 0;
}

/* Bounded slack: decides whether an extend needs a write, and what time it
 * writes. Returns 1 when the extend is absorbed, -1 when out of memory. */
static int producer_slack(lapse_producer *p, const struct lapse_cmd *cmd, uint64_t hash,
                          uint64_t tag, int64_t *when)
{
    if (cmd->op != LAPSE_OP_EXTEND && cmd->op != LAPSE_OP_WATCH) {
        /* touch/repeat/cancel make the memory wrong; touch could be kept,
         * but a later extend would then skip a write the repeat grid or a
         * failed write needs: forget, the next extend writes. */
        lapse_slack_forget(p->slack, hash, cmd->id, cmd->id_len);
        return 0;
    }
    /* the clock only when needed: this runs for every signal of a stream */
    int64_t now = cmd->when_kind == LAPSE_WHEN_REL ? lapse_clock_ms() : 0;
    int64_t at = cmd->when_kind == LAPSE_WHEN_REL ? now + cmd->when_ms : cmd->when_ms;
    uint32_t seq;
    if (lapse_slack_covered(p->slack, hash, cmd->id, cmd->id_len, at, &seq))
        return producer_absorbed(p, hash, tag, seq) < 0 ? -1 : 1;
    if (cmd->when_kind != LAPSE_WHEN_REL)
        now = lapse_clock_ms();
    int64_t slack = p->cfg->producer_slack_ms;
    if (*when > LAPSE_WHEN_MAX - slack)
        slack = LAPSE_WHEN_MAX - *when;
    *when += slack;
    /* Out of memory only costs the absorbing of this ID's next extends. */
    (void)lapse_slack_set(p->slack, hash, cmd->id, cmd->id_len, at + slack, now, p->seq);
    return 0;
}

/* The queued ops count as written and leave the coalescing index: new
 * submissions no longer fold into them. */
static void producer_unindex(lapse_producer *p)
{
    p->stats.written += p->nops;
    p->stats.flushes++;
    for (size_t i = 0; i < p->nops; i++) /* clear only the slots in use */
        p->index[p->ops[i].slot] = 0;
}

/* Sends the queue and waits for it (the careful way), then empties it.
 * Returns as lapse_producer_flush. */
static int producer_send_queue(lapse_producer *p, char *errstr, size_t size)
{
    uint64_t upto = p->stats.submitted; /* (callers collected every batch in flight first) */
    int rc = producer_send(p, errstr, size);
    p->settled = upto;
    producer_settled(p, rc);
    producer_unindex(p);
    p->nops = 0;
    p->arena_len = 0;
    p->seq = ++p->last_seq;
    return rc;
}

/* An extend without payload: it only ever moves a deadline later. */
static int producer_bare_extend(const struct producer_op *op)
{
    return op->op == LAPSE_APPLY_EXTEND && !op->has_payload;
}

/*
 * 1 if an ID of the queue also has an op in a batch in flight, unless all of
 * those ops are bare extends. After a failure the batches in flight are
 * sent again, in order, on top of whatever Redis had applied: an op of an
 * older batch may then land again after a newer op of the same ID, for a
 * moment until that one lands again too. For bare extends that is harmless
 * (the deadline only moves later); an older touch or cancel could bring back
 * an earlier deadline or a cancelled ID, which a scanner could fire in that
 * moment. Such a queue waits for the batches in flight instead.
 */
static int producer_overlaps(lapse_producer *p)
{
    for (size_t i = 0; i < p->nflight; i++) {
        const struct producer_batch *b = &p->flight[(p->flight_first + i) % FLIGHTS];
        for (size_t k = 0; k < b->nops; k++) {
            const struct producer_op *f = &b->ops[k];
            uint32_t slot = *producer_slot(p, f->hash, b->arena + f->id_off, f->id_len);
            if (!slot)
                continue;
            const struct producer_op *q = &p->ops[slot - 1];
            if (!producer_bare_extend(f) || !producer_bare_extend(q) || q->shared)
                return 1;
        }
    }
    return 0;
}

/*
 * A full batch while operations stream in: send it without waiting for the
 * replies, which are read (oldest first) once PIPELINE batches are unread,
 * so Redis applies earlier batches while later ones are queued and parsed.
 * With redis.wait_replicas a read batch stays in the ring until a WAIT
 * from a second connection confirmed it (confirm.c), which holds neither
 * this pipeline nor, until the ring is full, the producer. Replies come
 * back in the order the batches were sent, and when a batch was not
 * applied or confirmed, every batch in flight is re-sent the careful way,
 * in order (producer_resend), so per-ID order holds in the end;
 * producer_overlaps keeps the moment in between harmless.
 */
static int producer_flush_full(lapse_producer *p, char *errstr, size_t size)
{
    int rc = 0;
    while (p->nflight - p->nread >= PIPELINE || p->nflight == FLIGHTS) {
        int one = p->nflight - p->nread >= PIPELINE ? producer_read_one(p, errstr, size)
                                                    : producer_confirm_one(p, errstr, size);
        if (rc == 0)
            rc = one;
    }
    if (p->nflight > 0 && producer_overlaps(p)) {
        int all = producer_collect(p, errstr, size);
        if (rc == 0)
            rc = all;
    }
    struct send *s = producer_send_start(p);
    if (!s) { /* the careful way, after everything sent before it */
        int before = producer_collect(p, errstr, size);
        int now = producer_send_queue(p, errstr, size);
        return rc < 0 ? rc : before < 0 ? before : now;
    }
    producer_unindex(p);
    size_t k = (p->flight_first + p->nflight++) % FLIGHTS;
    p->sending[k] = s;
    p->upto[k] = p->stats.submitted;
    producer_swap(p, &p->flight[k]); /* the queue gets that slot's empty buffers */
    p->seq = ++p->last_seq;
    return rc;
}

void lapse_producer_prefetch(const lapse_producer *p, const char *id, size_t id_len)
{
    if (p->slack)
        lapse_slack_prefetch(p->slack, lapse_hash(id, id_len));
}

void lapse_producer_prefetch_hashed(const lapse_producer *p, uint64_t hash)
{
    if (p->slack)
        lapse_slack_prefetch(p->slack, hash);
}

int lapse_producer_submit(lapse_producer *p, const struct lapse_cmd *cmd, uint64_t tag,
                          char *errstr, size_t size)
{
    return lapse_producer_submit_hashed(p, cmd, lapse_hash(cmd->id, cmd->id_len), tag, errstr,
                                        size);
}

int lapse_producer_submit_hashed(lapse_producer *p, const struct lapse_cmd *cmd, uint64_t hash,
                                 uint64_t tag, char *errstr, size_t size)
{
    if (lapse_cmd_check(cmd, errstr, size) < 0)
        return -1;
    int64_t when = cmd->when_ms;
    p->stats.submitted++;
    int absorbed = p->slack ? producer_slack(p, cmd, hash, tag, &when) : 0;
    if (absorbed < 0)
        goto oom;
    if (absorbed) {
        p->stats.absorbed++;
        return 0;
    }
    uint32_t *slot = producer_slot(p, hash, cmd->id, cmd->id_len);
    if (*slot) {
        struct producer_op *x = &p->ops[*slot - 1];
        enum fold f = producer_fold(x, cmd, when);
        if (f != FOLD_NONE)
            p->stats.coalesced++;
        /* A folded op's fate is the op that carries it: if that write
         * fails, the folded one is reported with it (producer_absorbed, as
         * bounded slack's absorbed extends are), never taken for applied. */
        if (f == FOLD_DROP) {
            if (producer_absorbed(p, hash, tag, p->seq) < 0)
                goto oom;
            return 0;
        }
        if (f == FOLD_REPLACE || f == FOLD_TOUCH) {
            if (producer_absorbed(p, hash, x->tag, p->seq) < 0)
                goto oom;
            int keep_payload = f == FOLD_TOUCH && !cmd->payload && x->has_payload;
            size_t pl_off = x->pl_off, pl_len = x->pl_len;
            if (producer_fill(p, x, cmd, when, tag) < 0)
                goto oom;
            if (f == FOLD_TOUCH) {
                x->op = LAPSE_APPLY_TOUCH;
                x->period_ms = 0;
            }
            if (keep_payload) {
                x->has_payload = 1;
                x->pl_off = pl_off;
                x->pl_len = pl_len;
            }
            return 0;
        }
    }
    if (p->nops == p->cap_ops) {
        size_t cap = p->cap_ops ? p->cap_ops * 2 : 1024;
        struct producer_op *ops = realloc(p->ops, cap * sizeof *ops);
        if (!ops)
            goto oom;
        p->ops = ops;
        p->cap_ops = cap;
    }
    struct producer_op *op = &p->ops[p->nops];
    memset(op, 0, sizeof *op);
    op->hash = hash;
    if (producer_arena_put(p, cmd->id, cmd->id_len, &op->id_off) < 0)
        goto oom;
    op->id_len = cmd->id_len;
    if (producer_fill(p, op, cmd, when, tag) < 0)
        goto oom;
    if (*slot) /* the ID's earlier op stays: both keep their order */
        op->shared = p->ops[*slot - 1].shared = 1;
    op->slot = (size_t)(slot - p->index);
    *slot = (uint32_t)++p->nops; /* the latest op of this ID from now on */
    if (p->nops >= (size_t)p->cfg->producer_batch && producer_flush_full(p, errstr, size) < 0)
        return -2;
    return 0;
oom:
    snprintf(errstr, size, "out of memory");
    return -1;
}

static int producer_cmd(lapse_producer *p, enum lapse_op opcode, const char *id, size_t id_len,
                        enum lapse_when_kind kind, int64_t when_ms, int64_t period_ms,
                        const char *payload, size_t payload_len, uint64_t tag, char *errstr,
                        size_t size)
{
    struct lapse_cmd cmd = {
        .op = opcode,
        .id = id,
        .id_len = id_len,
        .when_kind = kind,
        .when_ms = when_ms,
        .period_ms = period_ms,
        .payload = payload,
        .payload_len = payload_len,
    };
    return lapse_producer_submit(p, &cmd, tag, errstr, size);
}

int lapse_producer_touch(lapse_producer *p, const char *id, size_t id_len,
                         enum lapse_when_kind kind, int64_t when_ms, const char *payload,
                         size_t payload_len, uint64_t tag, char *errstr, size_t size)
{
    return producer_cmd(p, LAPSE_OP_TOUCH, id, id_len, kind, when_ms, 0, payload, payload_len, tag,
                        errstr, size);
}

int lapse_producer_extend(lapse_producer *p, const char *id, size_t id_len,
                          enum lapse_when_kind kind, int64_t when_ms, const char *payload,
                          size_t payload_len, uint64_t tag, char *errstr, size_t size)
{
    return producer_cmd(p, LAPSE_OP_EXTEND, id, id_len, kind, when_ms, 0, payload, payload_len, tag,
                        errstr, size);
}

int lapse_producer_repeat(lapse_producer *p, const char *id, size_t id_len,
                          enum lapse_when_kind kind, int64_t when_ms, int64_t period_ms,
                          const char *payload, size_t payload_len, uint64_t tag, char *errstr,
                          size_t size)
{
    return producer_cmd(p, LAPSE_OP_REPEAT, id, id_len, kind, when_ms, period_ms, payload,
                        payload_len, tag, errstr, size);
}

int lapse_producer_watch(lapse_producer *p, const char *id, size_t id_len,
                         enum lapse_when_kind kind, int64_t when_ms, const char *payload,
                         size_t payload_len, uint64_t tag, char *errstr, size_t size)
{
    return producer_cmd(p, LAPSE_OP_WATCH, id, id_len, kind, when_ms, 0, payload, payload_len, tag,
                        errstr, size);
}

int lapse_producer_cancel(lapse_producer *p, const char *id, size_t id_len, uint64_t tag,
                          char *errstr, size_t size)
{
    return producer_cmd(p, LAPSE_OP_CANCEL, id, id_len, LAPSE_WHEN_NONE, 0, 0, NULL, 0, tag, errstr,
                        size);
}

uint64_t lapse_producer_settled(const lapse_producer *p)
{
    return p->settled;
}

int lapse_producer_flush(lapse_producer *p, char *errstr, size_t size)
{
    int rc = producer_collect(p, errstr, size);
    if (p->nops == 0) {
        p->settled = p->stats.submitted; /* (extends slack absorbed since the last cut) */
        return rc;
    }
    int now = producer_send_queue(p, errstr, size);
    return rc < 0 ? rc : now;
}
