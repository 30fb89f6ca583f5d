/*
 * producer — see producer.h.
 *
 * Queued operations live in one array plus one byte arena (IDs, payloads) and
 * are only turned into Redis calls at flush time: group by shard (stable, so
 * per-shard order is kept), then per node pipeline one EVALSHA apply per
 * shard and chunk, then read the replies. One round trip per node per flush
 * is the whole cost of a batch; the Lua side (common/lua/apply.lua) does the
 * ZADD/HSET work and reads the shard's clock for relative times.
 */
#include "producer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "hash.h"
#include "layout.h"
#include "redis.h"

#define APPLY_CHUNK 256 /* ops per Lua call: keeps each call short for Redis */
#define KEY_MAX (LAPSE_NS_MAX + 16)

struct producer_op {
    uint32_t shard;
    char op;                /* 't' touch, 'e' extend, 'r' repeat, 'c' cancel (apply.lua) */
    int has_payload;
    size_t id_off, id_len;  /* in the arena */
    size_t pl_off, pl_len;  /* in the arena */
    char when[24];          /* "+ms" / "@ms" / "" */
    size_t when_len;
    char period[24];        /* repeat: period ms, else "" */
    size_t period_len;
    uint64_t tag;
};

struct producer_call {      /* one EVALSHA in a node's pipeline */
    size_t first, count;    /* range in the flush's shard-ordered index */
};

struct lapse_producer {
    const struct lapse_config *cfg;
    lapse_redis **nodes;           /* one per cfg->nodes entry */
    struct lapse_layout layout;
    char (*keys)[LAPSE_SHARD_NKEYS][KEY_MAX]; /* per shard: the keys of common/lua */
    struct producer_op *ops;
    size_t nops, cap_ops;
    char *arena;
    size_t arena_len, arena_cap;
    lapse_producer_error_cb *on_error;
    void *ctx;
};

static void producer_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

lapse_producer *lapse_producer_new(const struct lapse_config *cfg, lapse_producer_error_cb *on_error,
                                   void *ctx, char *errstr, size_t size)
{
    lapse_producer *p = calloc(1, sizeof *p);
    if (!p)
        goto oom;
    p->cfg = cfg;
    p->on_error = on_error;
    p->ctx = ctx;
    p->nodes = calloc(cfg->nnodes, sizeof *p->nodes);
    if (!p->nodes)
        goto oom;
    for (size_t i = 0; i < cfg->nnodes; i++)
        if (!(p->nodes[i] = lapse_redis_new(&cfg->nodes[i], cfg->redis_connect_timeout_ms,
                                            cfg->redis_command_timeout_ms)))
            goto oom;
    if (lapse_redis_ensure(p->nodes[0]) < 0) {
        snprintf(errstr, size, "%s", lapse_redis_errstr(p->nodes[0]));
        goto fail;
    }
    int rc = lapse_layout_load(p->nodes[0], cfg, &p->layout, errstr, size);
    if (rc == 1)
        snprintf(errstr, size, "namespace \"%s\" is not initialised: run lapse-scale -c %s init N",
                 cfg->ns, cfg->path);
    if (rc != 0)
        goto fail;
    p->keys = calloc(p->layout.shards, sizeof *p->keys);
    if (!p->keys)
        goto oom;
    for (uint32_t s = 0; s < p->layout.shards; s++) {
        for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
            lapse_key_shard(p->keys[s][k], KEY_MAX, cfg->ns, lapse_shard_keys[k], s);
    }
    return p;
oom:
    snprintf(errstr, size, "out of memory");
fail:
    lapse_producer_free(p);
    return NULL;
}

void lapse_producer_free(lapse_producer *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->nodes && i < p->cfg->nnodes; i++)
        lapse_redis_free(p->nodes[i]);
    free(p->nodes);
    lapse_layout_free(&p->layout);
    free(p->keys);
    free(p->ops);
    free(p->arena);
    free(p);
}

size_t lapse_producer_pending(const lapse_producer *p) { return p->nops; }

static int producer_arena_put(lapse_producer *p, const char *b, size_t len, size_t *off)
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

int lapse_producer_submit(lapse_producer *p, const struct lapse_cmd *cmd, uint64_t tag,
                          char *errstr, size_t size)
{
    if (p->nops == p->cap_ops) {
        size_t cap = p->cap_ops ? p->cap_ops * 2 : 1024;
        struct producer_op *ops = realloc(p->ops, cap * sizeof *ops);
        if (!ops) {
            snprintf(errstr, size, "out of memory");
            return -1;
        }
        p->ops = ops;
        p->cap_ops = cap;
    }
    struct producer_op *op = &p->ops[p->nops];
    memset(op, 0, sizeof *op);
    op->shard = lapse_shard_of(lapse_hash(cmd->id, cmd->id_len), p->layout.shards);
    static const char codes[] = {[LAPSE_OP_TOUCH] = 't', [LAPSE_OP_EXTEND] = 'e',
                                 [LAPSE_OP_REPEAT] = 'r', [LAPSE_OP_CANCEL] = 'c'};
    op->op = codes[cmd->op];
    if (cmd->op == LAPSE_OP_REPEAT)
        op->period_len = (size_t)snprintf(op->period, sizeof op->period, "%lld",
                                          (long long)cmd->period_ms);
    op->tag = tag;
    if (cmd->when_kind != LAPSE_WHEN_NONE)
        op->when_len = (size_t)snprintf(op->when, sizeof op->when, "%c%lld",
                                        cmd->when_kind == LAPSE_WHEN_REL ? '+' : '@',
                                        (long long)cmd->when_ms);
    if (producer_arena_put(p, cmd->id, cmd->id_len, &op->id_off) < 0 ||
        (cmd->payload && producer_arena_put(p, cmd->payload, cmd->payload_len, &op->pl_off) < 0)) {
        snprintf(errstr, size, "out of memory");
        return -1;
    }
    op->id_len = cmd->id_len;
    op->has_payload = cmd->payload != NULL;
    op->pl_len = cmd->payload ? cmd->payload_len : 0;
    p->nops++;
    if (p->nops >= (size_t)p->cfg->producer_batch)
        return lapse_producer_flush(p, errstr, size);
    return 0;
}

