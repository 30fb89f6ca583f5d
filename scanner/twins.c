/*
 * twins — what an old shard's scanner does during a split (see
 * producer/send.c for the whole protocol).
 *
 * An ID claimed from old shard i whose hash has bit prev_shards set belongs
 * to new shard j now. If it was written in j since the split began (j's
 * moved set holds it), the copy in i is a stale twin: it is dropped, never
 * fired. Otherwise it fires from i as usual. The check is one pipelined
 * SISMEMBER per node for the whole claimed batch.
 */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "shard.h"

/* The connection to config node n, opened on first use; NULL if out of
 * memory. */
static lapse_redis *twins_peer(lapse_scanner *s, uint16_t n)
{
    if (!s->peers[n])
        s->peers[n] = lapse_redis_new(s->cfg, n);
    return s->peers[n];
}

/*
 * During a split, an old shard's claimed IDs that belong to a new shard are
 * stale if they were written there since the split began (the new shard's
 * moved set holds them, see common/split.c): such a twin is dropped, never
 * fired. Fills verdict[i]: 0 fire, 1 stale, 2 unknown (the new shard's node
 * did not answer: leave it leased; it is claimed and checked again later).
 */
void scanner_twins_check(lapse_scanner *s, const struct flight *fl, size_t n, char *verdict)
{
    enum { FIRE, STALE, UNKNOWN, ASKED }; /* ASKED: its SISMEMBER is in the pipeline */
    memset(verdict, FIRE, n);
    if (!s->layout.splitting || s->shard >= s->layout.prev_shards)
        return;
    uint32_t prev = s->layout.prev_shards;
    for (uint16_t node = 0; node < s->cfg->nnodes; node++) {
        lapse_redis *peer = NULL;
        size_t asked = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t h = lapse_hash(fl[i].id, fl[i].id_len);
            if (!(h & prev))
                continue; /* stays in this shard */
            uint32_t j = lapse_shard_of(h, s->layout.shards);
            if (s->layout.node_of[j] != node)
                continue;
            char key[KEY_MAX];
            size_t key_len = (size_t)lapse_key(key, sizeof key, s->cfg, LAPSE_KEY_MOVED, j);
            const char *argv[3] = {"SISMEMBER", key, fl[i].id};
            size_t argvlen[3] = {9, key_len, fl[i].id_len};
            verdict[i] = UNKNOWN; /* until an answer says otherwise */
            if (!peer && !(peer = twins_peer(s, node)))
                continue;
            /* only what went into the pipeline gets a reply: an append
             * that fails half-way through must not shift the answers */
            if (lapse_redis_append_argv(peer, 3, argv, argvlen) == 0)
                verdict[i] = ASKED, asked++;
        }
        for (size_t i = 0; i < n && asked > 0; i++) {
            if (verdict[i] != ASKED)
                continue;
            verdict[i] = UNKNOWN;
            asked--;
            redisReply *r;
            if (lapse_redis_get_reply(peer, &r) < 0) {
                scanner_redis_error(s, "split check", peer, NULL);
                asked = 0; /* the rest stay unknown */
                continue;
            }
            if (r->type == REDIS_REPLY_INTEGER)
                verdict[i] = r->integer ? STALE : FIRE;
            freeReplyObject(r);
        }
        for (size_t i = 0; i < n; i++) /* (after a failed read) */
            if (verdict[i] == ASKED)
                verdict[i] = UNKNOWN;
    }
}

/* Removes stale twins the claim leased (see scanner_twins_check). */
void scanner_twins_drop(lapse_scanner *s, const struct flight *fl, size_t n, const char *verdict,
                        const char *lease, size_t lease_len)
{
    const char *args[2 * 64];
    size_t lens[2 * 64];
    int m = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && verdict[i] == 1) {
            args[m] = fl[i].id, lens[m++] = fl[i].id_len;
            args[m] = lease, lens[m++] = lease_len;
        }
        if (m > 0 && (m == 2 * 64 || i == n)) {
            redisReply *r = scanner_eval(s, LAPSE_SCRIPT_DROP, args, lens, m);
            if (!r || r->type != REDIS_REPLY_INTEGER)
                scanner_redis_error(s, "drop", s->node, r);
            if (r)
                freeReplyObject(r);
            m = 0;
        }
    }
}

