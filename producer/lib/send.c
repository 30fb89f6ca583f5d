/*
 * send — turns the producer's queued batch into Redis calls: sends them,
 * reads the replies and retries until they applied or the retry time ran
 * out, each node on its own: a node that does not answer holds only its
 * own ops (send_fail.c judges them against its window, degrade.c).
 * Planning the calls (routing, grouping by shard, each call's argv) is
 * send_plan.c's.
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
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "hash.h"
#include "producer_priv.h"

#define LAYOUT_REREAD_MS 1000 /* bounded staleness when nothing fences us */
#define RETRY_MIN_MS 10       /* the wait after a lost connection: doubling, */
#define RETRY_MAX_MS 500      /* jittered (backoff.h), within redis.retry_timeout_ms */
#define ARGV_MAX (2 * LAPSE_SHARD_NKEYS + 3 + 7 * APPLY_CHUNK)

static int want_taken(const struct producer_op *op)
{
    return op->twin == 't';
}
/* what drop.lua removes: a taken twin, and a watch record carried over */
static int want_dropped(const struct producer_op *op)
{
    return op->twin == 't' || op->has_watch;
}

static int send_stale(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "STALE", 5) == 0;
}

/* Appends node n's calls to its pipeline, and with redis.wait_replicas a
 * WAIT after them unless the send is pipelined (confirm.c confirms those);
 * the number of calls in *sent. */
static int send_append(struct send *s, size_t n, size_t *sent)
{
    lapse_producer *p = s->p;
    *sent = 0;
    s->waits[n] = 0;
    for (size_t c = 0; c < s->ncalls; c++) {
        if (p->layout.node_of[s->calls[c].shard] != n)
            continue;
        int argc = send_build(s, &s->calls[c]);
        int nkeys = (s->calls[c].with_old ? 2 : 1) * LAPSE_SHARD_NKEYS;
        if (lapse_redis_append_eval(p->nodes[n], s->calls[c].script, nkeys, argc, s->argv,
                                    s->argvlen) < 0)
            return SEND_RETRY;
        (*sent)++;
    }
    if (*sent && s->confirm && p->cfg->redis_wait_replicas > 0) {
        if (lapse_redis_append_wait(p->nodes[n], p->cfg->redis_wait_replicas,
                                    p->cfg->redis_wait_timeout_ms) < 0)
            return SEND_RETRY;
        s->waits[n] = 1;
    }
    return SEND_OK;
}

/* An applied call's ops whose time was relative ("+<ms>") get the time it
 * resolved to, from the shard's clock in apply.lua's reply: sent again
 * (their WAIT fell short, a batch in flight is sent again), they set the
 * same deadline instead of a later one, so a write applied twice fires as
 * one (id, deadline_ms), which consumers drop as a duplicate. (A repeat
 * sent again keeps the count its first application started whether or not
 * the answer came: send_build marks every op it sent, apply.lua's flag G.) */
static void send_pin(struct send *s, const struct send_call *call, const redisReply *r)
{
    long long now = -1;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
        r->element[2]->type == REDIS_REPLY_STRING)
        now = strtoll(r->element[2]->str, NULL, 10);
    for (size_t i = 0; i < call->count; i++) {
        struct producer_op *op = &s->p->ops[call->ops[i]];
        if (now >= 0 && op->kind == LAPSE_WHEN_REL && op->op != 'c') {
            op->kind = LAPSE_WHEN_ABS;
            op->when_ms += now;
        }
    }
}

