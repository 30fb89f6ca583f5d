/*
 * send_pipe — the pipelines of a send (send.c): each node's calls appended
 * to one pipeline, one round trip per node per batch (with
 * redis.wait_replicas a WAIT after them, unless confirm.c confirms them),
 * and their replies read into the ops in the order they were sent; and
 * the pipelined send (producer_send_start, producer_send_finish), which
 * sends a batch without waiting for its replies when nothing needs the
 * careful way (producer_send).
 *
 * A node is judged on its own: one whose calls failed (no connection, a
 * lost one, NOSCRIPT) is down for the round, its shards short, and the
 * other nodes' replies are read all the same (send_calls). What a reply
 * says goes into the ops here (a relative time pinned, a refused call
 * reported: send_fail.c) or, for a split's calls, in send_split.c.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hash.h"
#include "producer_priv.h"

#define ARGV_MAX (2 * LAPSE_SHARD_NKEYS + 3 + 7 * APPLY_CHUNK)

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
 * resolved to, `now` (the shard's clock in apply.lua's reply; -1: none,
 * no time was relative): sent again
 * (their WAIT fell short, a batch in flight is sent again), they set the
 * same deadline instead of a later one, so a write applied twice fires as
 * one (id, deadline_ms), which consumers drop as a duplicate. (A repeat
 * sent again keeps the count its first application started whether or not
 * the answer came: send_build marks every op it sent, apply.lua's flag G.) */
static void send_pin(struct send *s, const struct send_call *call, long long now)
{
    for (size_t i = 0; i < call->count; i++) {
        struct producer_op *op = &s->p->ops[call->ops[i]];
        if (now >= 0 && op->kind == LAPSE_WHEN_REL && op->op != LAPSE_APPLY_CANCEL) {
            op->kind = LAPSE_WHEN_ABS;
            op->when_ms += now;
        }
    }
}

/* What one of node n's replies says, read into its call's ops; rc is
 * what the node's earlier replies said, and the result what they all
 * say. A call Redis refused: an apply's ops are reported (and done: never
 * sent or reported again); a split's calls are send_split.c's to judge. */
static int send_reply(struct send *s, size_t n, const struct send_call *call,
                      const redisReply *reply, int rc)
{
    lapse_producer *p = s->p;
    if (lapse_redis_noscript(p->nodes[n], reply)) /* every one of the pipeline's */
        return rc == SEND_OK ? SEND_RETRY : rc;   /* not executed: send again after reloading */
    if (lapse_script_fence(reply, NULL) == LAPSE_FENCE_STALE)
        return SEND_STALE;
    int refused = reply->type == REDIS_REPLY_ERROR;
    switch (call->script) {
    case LAPSE_SCRIPT_APPLY: {
        if (refused) {
            send_report(s, call, reply->str);
            for (size_t i = 0; i < call->count; i++)
                p->ops[call->ops[i]].done = 1;
            return rc;
        }
        const char *moved; /* (only with the old shard's keys) */
        size_t nmoved;
        long long now;
        lapse_apply_read(reply, &moved, &nmoved, &now);
        send_pin(s, call, now);
        if (lapse_layout_changing(&p->layout))
            send_settled(s, call, call->with_old ? moved : "", call->with_old ? nmoved : 0);
        return rc;
    }
    case LAPSE_SCRIPT_TAKE:
        return send_took(s, call, reply) < 0 && rc == SEND_OK ? SEND_RETRY : rc;
    case LAPSE_SCRIPT_SEED:
        if (refused)
            send_unseeded(s, call);
        return rc;
    default: /* drop: best effort */
        return rc;
    }
}

/* Reads the replies of node n's `sent` calls, then its WAIT's. */
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
        rc = send_reply(s, n, call, reply, rc);
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
int send_calls(struct send *s)
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
            for (uint32_t k = 0; k < lapse_layout_span(&p->layout); k++)
                if (p->layout.node_of[k] == n)
                    s->short_shard[k] = 1;
            res = SEND_SHORT;
        }
        if (res == SEND_STALE || (res == SEND_SHORT && rc == SEND_OK))
            rc = res;
    }
    return rc;
}

void send_free(struct send *s)
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
struct send *send_new(lapse_producer *p)
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
    for (size_t i = 0; lapse_layout_changing(&p->layout) && i < p->nops; i++)
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
    for (uint32_t k = 0; k < lapse_layout_span(&p->layout); k++)
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
