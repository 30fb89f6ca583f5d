/*
 * send — applies the producer's queued batch the careful way
 * (producer_send): in rounds, until every op is applied or reported or
 * the retry time ran out. A round reads the layout again if it is old or
 * a shard fenced it (STALE), then runs the phases of the layout's kind,
 * each a function below:
 *
 *   stable layout (send_round_stable):  route, apply, judge
 *   during a split (send_round_split):  route, take, seed + apply, drop, judge
 *
 *   route   where each op applies (send_plan.c); the ops of a primary whose
 *           window closed are reported failed at once (send_gate)
 *   take    the moving IDs' twins, in their old shards
 *   apply   the ops, each node's calls in one pipeline, its WAIT after
 *           (send_pipe.c); during a split the taken twins' seeds first
 *   drop    the twins the applies copied, in their old shards
 *   judge   what each node and primary applied is done; the rest goes
 *           round again while its window is open (send_judge)
 *
 * Then the send gives up if out of time (send_expired), else waits
 * (send_pause) and goes round again. Another kind of layout change gets a
 * round of its own, picked in send_round. A batch that needs none of this
 * goes out pipelined (send_pipe.c: producer_send_start).
 *
 * What it keeps true: each node and primary is judged on its own: what it
 * applied (and with redis.wait_replicas, confirmed) is done, and one that
 * does not answer or cannot confirm holds only its own ops, for one retry
 * window of its own shared by every batch (send_fail.c, degrade.c), not
 * one per batch. A batch's ops of one ID all go to one shard, and a batch
 * is done (applied or reported) before the next is sent, so a retried op
 * is never overtaken by a later one of its ID.
 *
 * Stable layout: the ops are grouped by shard (stably: per ID they keep
 * their order) and each node gets one pipeline of apply.lua calls, one per
 * shard and chunk: one round trip per node per batch.
 *
 * During a split an ID that moves to a new shard on another node is
 * written in three steps, take (its old shard's node), seed + apply (its
 * new shard's), drop (the old one's), each a pipeline of its own; on one
 * node apply.lua does all of it ("M ?") and the batch is pipelined like any
 * other (producer_send_start). Why every crash point between the steps is
 * safe, and the STALE fence: docs/design.md, "The steps of a moving ID's
 * write, and every crash point". send_split.c reads take's answers, the
 * seeds' and applies' replies into the ops, and keeps the moved-ID cache.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "producer_priv.h"

#define RETRY_MIN_MS 10  /* the wait after a lost connection: doubling, */
#define RETRY_MAX_MS 500 /* jittered (backoff.h), within redis.retry_timeout_ms */

static int want_taken(const struct producer_op *op)
{
    return op->twin == LAPSE_TAKE_TAKEN;
}
/* what drop.lua removes: a taken twin, and a watch record carried over */
static int want_dropped(const struct producer_op *op)
{
    return op->twin == LAPSE_TAKE_TAKEN || op->has_watch;
}

/* What a phase returns: SEND_OK to go on to the next, SEND_DONE when the
 * batch is finished (every op applied or reported), or what ends the
 * round: SEND_RETRY, SEND_STALE, SEND_SHORT (producer_priv.h). */
enum { SEND_DONE = 1 };

/* A careful send's state across its rounds. */
struct send_run {
    struct send *s;
    int64_t give_up;              /* monotonic: redis.retry_timeout_ms after the start */
    int64_t round_at;             /* monotonic: when this round began */
    int stale;                    /* the layout is to be read again before routing */
    int fenced;                   /* a shard answered STALE: our layout is old */
    int routed;                   /* routed (and taken) under this layout: a round resumes
                                     with the applies (they could not be planned: out of
                                     memory); the judge and a new layout clear it */
    size_t failed;                /* ops reported failed by node or primary (send_fail.c) */
    struct lapse_backoff backoff; /* the wait between rounds */
    char *errstr;                 /* the caller's: why the last op failed */
    size_t size;
};

/* Reads the layout again when it is stale (old, or fenced by a STALE
 * answer); then the ops are routed afresh. One that cannot be read serves
 * as it is, unless a shard fenced it. */
static int send_phase_layout(struct send_run *run)
{
    lapse_producer *p = run->s->p;
    if (!run->stale)
        return SEND_OK;
    int64_t was = p->layout.epoch;
    if (producer_load_layout(p, run->errstr, run->size) < 0) {
        if (run->fenced || !p->keys)
            return SEND_RETRY;
        /* the layout's node is down: the layout we have serves (every
         * script checks its epoch and answers STALE if it is old) */
        run->stale = 0;
        return SEND_OK;
    }
    run->stale = 0;
    run->routed = 0;
    if (run->fenced && p->layout.epoch == was)
        lapse_clock_sleep_ms(20); /* fenced, new layout not out yet */
    run->fenced = 0;
    return SEND_OK;
}