static void producer_report(lapse_producer *p, const size_t *idx, size_t n, const char *reason)
{
    if (!p->on_error)
        return;
    for (size_t i = 0; i < n; i++)
        p->on_error(p->ctx, p->ops[idx[i]].tag, reason);
}

/*
 * Sends the calls of one node as a pipeline and reads every reply.
 * Returns 0 when every call got a reply (errors reported per op), -1 when the
 * connection failed and the whole set must be re-sent.
 */
static int producer_send_node(lapse_producer *p, lapse_redis *r, const size_t *order,
                              const struct producer_call *calls, size_t ncalls, const char **argv,
                              size_t *argvlen)
{
    for (size_t c = 0; c < ncalls; c++) {
        const struct producer_op *first = &p->ops[order[calls[c].first]];
        int argc = LAPSE_SHARD_NKEYS;
        for (int k = 0; k < LAPSE_SHARD_NKEYS; k++) {
            argv[k] = p->keys[first->shard][k];
            argvlen[k] = strlen(argv[k]);
        }
        for (size_t i = 0; i < calls[c].count; i++) {
            const struct producer_op *op = &p->ops[order[calls[c].first + i]];
            argv[argc] = &op->op, argvlen[argc++] = 1;
            argv[argc] = p->arena + op->id_off, argvlen[argc++] = op->id_len;
            argv[argc] = op->when, argvlen[argc++] = op->when_len;
            argv[argc] = op->period, argvlen[argc++] = op->period_len;
            argv[argc] = op->has_payload ? "1" : "0", argvlen[argc++] = 1;
            argv[argc] = p->arena + op->pl_off, argvlen[argc++] = op->pl_len;
        }
        if (lapse_redis_append_eval(r, LAPSE_SCRIPT_APPLY, LAPSE_SHARD_NKEYS, argc, argv,
                                    argvlen) < 0)
            return -1;
    }
    int retry = 0;
    for (size_t c = 0; c < ncalls; c++) {
        redisReply *reply;
        if (lapse_redis_get_reply(r, &reply) < 0)
            return -1;
        if (lapse_redis_noscript(r, reply))
            retry = 1; /* not executed: send the set again after reloading */
        else if (reply->type == REDIS_REPLY_ERROR)
            producer_report(p, order + calls[c].first, calls[c].count, reply->str);
        freeReplyObject(reply);
    }
    return retry ? -1 : 0;
}

int lapse_producer_flush(lapse_producer *p, char *errstr, size_t size)
{
    if (p->nops == 0)
        return 0;
    uint32_t shards = p->layout.shards;
    /* Stable counting sort of the ops by shard. */
    size_t *start = calloc(shards + 1, sizeof *start);
    size_t *order = malloc(p->nops * sizeof *order);
    struct producer_call *calls = malloc((p->nops + shards) * sizeof *calls);
    const char **argv = malloc((LAPSE_SHARD_NKEYS + 6 * APPLY_CHUNK) * sizeof *argv);
    size_t *argvlen = malloc((LAPSE_SHARD_NKEYS + 6 * APPLY_CHUNK) * sizeof *argvlen);
    int rc = -1;
    if (!start || !order || !calls || !argv || !argvlen) {
        snprintf(errstr, size, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < p->nops; i++)
        start[p->ops[i].shard + 1]++;
    for (uint32_t s = 0; s < shards; s++)
        start[s + 1] += start[s];
    {
        size_t *fill = calloc(shards, sizeof *fill);
        if (!fill) {
            snprintf(errstr, size, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < p->nops; i++) {
            uint32_t s = p->ops[i].shard;
            order[start[s] + fill[s]++] = i;
        }
        free(fill);
    }
    rc = 0;
    for (size_t n = 0; n < p->cfg->nnodes && rc == 0; n++) {
        size_t ncalls = 0;
        for (uint32_t s = 0; s < shards; s++) {
            if (p->layout.node_of[s] != n)
                continue;
            for (size_t i = start[s]; i < start[s + 1]; i += APPLY_CHUNK) {
                calls[ncalls].first = i;
                calls[ncalls++].count = start[s + 1] - i < APPLY_CHUNK ? start[s + 1] - i
                                                                      : APPLY_CHUNK;
            }
        }
        if (ncalls == 0)
            continue;
        /* argv is reused per call: hiredis copies each call when appended. */
        int64_t give_up = lapse_clock_mono_ms() + p->cfg->redis_command_timeout_ms;
        lapse_redis *r = p->nodes[n];
        while (producer_send_node(p, r, order, calls, ncalls, argv, argvlen) < 0) {
            if (lapse_clock_mono_ms() >= give_up) {
                snprintf(errstr, size, "%s", lapse_redis_errstr(r));
                for (size_t c = 0; c < ncalls; c++)
                    producer_report(p, order + calls[c].first, calls[c].count, errstr);
                rc = -1;
                break;
            }
            lapse_redis_disconnect(r); /* discard any half-read pipeline */
            int wait = lapse_redis_backoff_ms(r);
            producer_sleep_ms(wait > 0 ? wait : 50);
        }
    }
out:
    p->nops = 0;
    p->arena_len = 0;
    free(start);
    free(order);
    free(calls);
    free(argv);
    free(argvlen);
    return rc;
}
