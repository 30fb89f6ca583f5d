/*
 * send_plan — turns the queued batch into the calls of one send (send.c):
 * the layout and the shard key names derived from it, where each op applies
 * under that layout, the ops grouped by shard, the calls that carry them
 * (APPLY_CHUNK ops each) and each call's argv.
 *
 * It only reads the queue and writes the op fields of routing (shard,
 * old_shard, moving, local; twin cleared) and the send's scratch memory: no
 * I/O but reading the layout. Grouping is stable, so per ID the ops keep
 * the order they were queued in, whichever call carries them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "decimal.h"
#include "hash.h"
#include "producer_priv.h"

/* Key names (and, while splitting or merging, an empty moved-ID cache) for layout l;
 * NULL if out of memory. */
static struct producer_routes *send_routes_new(const lapse_producer *p,
                                               const struct lapse_layout *l)
{
    size_t head =
        offsetof(struct producer_routes, keys) + lapse_layout_span(l) * sizeof p->keys->keys[0];
    head = (head + _Alignof(struct moved_slot) - 1) / _Alignof(struct moved_slot) *
           _Alignof(struct moved_slot);
    size_t cache =
        lapse_layout_changing(l) ? MOVED_SLOTS * sizeof(struct moved_slot) + MOVED_BYTES : 0;
    struct producer_routes *rt = calloc(1, head + cache); /* untouched pages cost nothing */
    if (!rt)
        return NULL;
    for (uint32_t s = 0; s < lapse_layout_span(l); s++)
        for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
            lapse_key(rt->keys[s][k], LAPSE_KEY_MAX, p->cfg, lapse_shard_keys[k], s);
    if (cache) {
        rt->moved = (struct moved_slot *)((char *)rt + head);
        rt->moved_ids = (char *)(rt->moved + MOVED_SLOTS);
    }
    return rt;
}

int producer_load_layout(lapse_producer *p, char *errstr, size_t size)
{
    struct lapse_layout l;
    int rc = lapse_layout_load(p->nodes[0], p->cfg, &l, errstr, size);
    if (rc == 1)
        snprintf(errstr, size, "namespace \"%s\" is not initialised: run lapse-scale -c %s init N",
                 p->cfg->ns, p->cfg->path);
    if (rc != 0)
        return -1;
    if (!p->keys || lapse_layout_span(&l) != lapse_layout_span(&p->layout) ||
        l.state != p->layout.state) {
        struct producer_routes *rt = send_routes_new(p, &l);
        if (!rt) {
            lapse_layout_free(&l);
            snprintf(errstr, size, "out of memory");
            return -1;
        }
        free(p->keys);
        p->keys = rt;
    } else if (l.epoch != p->layout.epoch && p->keys->moved) {
        /* what the cache knows holds for one split epoch only */
        memset(p->keys->moved, 0, MOVED_SLOTS * sizeof *p->keys->moved);
        p->keys->moved_n = p->keys->moved_len = 0;
    }
    lapse_layout_free(&p->layout);
    p->layout = l;
    p->layout_read_ms = lapse_clock_mono_ms();
    return 0;
}

/* Whether op forgets its ID's watch record (lib/watch.lua): a cancel or
 * a repeat. */
int send_forgets(const struct producer_op *op)
{
    return op->op == LAPSE_APPLY_CANCEL || op->op == LAPSE_APPLY_REPEAT;
}

/* Where each op applies under the current layout; forgets twins. An ID
 * the cache knows is settled goes to its new shard as a plain op, unless
 * the op forgets: its old shard may still hold a busy watch record (its
 * timeout in flight when a write here brought it back), which must go with
 * it (drop.lua's "f", apply.lua's "M ?"). */
void send_route(lapse_producer *p)
{
    const struct lapse_layout *l = &p->layout;
    for (size_t i = 0; i < p->nops; i++) {
        struct producer_op *op = &p->ops[i];
        op->shard = lapse_layout_new_home(l, op->hash);
        op->moving = lapse_layout_moves(l, op->hash) && (send_forgets(op) || !send_moved(p, op));
        op->old_shard = op->moving ? lapse_layout_old_home(l, op->hash) : op->shard;
        /* where a node is several servers (a cluster), each shard has a
         * slot of its own: a script never takes two shards' keys */
        op->local =
            op->moving && !p->several_servers && l->node_of[op->old_shard] == l->node_of[op->shard];
        op->twin = 0;
        op->has_watch = 0;
    }
}

/* A moving op whose twin is handled by take, seed and drop: its old shard
 * is on another node (a local one is moved by apply.lua itself). */
int send_taking(const struct producer_op *op)
{
    return op->moving && !op->local;
}

