/*
 * twins — what an old shard's scanner does during a split (the whole
 * protocol: docs/design.md, "Splits: how they stay exact").
 *
 * An ID claimed from old shard i that moves (layout.h: its new home is j,
 * i's pair) belongs to j now. If it was written in j since the split began (j's
 * moved set holds it), the copy in i is a stale twin: it is dropped, never
 * fired. Otherwise it fires from i as usual. When the shard's pair (the
 * one shard its IDs move to; in a merge, the shard it folds into) is on
 * the same server and not on a Cluster (where the pair's keys are in
 * another slot), claim.lua checks and drops them in the claim itself.
 * Otherwise the check is one pipelined call per new shard, a round trip
 * per node, for the whole claimed batch, and a drop call for the stale.
 */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "scanner_priv.h"

/* The connection to config node n, opened on first use; NULL if out of
 * memory. */
static lapse_redis *twins_peer(lapse_scanner *s, uint16_t n)
{
    if (!s->peers[n])
        s->peers[n] = lapse_node_open(s->cfg, n);
    return s->peers[n];
}

int scanner_twins_in_claim(lapse_scanner *s)
{
    const struct lapse_layout *l = &s->layout;
    if (!lapse_layout_gives(l, s->shard))
        return 0;
    uint32_t pair = lapse_layout_pair(l, s->shard);
    uint16_t node = l->node_of[s->shard];
    if (l->node_of[pair] != node || s->cfg->nodes[node].nseeds > 0)
        return 0; /* another server, or another slot: asked after the claim */
    lapse_key(s->pair_keys[0], LAPSE_KEY_MAX, s->cfg, LAPSE_KEY_DUE, pair);
    lapse_key(s->pair_keys[1], LAPSE_KEY_MAX, s->cfg, LAPSE_KEY_MOVED, pair);
    return 1;
}

/*
 * During a split, an old shard's claimed IDs that belong to a new shard are
 * stale if they were written there since the split began (the new shard's
 * split markers hold them, see tools/scale/split.c): such a twin is dropped,
 * never fired. Fills verdict[i]: 0 fire, 1 stale, 2 unknown (the new
 * shard's node did not answer: leave it leased; it is claimed and checked
 * again later).
 *
 * One moved.lua call per new shard, pipelined per node: the script finds
 * each ID's markers where its shard keeps them (one set, or the ID's bucket
 * in small keys, lib/bucket.lua).
 */
void scanner_twins_check(lapse_scanner *s, const struct flight *fl, size_t n, char *verdict)
{
    enum { FIRE, STALE, UNKNOWN };
    memset(verdict, FIRE, n);
    if (!lapse_layout_gives(&s->layout, s->shard) || n == 0)
        return;
    uint32_t *to = malloc(n * sizeof *to); /* each ID's new shard, or UINT32_MAX */
    const char **argv = malloc((n + 2) * sizeof *argv);
    size_t *lens = malloc((n + 2) * sizeof *lens);
    size_t *place = malloc(n * sizeof *place);
    uint32_t *asked = malloc(lapse_layout_span(&s->layout) * sizeof *asked); /* in the pipeline */
    if (!to || !argv || !lens || !place || !asked) {
        memset(verdict, UNKNOWN, n); /* checked again when claimed again */
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = lapse_hash(fl[i].id, fl[i].id_len);
        to[i] =
            lapse_layout_moves(&s->layout, h) ? lapse_layout_new_home(&s->layout, h) : UINT32_MAX;
        if (to[i] != UINT32_MAX)
            verdict[i] = UNKNOWN; /* until an answer says otherwise */
    }
    for (uint16_t node = 0; node < s->cfg->nnodes; node++) {
        lapse_redis *peer = NULL;
        size_t nasked = 0;
        for (uint32_t j = 0; j < lapse_layout_span(&s->layout); j++) {
            if (!lapse_layout_receives(&s->layout, j) || s->layout.node_of[j] != node)
                continue;
            char z[LAPSE_KEY_MAX], m[LAPSE_KEY_MAX];
            int argc = 2;
            lens[0] = (size_t)lapse_key(z, sizeof z, s->cfg, LAPSE_KEY_DUE, j);
            lens[1] = (size_t)lapse_key(m, sizeof m, s->cfg, LAPSE_KEY_MOVED, j);
            argv[0] = z, argv[1] = m;
            for (size_t i = 0; i < n; i++)
                if (to[i] == j)
                    argv[argc] = fl[i].id, lens[argc++] = fl[i].id_len;
            if (argc == 2)
                continue;
            if (!peer && !(peer = twins_peer(s, node)))
                break;
            /* only what went into the pipeline gets a reply */
            if (lapse_redis_append_eval(peer, LAPSE_SCRIPT_MOVED, 2, argc, argv, lens) == 0)
                asked[nasked++] = j;
        }
        for (size_t a = 0; a < nasked; a++) {
            redisReply *r;
            if (lapse_redis_get_reply(peer, &r) < 0) {
                scanner_redis_error(s, "split check", peer, NULL);
                break; /* the rest stay unknown */
            }
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (to[i] == asked[a])
                    place[k++] = i;
            if (r->type == REDIS_REPLY_ARRAY && r->elements == k) {
                for (size_t q = 0; q < k; q++)
                    if (r->element[q]->type == REDIS_REPLY_INTEGER)
                        verdict[place[q]] = r->element[q]->integer ? STALE : FIRE;
            } else {
                scanner_redis_error(s, "split check", peer, r);
            }
            freeReplyObject(r);
        }
    }
out:
    free(to);
    free(argv);
    free(lens);
    free(place);
    free(asked);
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