/* Reads the replies of node n's `sent` calls. */
static int send_read(struct send *s, size_t n, size_t sent)
{
    lapse_producer *p = s->p;
    lapse_redis *r = p->nodes[n];
    int rc = SEND_OK;
    for (size_t c = 0; c < s->ncalls && sent; c++) {
        const struct send_call *call = &s->calls[c];
        if (p->layout.node_of[call->shard] != n)
            continue;
        sent--;
        redisReply *reply;
        if (lapse_redis_get_reply(r, &reply) < 0)
            return SEND_RETRY;
        if (lapse_redis_noscript(r, reply) && rc == SEND_OK)
            rc = SEND_RETRY; /* not executed: send again after reloading */
        else if (send_stale(reply))
            rc = SEND_STALE;
        else if (call->script == LAPSE_SCRIPT_TAKE) {
            if (send_took(s, call, reply) < 0 && rc == SEND_OK)
                rc = SEND_RETRY;
        } else if (reply->type == REDIS_REPLY_ERROR && call->script == LAPSE_SCRIPT_APPLY) {
            send_report(s, call, reply->str);
            for (size_t i = 0; i < call->count; i++)
                p->ops[call->ops[i]].done = 1; /* reported: never sent or reported again */
        } else if (reply->type == REDIS_REPLY_ERROR && call->script == LAPSE_SCRIPT_SEED)
            send_unseeded(s, call);
        else if (call->script == LAPSE_SCRIPT_APPLY) {
            send_pin(s, call, reply);
            if (p->layout.splitting)
                send_settled(s, call, reply);
        }
        freeReplyObject(reply);
    }
    if (!s->waits[n])
        return rc;
    int w = lapse_redis_wait_reply(r, p->cfg->redis_wait_replicas, p->cfg->redis_wait_timeout_ms);
    if (w == -1)
        return SEND_RETRY;
    if (w == 0)
        return rc;
    /* fewer replicas than asked took the writes of some primaries: those
     * may die with it, so they are not applied yet (producer_send sends
     * them again or reports them); the other primaries' are confirmed */
    for (size_t c = 0; c < s->ncalls; c++)
        if (p->layout.node_of[s->calls[c].shard] == n)
            s->short_shard[s->calls[c].shard] |=
                (unsigned char)lapse_redis_wait_short(r, degrade_addr(p, s->calls[c].shard));
    return rc == SEND_OK ? SEND_SHORT : rc;
}

/* Sends the planned calls, one pipeline per node, and reads every reply.
 * A node whose calls failed (no connection, a lost one, NOSCRIPT) is down
 * for this round: its shards are short (s->down, s->short_shard) and only
 * its calls are sent again; the other nodes' replies are read all the
 * same, so their writes are judged on their own (send_judge). */
static int send_calls(struct send *s)
{
    lapse_producer *p = s->p;
    int rc = SEND_OK;
    memset(s->down, 0, p->cfg->nnodes * sizeof *s->down);
    for (size_t n = 0; n < p->cfg->nnodes; n++) {
        size_t sent;
        int res = send_append(s, n, &sent);
        if (res == SEND_OK)
            res = send_read(s, n, sent);
        if (res == SEND_RETRY) {
            const char *why = lapse_redis_errstr(p->nodes[n]);
            s->down[n] = 1;
            snprintf(s->down_why[n], sizeof s->down_why[n], "%s",
                     why[0] ? why : "the scripts were not loaded (NOSCRIPT)");
            lapse_redis_disconnect(p->nodes[n]); /* its half-read pipeline goes */
            for (uint32_t k = 0; k < p->layout.shards; k++)
                if (p->layout.node_of[k] == n)
                    s->short_shard[k] = 1;
            res = SEND_SHORT;
        }
        if (res == SEND_STALE || (res == SEND_SHORT && rc == SEND_OK))
            rc = res;
    }
    return rc;
}

static void send_free(struct send *s)
{
    if (!s)
        return;
    free(s->order);
    free(s->picked);
    free(s->calls);
    free(s->start);
    free(s->argv);
    free(s->argvlen);
    free(s->nums);
    free(s->sent);
    free(s->waits);
    free(s->witness);
    free(s->conn);
    free(s->short_shard);
    free(s->down);
    free(s->down_why);
    free(s);
}