/* Groups the ops not done (only send_taking ones if `moving`) by shard
 * (old shard if `old`) into s->order / s->start. Returns how many were
 * grouped. */
size_t send_group(struct send *s, int old, int moving)
{
    lapse_producer *p = s->p;
    uint32_t shards = lapse_layout_span(&p->layout);
    memset(s->start, 0, (shards + 1) * sizeof *s->start);
    size_t n = 0;
    for (size_t i = 0; i < p->nops; i++)
        if (!p->ops[i].done && (!moving || send_taking(&p->ops[i]))) {
            s->start[(old ? p->ops[i].old_shard : p->ops[i].shard) + 1]++;
            n++;
        }
    for (uint32_t k = 0; k < shards; k++)
        s->start[k + 1] += s->start[k];
    size_t *fill = calloc(shards, sizeof *fill);
    if (!fill)
        return (size_t)-1;
    for (size_t i = 0; i < p->nops; i++)
        if (!p->ops[i].done && (!moving || send_taking(&p->ops[i]))) {
            uint32_t k = old ? p->ops[i].old_shard : p->ops[i].shard;
            s->order[s->start[k] + fill[k]++] = i;
        }
    free(fill);
    return n;
}

/* Adds calls of `script` covering each shard's group, APPLY_CHUNK ops each;
 * `want` (may be NULL) filters which ops of the group go in. */
void send_plan(struct send *s, enum lapse_script script, int (*want)(const struct producer_op *))
{
    lapse_producer *p = s->p;
    for (uint32_t k = 0; k < lapse_layout_span(&p->layout); k++) {
        size_t *ops = want ? s->picked + s->npicked : s->order + s->start[k];
        size_t n = 0;
        for (size_t i = s->start[k]; i < s->start[k + 1]; i++)
            if (!want || want(&p->ops[s->order[i]]))
                ops[n++] = s->order[i];
        if (want)
            s->npicked += n;
        for (size_t done = 0; done < n; done += APPLY_CHUNK) {
            struct send_call c = {script, k, 0, ops + done,
                                  n - done < APPLY_CHUNK ? n - done : APPLY_CHUNK};
            for (size_t i = 0; script == LAPSE_SCRIPT_APPLY && i < c.count && !c.with_old; i++)
                c.with_old = p->ops[c.ops[i]].local;
            s->calls[s->ncalls++] = c;
        }
    }
}

/* One op's arguments of apply.lua: a head (op, flags, time), the ID, then
 * one argument per flag. Number strings go to `nums`. Returns the new argc. */
static int send_apply_args(const lapse_producer *p, const struct producer_op *op, char nums[3][32],
                           const char **v, size_t *l, int n)
{
    char *h = nums[0];
    size_t hl = 0;
    int busy = op->moving && op->twin == LAPSE_TAKE_BUSY; /* its twin is in flight */
    int inherit = busy && op->inherit_len > 0;
    h[hl++] = op->op;
    if (op->op == LAPSE_APPLY_REPEAT)
        h[hl++] = 'R';
    if (op->has_payload)
        h[hl++] = 'P';
    if (op->moving)
        h[hl++] = 'M';
    if (inherit)
        h[hl++] = 'I';
    if (op->recover)
        h[hl++] = 'W'; /* (takes no argument) */
    if (op->has_watch && !send_forgets(op))
        h[hl++] = 'O'; /* (a cancel's or repeat's would be forgotten at once) */
    if (op->op == LAPSE_APPLY_REPEAT && op->sent)
        h[hl++] = 'G'; /* (takes no argument) */
    if (op->op != LAPSE_APPLY_CANCEL) {
        h[hl++] = op->kind == LAPSE_WHEN_REL ? '+' : '@';
        hl = (size_t)(lapse_decimal(h + hl, op->when_ms) - h);
    }
    v[n] = h, l[n++] = hl;
    v[n] = p->arena + op->id_off, l[n++] = op->id_len;
    if (op->op == LAPSE_APPLY_REPEAT)
        l[n] = (size_t)(lapse_decimal(nums[1], op->period_ms) - nums[1]), v[n++] = nums[1];
    if (op->has_payload)
        v[n] = p->arena + op->pl_off, l[n++] = op->pl_len;
    if (op->local)
        v[n] = "?", l[n++] = 1;
    else if (op->moving)
        l[n] = busy ? (size_t)(lapse_decimal(nums[2], op->twin_deadline) - nums[2]) : 0,
        v[n++] = nums[2];
    if (inherit) /* kept as "1" + payload */
        v[n] = p->arena + op->inherit_off + 1, l[n++] = op->inherit_len - 1;
    if (op->has_watch && !send_forgets(op)) /* (the record, after its tag for drop.lua) */
        v[n] = p->arena + op->watch_off + 1, l[n++] = op->watch_len - 1;
    return n;
}