/* Where each op applies under the layout (send_route); the ops of a
 * primary whose window closed are reported failed at once (send_gate).
 * SEND_DONE when none is left to send. */
static int send_phase_route(struct send_run *run)
{
    struct send *s = run->s;
    if (run->routed)
        return SEND_OK;
    send_route(s->p);
    if (send_gate(s, &run->failed, run->errstr, run->size) == 0)
        return SEND_DONE;
    snprintf(s->epoch, sizeof s->epoch, "%lld", (long long)s->p->layout.epoch);
    return SEND_OK;
}

/* Split step 1: take the moving IDs' twins. Any take not done or not
 * confirmed: all are taken again next round (SEND_SHORT: the connections
 * of the nodes that answered stay), but those out of a node that stopped
 * answering for its whole window are reported failed (send_take_down). */
static int send_phase_take(struct send_run *run)
{
    struct send *s = run->s;
    if (run->routed)
        return SEND_OK;
    s->ncalls = 0;
    memset(s->short_shard, 0, lapse_layout_span(&s->p->layout) * sizeof *s->short_shard);
    size_t n = send_group(s, 1, 1);
    if (n == (size_t)-1)
        return SEND_RETRY;
    if (n == 0)
        return SEND_OK;
    send_plan(s, LAPSE_SCRIPT_TAKE, NULL);
    int rc = send_calls(s);
    if (rc != SEND_SHORT)
        return rc;
    send_take_down(s, &run->failed, run->errstr, run->size);
    return SEND_SHORT;
}

/* Plans the ops' apply calls, after seed calls for the ops want_seed
 * picks (NULL: none), and sends them: all seeds are planned before all
 * applies, so in each node's pipeline a shard's seeds run before its ops. */
static int send_applies(struct send_run *run, int (*want_seed)(const struct producer_op *))
{
    struct send *s = run->s;
    run->routed = 1; /* from here a round resumes with the applies */
    memset(s->short_shard, 0, lapse_layout_span(&s->p->layout) * sizeof *s->short_shard);
    s->ncalls = 0;
    s->npicked = 0;
    if (send_group(s, 0, 0) == (size_t)-1)
        return SEND_RETRY;
    if (want_seed)
        send_plan(s, LAPSE_SCRIPT_SEED, want_seed);
    send_plan(s, LAPSE_SCRIPT_APPLY, NULL);
    return send_calls(s);
}

/* Applies the ops: each node's calls in one pipeline (its WAIT after). */
static int send_phase_apply(struct send_run *run)
{
    return send_applies(run, NULL);
}

/* Split step 2: seed the taken twins, apply the ops. */
static int send_phase_seed_apply(struct send_run *run)
{
    return send_applies(run, want_taken);
}

/* Split step 3, once every apply went through: drop the twins step 2
 * copied. Best effort: a twin left behind is dropped by its scanner when
 * our lease on it runs out. */
static void send_phase_drop(struct send_run *run)
{
    struct send *s = run->s;
    s->ncalls = 0;
    s->npicked = 0;
    if (send_group(s, 1, 1) == (size_t)-1)
        return;
    send_plan(s, LAPSE_SCRIPT_DROP, want_dropped);
    (void)send_calls(s);
    /* a drop that failed says nothing about the ops */
    memset(s->short_shard, 0, lapse_layout_span(&s->p->layout) * sizeof *s->short_shard);
}

/* After the applies (res): what each node and primary applied is done
 * (send_judge), and what a failing one holds is routed (and during a
 * split, taken) again next round while its window is open, else reported
 * failed. SEND_DONE when nothing is left. */
static int send_phase_judge(struct send_run *run, int res)
{
    if (res != SEND_OK && res != SEND_SHORT)
        return res;
    if ((res == SEND_OK && run->s->p->ndegraded == 0) ||
        send_judge(run->s, &run->failed, run->errstr, run->size) == 0)
        return SEND_DONE;
    run->routed = 0;
    return SEND_SHORT;
}

/* A round under a stable layout: every op is a plain op of its shard. */
static int send_round_stable(struct send_run *run)
{
    int res = send_phase_route(run);
    if (res != SEND_OK)
        return res;
    res = send_phase_apply(run);
    return send_phase_judge(run, res);
}