/* Scratch memory for a send of the queued batch. */
static struct send *send_new(lapse_producer *p)
{
    struct send *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = p;
    s->order = malloc(p->nops * sizeof *s->order);
    s->picked = malloc(p->nops * sizeof *s->picked);
    s->calls = malloc((3 * p->nops + 3 * LAPSE_MAX_SHARDS) * sizeof *s->calls);
    s->start = calloc(LAPSE_MAX_SHARDS + 1, sizeof *s->start);
    s->argv = malloc(ARGV_MAX * sizeof *s->argv);
    s->argvlen = malloc(ARGV_MAX * sizeof *s->argvlen);
    s->nums = malloc(APPLY_CHUNK * sizeof *s->nums);
    s->sent = calloc(p->cfg->nnodes, sizeof *s->sent);
    s->waits = calloc(p->cfg->nnodes, sizeof *s->waits);
    s->witness = calloc(p->cfg->nnodes, sizeof *s->witness);
    s->conn = calloc(p->cfg->nnodes, sizeof *s->conn);
    s->short_shard = calloc(LAPSE_MAX_SHARDS, sizeof *s->short_shard);
    s->down = calloc(p->cfg->nnodes, sizeof *s->down);
    s->down_why = calloc(p->cfg->nnodes, sizeof *s->down_why);
    s->confirm = 1;
    if (!s->order || !s->picked || !s->calls || !s->start || !s->argv || !s->argvlen || !s->nums ||
        !s->sent || !s->waits || !s->witness || !s->conn || !s->short_shard || !s->down ||
        !s->down_why) {
        send_free(s);
        return NULL;
    }
    return s;
}

struct send *producer_send_start(lapse_producer *p)
{
    /* a primary failing to answer or confirm: producer_send judges each */
    if (lapse_clock_mono_ms() - p->layout_read_ms >= LAYOUT_REREAD_MS || degrade_any(p))
        return NULL;
    struct send *s = send_new(p);
    if (!s)
        return NULL;
    send_route(p);
    /* During a split only batches without a moving ID from another node take
     * this way: IDs that stay, and moved ones the cache knows settled, are
     * plain ops of one shard, and apply.lua moves a local one's twin itself;
     * one from another node needs take, seed and drop (producer_send). */
    for (size_t i = 0; p->layout.splitting && i < p->nops; i++)
        if (send_taking(&p->ops[i])) {
            send_free(s);
            return NULL;
        }
    snprintf(s->epoch, sizeof s->epoch, "%lld", (long long)p->layout.epoch);
    if (send_group(s, 0, 0) == (size_t)-1) {
        send_free(s);
        return NULL;
    }
    send_plan(s, LAPSE_SCRIPT_APPLY, NULL);
    /* with redis.wait_replicas, a later WAIT from a second connection
     * confirms these writes (confirm.c); if it cannot, the careful way. A
     * cluster has no one server to confirm from: there the WAITs follow
     * the calls in their own pipeline (redis.h). */
    s->confirm = p->several_servers;
    for (size_t c = 0; p->cfg->redis_wait_replicas > 0 && !p->several_servers && c < s->ncalls;
         c++) {
        size_t n = p->layout.node_of[s->calls[c].shard];
        if (!s->witness[n] && (s->witness[n] = confirm_witness(p, n)) == 0) {
            send_free(s);
            return NULL;
        }
    }
    for (size_t n = 0; n < p->cfg->nnodes; n++) {
        if (send_append(s, n, &s->sent[n]) != SEND_OK || lapse_redis_send(p->nodes[n]) < 0) {
            /* drop what is half sent; the replies of earlier sends in
             * flight go with it, so reading them fails and producer.c
             * sends every unconfirmed batch again, in order */
            for (size_t k = 0; k < p->cfg->nnodes; k++)
                lapse_redis_disconnect(p->nodes[k]);
            send_free(s);
            return NULL;
        }
        s->conn[n] = lapse_redis_reconnects(p->nodes[n]);
    }
    return s;
}

