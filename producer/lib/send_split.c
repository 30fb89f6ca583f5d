/*
 * send_split — what the replies of a split's calls say about the moving
 * IDs (send.c has the protocol: take in the old shard i, seed and apply in
 * the new shard j with its moved set m_j, drop in i), written into the ops
 * for the next step, and the moved-ID cache those replies fill.
 *
 * It does no I/O: send_pipe.c reads the replies and hands each one here. It
 * caches an ID only when no twin of it in i can fire again (below). The
 * cache's memory comes and goes with the shard key names (send_plan.c:
 * producer_load_layout).
 *
 * Moved-ID cache: take, the moving ops of apply (with m_j) and drop are
 * needed only until an ID has settled in j; a watchdog resets the same
 * IDs over and over, so the producer remembers, for the split's layout
 * epoch, the IDs it saw settle, and later writes them in j as plain ops (no
 * take, no drop, apply's variadic fast path; a batch with no other moving
 * ID goes out pipelined, as outside a split: producer_send_start). Settled means that no twin in
 * i can fire again, whatever anyone does next:
 *   - take said "a": i holds nothing for the ID, and nothing can put it back:
 *     writers with this layout write it in j, writers with an older one are
 *     refused (STALE), a scanner only re-arms an ID it claimed, and a claimed
 *     twin would have been "b";
 *   - "t" and the seed call succeeded, or "b" and the op was a touch, repeat
 *     or cancel (these always change the ID): the ID is in m_j until the
 *     split ends (only finish deletes m_j, with a new epoch), so i's scanner
 *     drops any twin left there (our lease running out after a failed drop,
 *     a repeat re-armed when its fire was acknowledged).
 * An extend over a busy twin may change nothing, so the ID may be missing
 * from m_j: it is not cached. A plain write in j does not add the ID to m_j;
 * m_j only tells i's scanner about twins, and a settled ID has none that
 * can fire. Seed only copies twins that take leased, which a settled ID
 * cannot have. The cache compares ID bytes (exact), is emptied when the
 * layout's epoch changes (finish, the next split) and freed when the split
 * ends; it holds at most MOVED_MAX IDs (producer_priv.h: 8 MiB of address
 * space, touched as it fills) and then stops learning: the IDs it holds
 * keep the fast path, the others take the long way. A restarted producer,
 * or another one, starts with nothing cached: take answers "a" (or "b"/"t"
 * as above) and all is as without the cache.
 */
#include <stdint.h>
#include <string.h>

#include "producer_priv.h"

/* The cache slot of the ID: the one holding it, or the empty one where it
 * goes. The table is never more than half full, so one is found. */
static struct moved_slot *send_moved_slot(struct producer_routes *rt, uint64_t hash, const char *id,
                                          size_t len)
{
    /* the high bits: moving IDs share their low bits (shard bits) */
    size_t mask = MOVED_SLOTS - 1;
    for (size_t i = (size_t)((hash * 0x9e3779b97f4a7c15u) >> 40) & mask;; i = (i + 1) & mask) {
        struct moved_slot *m = &rt->moved[i];
        if (m->len == 0 ||
            (m->hash == hash && m->len == len && memcmp(rt->moved_ids + m->off, id, len) == 0))
            return m;
    }
}

/* 1 if the op's ID is known to have settled in its new shard (see the top). */
int send_moved(lapse_producer *p, const struct producer_op *op)
{
    return p->keys->moved &&
           send_moved_slot(p->keys, op->hash, p->arena + op->id_off, op->id_len)->len != 0;
}

/* Remembers that the op's ID settled in its new shard; a full cache stays as
 * it is (the ID keeps taking the long way). */
static void send_moved_add(lapse_producer *p, const struct producer_op *op)
{
    struct producer_routes *rt = p->keys;
    if (!rt->moved || rt->moved_n >= MOVED_MAX || op->id_len > MOVED_BYTES - rt->moved_len)
        return;
    const char *id = p->arena + op->id_off;
    struct moved_slot *m = send_moved_slot(rt, op->hash, id, op->id_len);
    if (m->len)
        return;
    memcpy(rt->moved_ids + rt->moved_len, id, op->id_len);
    *m = (struct moved_slot){op->hash, (uint32_t)rt->moved_len, (uint32_t)op->id_len};
    rt->moved_len += op->id_len;
    rt->moved_n++;
}