/* An op apply.lua can pass to ZADD GT as it comes (its "plain" pairs): an
 * extend to an absolute time, without payload, of an ID with no other op in
 * the batch (so taking it out of order changes nothing), outside a split. */
static int send_plain(const struct producer_op *op)
{
    return op->op == LAPSE_APPLY_EXTEND && op->kind == LAPSE_WHEN_ABS && !op->has_payload &&
           !op->moving && !op->shared && !op->recover;
}

/* apply.lua's argv after the epoch: the count of plain pairs, the pairs
 * (time, ID), then the other ops. */
static int send_build_apply(struct send *s, const struct send_call *c, const char **v, size_t *l,
                            int n)
{
    lapse_producer *p = s->p;
    int count_at = n++;
    size_t plain = 0;
    for (size_t i = 0; i < c->count; i++) {
        const struct producer_op *op = &p->ops[c->ops[i]];
        if (!send_plain(op))
            continue;
        l[n] = (size_t)(lapse_decimal(s->nums[i][0], op->when_ms) - s->nums[i][0]);
        v[n++] = s->nums[i][0];
        v[n] = p->arena + op->id_off, l[n++] = op->id_len;
        plain++;
    }
    l[count_at] = (size_t)(lapse_decimal_u(s->plain, plain) - s->plain);
    v[count_at] = s->plain;
    for (size_t i = 0; i < c->count; i++) {
        struct producer_op *op = &p->ops[c->ops[i]];
        if (send_plain(op))
            continue;
        n = send_apply_args(p, op, s->nums[i], v, l, n);
        op->sent = 1; /* sent again, it may have been applied: flag G */
    }
    return n;
}

/* The argv of one call: the shard's keys, then the script's fields. */
int send_build(struct send *s, const struct send_call *c)
{
    lapse_producer *p = s->p;
    const char **v = s->argv;
    size_t *l = s->argvlen;
    int n = 0;
    for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
        v[n] = p->keys->keys[c->shard][k], l[n++] = strlen(p->keys->keys[c->shard][k]);
    uint32_t old = lapse_layout_pair(&p->layout, c->shard); /* with_old: a new shard's */
    for (int k = 0; c->with_old && k < LAPSE_SHARD_NKEYS; k++)
        v[n] = p->keys->keys[old][k], l[n++] = strlen(p->keys->keys[old][k]);
    if (c->script == LAPSE_SCRIPT_TAKE) {
        snprintf(s->nums[0][0], 32, "%d", p->cfg->scanner_lease_ms);
        n = lapse_take_head(v, l, n, s->epoch, s->nums[0][0]);
    } else if (c->script != LAPSE_SCRIPT_DROP) {
        v[n] = s->epoch, l[n++] = strlen(s->epoch);
    }
    if (c->script == LAPSE_SCRIPT_APPLY)
        return send_build_apply(s, c, v, l, n);
    for (size_t i = 0; i < c->count; i++) {
        const struct producer_op *op = &p->ops[c->ops[i]];
        char *num0 = s->nums[i][0];
        const char *id = p->arena + op->id_off;
        switch (c->script) {
        case LAPSE_SCRIPT_TAKE:
            v[n] = id, l[n++] = op->id_len;
            break;
        case LAPSE_SCRIPT_DROP:
            if (op->twin == LAPSE_TAKE_TAKEN)
                n = lapse_drop_taken(v, l, n, id, op->id_len, p->arena + op->lease_off,
                                     op->lease_len);
            if (op->has_watch) /* its watch record went to the new shard: "o" or "f" and
                                  the record take answered */
                v[n] = id, l[n++] = op->id_len, v[n] = p->arena + op->watch_off,
                l[n++] = op->watch_len;
            break;
        case LAPSE_SCRIPT_SEED: {
            const struct lapse_twin t = {.id = id,
                                         .id_len = op->id_len,
                                         .state = LAPSE_TAKE_TAKEN,
                                         .deadline = (long long)op->twin_deadline,
                                         .has_payload = op->twin_has_pl,
                                         .payload = p->arena + op->twin_pl_off,
                                         .payload_len = op->twin_pl_len,
                                         .repeat = p->arena + op->twin_rep_off,
                                         .repeat_len = op->twin_rep_len};
            n = lapse_seed_twin(v, l, n, &t, num0);
            break;
        }
        default:
            break;
        }
    }
    return n;
}