/* A pipelined send whose WAIT on node n fell short: the retry window of
 * each primary short of replicas opens now (degrade.c), not at the end of
 * the careful send's first round, a WAIT later, which would cost that
 * primary's writes one redis.wait_timeout_ms more than their window. */
static void send_short(struct send *s, size_t n)
{
    lapse_producer *p = s->p;
    int64_t now = lapse_clock_mono_ms();
    for (uint32_t k = 0; k < p->layout.shards; k++)
        if (p->layout.node_of[k] == n && s->short_shard[k])
            (void)degrade_short(p, n, degrade_addr(p, k), lapse_redis_errstr(p->nodes[n]), now);
}

int producer_send_finish(lapse_producer *p, struct send *s, uint64_t *witness)
{
    int rc = SEND_OK;
    for (size_t n = 0; n < p->cfg->nnodes; n++) {
        witness[n] = s->witness[n];
        /* on a connection made since, these replies will never come, and
         * what comes instead is another send's */
        int res = s->sent[n] && lapse_redis_reconnects(p->nodes[n]) != s->conn[n]
                      ? SEND_RETRY
                      : send_read(s, n, s->sent[n]);
        if (res == SEND_RETRY) {
            rc = res;
            break;
        }
        if (res == SEND_SHORT)
            send_short(s, n);
        if (res != SEND_OK)
            rc = res;
    }
    send_free(s);
    if (rc == SEND_OK)
        return 0;
    for (size_t n = 0; n < p->cfg->nnodes; n++)
        lapse_redis_disconnect(p->nodes[n]); /* discard half-read pipelines */
    return -1;
}

void producer_send_abandon(struct send *s)
{
    send_free(s);
}

/*
 * The careful way (producer_send), in rounds. Each round is a list of
 * phases chosen by the layout's kind: stable (route, apply, judge) or a
 * split (route, take, seed + apply, drop, judge), after reading the
 * layout again if it is old or a shard fenced it. A phase returns SEND_OK
 * to go on to the next, SEND_DONE when the batch is finished (every op
 * applied or reported), or what ends the round: SEND_RETRY, SEND_STALE or
 * SEND_SHORT. Between rounds every op not done is sent again, with
 * back-off, until redis.retry_timeout_ms from the start. Each node and
 * primary is judged on its own (send_judge): what it applied (and with
 * redis.wait_replicas, confirmed) is done, and one that does not answer or
 * cannot confirm costs its writes one retry window of its own, shared by
 * every batch (degrade.c), not one per batch. A batch's ops of one ID all
 * go to one shard, and a batch is done (applied or reported) before the
 * next is sent, so a retried op is never overtaken by a later one of its ID.
 */
enum { SEND_DONE = 1 }; /* a phase finished the batch: see above */

/* A careful send's state across its rounds. */
struct send_run {
    struct send *s;
    int64_t give_up;              /* monotonic: redis.retry_timeout_ms after the start */
    int64_t round_at;             /* monotonic: when this round began */
    int stale;                    /* the layout is to be read again before routing */
    int fenced;                   /* a shard answered STALE: our layout is old */
    int routed;                   /* routed (and during a split, taken) under this layout:
                         a round resumes with the applies (which could not be
                         planned: out of memory) */
    size_t failed;                /* ops reported failed by node or primary (send_fail.c) */
    struct lapse_backoff backoff; /* the wait between rounds */
    char *errstr;                 /* the caller's, for the last failure */
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
    memset(s->short_shard, 0, s->p->layout.shards * sizeof *s->short_shard);
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
    run->routed = 1;
    memset(s->short_shard, 0, s->p->layout.shards * sizeof *s->short_shard);
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
    memset(s->short_shard, 0, s->p->layout.shards * sizeof *s->short_shard);
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
    if (res == SEND_OK)
        res = send_phase_judge(run, send_phase_apply(run));
    return res;
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
        res = run->s->p->layout.splitting ? send_round_split(run) : send_round_stable(run);
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