/* A round during a split: the steps of a moving ID's write (the top). */
static int send_round_split(struct send_run *run)
{
    int res = send_phase_route(run);
    if (res == SEND_OK)
        res = send_phase_take(run);
    if (res != SEND_OK)
        return res;
    res = send_phase_seed_apply(run);
    if (res == SEND_OK)
        send_phase_drop(run);
    return send_phase_judge(run, res);
}

/* One round: the layout, then the phases of its kind. A STALE answer
 * has the next round read the layout first. */
static int send_round(struct send_run *run)
{
    run->round_at = lapse_clock_mono_ms();
    int res = send_phase_layout(run);
    if (res == SEND_OK)
        res = lapse_layout_changing(&run->s->p->layout) ? send_round_split(run)
                                                        : send_round_stable(run);
    if (res == SEND_STALE)
        run->stale = run->fenced = 1;
    return res;
}

/* 1 when the send is out of time after a round that ended with res: then
 * every op not done is reported failed, errstr saying why. Writes held
 * only by a node or primary that fails are bounded by its window
 * (degrade.c), which may have opened after we started. */
static int send_expired(struct send_run *run, int res)
{
    struct send *s = run->s;
    lapse_producer *p = s->p;
    if (lapse_clock_mono_ms() <
        run->give_up + (res == SEND_SHORT ? p->cfg->redis_retry_timeout_ms : 0))
        return 0;
    if (res == SEND_STALE)
        snprintf(run->errstr, run->size,
                 "the layout of \"%s\" changed and the new one was not "
                 "published within %d ms (an interrupted split? run lapse-scale split)",
                 p->cfg->ns, p->cfg->redis_retry_timeout_ms);
    /* the first node that did not answer, else the first with an error */
    size_t why = p->cfg->nnodes, none = p->cfg->nnodes;
    for (size_t n = 0; res != SEND_STALE && n < p->cfg->nnodes; n++)
        if (s->down[n] ? why == none || !s->down[why]
                       : why == none && lapse_redis_errstr(p->nodes[n])[0])
            why = n;
    if (why < p->cfg->nnodes)
        snprintf(run->errstr, run->size, "%s",
                 s->down[why] ? s->down_why[why] : lapse_redis_errstr(p->nodes[why]));
    size_t left = 0;
    for (size_t i = 0; i < p->nops; i++)
        if (!p->ops[i].done)
            s->order[left++] = i;
    struct send_call all = {LAPSE_SCRIPT_APPLY, 0, 0, s->order, left};
    send_report(s, &all, run->errstr);
    return 1;
}

/* The wait before the next round. A fixed one could keep in step with a
 * periodic fault (backoff.h); it counts from the round's start, since a
 * WAIT that fell short has waited redis.wait_timeout_ms already (else a
 * primary short of replicas would cost its window plus a sleep per
 * round); a node refusing connections has its own, longer back-off. */
static void send_pause(struct send_run *run, int res)
{
    lapse_producer *p = run->s->p;
    if (res == SEND_STALE)
        return; /* reload at once; a fenced, unpublished layout waits 20 ms */
    for (size_t n = 0; res != SEND_SHORT && n < p->cfg->nnodes; n++)
        lapse_redis_disconnect(p->nodes[n]); /* discard half-read pipelines */
    int64_t wait = lapse_backoff_next(&run->backoff) - (lapse_clock_mono_ms() - run->round_at);
    for (size_t n = 0; n < p->cfg->nnodes; n++)
        if (lapse_redis_backoff_ms(p->nodes[n]) > wait)
            wait = lapse_redis_backoff_ms(p->nodes[n]);
    int64_t left = run->give_up - lapse_clock_mono_ms();
    if (wait > 0)
        lapse_clock_sleep_ms(left > 0 && wait > left ? (int)left : (int)wait);
}

int producer_send(lapse_producer *p, char *errstr, size_t size)
{
    struct send_run run = {.s = send_new(p), .errstr = errstr, .size = size};
    if (!run.s) {
        snprintf(errstr, size, "out of memory");
        return -1;
    }
    run.give_up = lapse_clock_mono_ms() + p->cfg->redis_retry_timeout_ms;
    run.stale = lapse_clock_mono_ms() - p->layout_read_ms >= LAYOUT_REREAD_MS;
    lapse_backoff_init(&run.backoff, RETRY_MIN_MS, RETRY_MAX_MS);
    int res;
    while ((res = send_round(&run)) != SEND_DONE && !send_expired(&run, res))
        send_pause(&run, res);
    send_free(run.s);
    return res == SEND_DONE && run.failed == 0 ? 0 : -1;
}