/* Reads take.lua's answer into the call's ops. */
int send_took(struct send *s, const struct send_call *c, const redisReply *r)
{
    lapse_producer *p = s->p;
    if (lapse_take_check(r, c->count) < 0)
        return SEND_RETRY;
    const redisReply *lease = lapse_take_lease(r);
    for (size_t i = 0; i < c->count; i++) {
        struct producer_op *op = &p->ops[c->ops[i]];
        struct lapse_twin t;
        lapse_take_twin(r, i, &t);
        op->twin = t.state;
        op->twin_deadline = t.deadline;
        op->inherit_len = 0;
        /* kept as a tag and the record: drop.lua's "o" (an op that keeps
         * it) or "f" (a cancel or repeat, which forget it). One that forgets
         * always tells drop, record or not: take answers none for a busy
         * record (a timeout in flight there, which a write here brought
         * back), and the ack would queue its recovered event */
        op->has_watch = t.has_watch || send_forgets(op);
        op->watch_len = op->has_watch ? 1 + t.watch_len : 0;
        if (op->has_watch) {
            size_t rest;
            if (producer_arena_put(p, send_forgets(op) ? "f" : "o", 1, &op->watch_off) < 0 ||
                (t.has_watch && producer_arena_put(p, t.watch, t.watch_len, &rest) < 0))
                return SEND_RETRY;
        }
        if (op->twin == LAPSE_TAKE_BUSY && t.has_payload) {
            size_t rest;
            if (producer_arena_put(p, "1", 1, &op->inherit_off) < 0 ||
                producer_arena_put(p, t.payload, t.payload_len, &rest) < 0)
                return SEND_RETRY;
            op->inherit_len = 1 + t.payload_len;
        }
        if (op->twin != LAPSE_TAKE_TAKEN)
            continue;
        op->twin_has_pl = t.has_payload;
        op->twin_pl_len = t.payload_len;
        op->twin_rep_len = t.repeat_len;
        op->lease_len = lease->len;
        if ((op->twin_has_pl &&
             producer_arena_put(p, t.payload, t.payload_len, &op->twin_pl_off) < 0) ||
            (op->twin_rep_len &&
             producer_arena_put(p, t.repeat, t.repeat_len, &op->twin_rep_off) < 0) ||
            producer_arena_put(p, lease->str, lease->len, &op->lease_off) < 0)
            return SEND_RETRY;
    }
    return SEND_OK;
}

/* A seed call failed (it may have copied some twins, or none): its twins
 * are neither dropped nor cached; our lease on them runs out and the old
 * shard's scanner decides (fire, or drop if the ID is in m_j). */
void send_unseeded(struct send *s, const struct send_call *c)
{
    for (size_t i = 0; i < c->count; i++)
        s->p->ops[c->ops[i]].twin = SEND_TWIN_UNSEEDED;
}

/* An apply call succeeded (its "M ?" flags: lapse_apply_read): remember its moving IDs that settled
 * in their new shard (see the top): no twin (ABSENT), a twin copied by a
 * seed that succeeded (TAKEN), or a busy twin and an op that always changes
 * the ID, so it is in m_j (BUSY and not an extend). Their seeds came earlier
 * in the same node's pipeline, so a failed one already said UNSEEDED. For local ops
 * apply.lua judged the same and answered a flag per op, in their order. */
void send_settled(struct send *s, const struct send_call *c, const char *flags, size_t nflags)
{
    size_t f = 0;
    for (size_t i = 0; i < c->count; i++) {
        const struct producer_op *op = &s->p->ops[c->ops[i]];
        if (op->local) {
            if (f < nflags && flags[f++] == '1')
                send_moved_add(s->p, op);
        } else if (op->moving && (op->twin == LAPSE_TAKE_ABSENT || op->twin == LAPSE_TAKE_TAKEN ||
                                  (op->twin == LAPSE_TAKE_BUSY && op->op != LAPSE_APPLY_EXTEND)))
            send_moved_add(s->p, op);
    }
}
