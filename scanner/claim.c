/*
 * claim — taking due IDs from the shard (claim.lua), which renews the lock
 * on every call, and the claim sent ahead on a second connection while a
 * backlog drains. A claim's IDs become a batch here; dispatch.c sends each
 * one's event, twins.c sorts them during a split, lease.c takes a fence or
 * a changed layout. Calls go down from here, never back.
 *
 * Keeps invariants 1, 3 and 4 of scanner.c: "due" is claim.lua's verdict;
 * nothing is sent once the lock this claim renewed may have run out; no
 * claim takes more than scanner.max_inflight leaves room for.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "layout.h"
#include "log.h"
#include "metrics.h"
#include "redis.h"
#include "scanner_priv.h"

/* How many overdue (not fresh) IDs the catch-up budget allows now. */
static int scanner_backlog_budget(lapse_scanner *s, int want)
{
    int rate = s->cfg->scanner_catchup_rate;
    if (rate == 0)
        return want;
    int64_t now = lapse_clock_mono_ms();
    s->backlog_tokens += (double)(now - s->backlog_refill_ms) * rate / 1000.0;
    if (s->backlog_tokens > rate) /* at most one second of burst */
        s->backlog_tokens = rate;
    s->backlog_refill_ms = now;
    int budget = (int)s->backlog_tokens;
    return budget < want ? budget : want;
}

/* claim.lua's argv (keys, then arguments) for up to `want` IDs, the
 * numbers written into buf, and the keys of the shard's pair in a layout
 * change when twins.c says claim.lua may drop stale twins itself. Returns
 * argc; *nkeys, the keys' count. */
enum { CLAIM_NKEYS = LAPSE_SHARD_NKEYS + 1, CLAIM_ARGC = CLAIM_NKEYS + 2 + 6 };
static int scanner_claim_argv(lapse_scanner *s, int want, char buf[5][24], const char **argv,
                              size_t *argvlen, int *nkeys)
{
    snprintf(buf[0], 24, "%d", want);
    snprintf(buf[1], 24, "%d", s->cfg->scanner_lease_ms);
    snprintf(buf[2], 24, "%d", s->cfg->scanner_fresh_ms);
    snprintf(buf[3], 24, "%d", scanner_backlog_budget(s, want));
    snprintf(buf[4], 24, "%lld", (long long)s->layout.epoch);
    const char *args[6] = {s->token, buf[0], buf[1], buf[2], buf[3], buf[4]};
    for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
        argv[k] = s->keys[k], argvlen[k] = strlen(s->keys[k]);
    argv[LAPSE_SHARD_NKEYS] = s->lease_key, argvlen[LAPSE_SHARD_NKEYS] = strlen(s->lease_key);
    *nkeys = CLAIM_NKEYS;
    if (scanner_twins_in_claim(s)) {
        argv[CLAIM_NKEYS] = s->pair_keys[0], argvlen[CLAIM_NKEYS] = strlen(s->pair_keys[0]);
        argv[CLAIM_NKEYS + 1] = s->pair_keys[1], argvlen[CLAIM_NKEYS + 1] = strlen(s->pair_keys[1]);
        *nkeys += 2;
    }
    for (int i = 0; i < 6; i++)
        argv[*nkeys + i] = args[i], argvlen[*nkeys + i] = strlen(args[i]);
    return *nkeys + 6;
}

/*
 * A full claim (a backlog is draining): sends the next one now, on the
 * second connection, so Redis runs it while this one's events are encoded
 * and handed to Kafka; scanner_claim reads it next. A single scanner's loop
 * is otherwise serial (Redis idle while it sends, it idle while Redis
 * claims). Not during a split (twins.c calls the shard's node mid-claim)
 * nor with scanner.catchup_rate (whose budget this claim's backlog IDs have
 * not been charged to yet). Room for it is what max_inflight leaves after
 * this claim's `claimed`.
 */
static void scanner_claim_ahead(lapse_scanner *s, size_t claimed)
{
    size_t max = (size_t)s->cfg->scanner_max_inflight, busy = s->inflight + claimed;
    size_t room = busy < max ? max - busy : 0;
    if (room > (size_t)s->cfg->scanner_batch)
        room = (size_t)s->cfg->scanner_batch;
    if (room == 0 || s->no_ahead || lapse_layout_changing(&s->layout) ||
        s->cfg->scanner_catchup_rate)
        return;
    if (!s->ahead) {
        uint16_t n = s->layout.node_of[s->shard];
        s->ahead = lapse_node_open(s->cfg, n);
        if (!s->ahead)
            return;
    }
    char buf[5][24];
    const char *argv[CLAIM_ARGC];
    size_t argvlen[CLAIM_ARGC];
    int nkeys, argc = scanner_claim_argv(s, (int)room, buf, argv, argvlen, &nkeys);
    int64_t lock_until = lapse_clock_mono_ms() + s->cfg->scanner_lease_ms * 9 / 10;
    if (lapse_redis_append_eval(s->ahead, LAPSE_SCRIPT_CLAIM, nkeys, argc, argv, argvlen) < 0 ||
        lapse_redis_send(s->ahead) < 0)
        return; /* (the next claim goes the usual way) */
    s->ahead_pending = 1;
    s->ahead_want = (int)room;
    s->ahead_lock_until = lock_until;
}

/*
 * Lateness (lapse_scanner_lateness_seconds) measures the scanner, not the
 * writer's clock: a deadline already past when it was written ("@0", or
 * "@<an hour ago>") fires at once, and counting it from its deadline would
 * report the writer's choice as the scanner's delay. What the scanner knows
 * is when it last took every ID due below some deadline: after a claim
 * that left nothing due at Redis time T, every ID with a deadline up to T
 * had been claimed; after a full claim (oldest first, no catch-up cap) that
 * took deadlines up to D, every ID below D. An ID claimed later with a
 * deadline below that mark was written (or written back) after T: its
 * lateness counts from T, and lapse_scanner_written_past_due_total counts
 * it. IDs that genuinely waited count from their deadline: a backlog (the
 * mark stops where the due IDs begin), IDs back from an expired lease
 * (claim.lua lists them), and everything after this scanner took the shard
 * over or reconnected (the mark is cleared: what happened meanwhile is not
 * known), and every ID while a split runs (a twin moved in from its old
 * shard keeps the deadline it waited for there).
 */
static void scanner_seen(lapse_scanner *s, long long now, long long due_left, int full,
                         long long max_deadline)
{
    if (lapse_layout_changing(&s->layout)) {
        /* twins come in from old shards with the deadlines they waited
         * for there: no mark while a split runs, each counts in full */
        s->seen_below = 0;
        return;
    }
    if (due_left == 0 && now + 1 > s->seen_below) {
        s->seen_below = now + 1;
        s->seen_at = now;
    } else if (full && !s->cfg->scanner_catchup_rate && max_deadline > s->seen_below) {
        s->seen_below = max_deadline; /* (ties at D may be left) */
        s->seen_at = now;
    }
}

/*
 * claim.lua's reply, by name (the script's header says what each part is):
 * { now_ms, lease, next_ms, due_left, extras, claimed, returned }. Decoded
 * and checked here only; the rest of the scanner reads the fields.
 */
enum {
    CLAIM_NOW,      /* Redis time, ms */
    CLAIM_LEASE,    /* "<ms>.25": the claim's record field, its repeats' score */
    CLAIM_NEXT,     /* the lowest score left, -1: none */
    CLAIM_DUE_LEFT, /* due IDs left after the claim (the backlog) */
    CLAIM_EXTRAS,   /* { place, payload or nil, seq, ... } */
    CLAIM_IDS,      /* the claimed IDs and deadlines (scanner_claimed) */
    CLAIM_RETURNED, /* places of IDs back from an expired lease, ascending */
    CLAIM_PARTS
};
struct claim_reply {
    long long now, next, due_left;
    const redisReply *lease, *extras, *ids, *returned; /* inside the reply */
    long count;                                        /* IDs claimed */
};

/* Decodes r into c. Returns 0, or -1 when r is not a claim's reply (c is
 * then left as it was, in part). */
static int claim_decode(const redisReply *r, struct claim_reply *c)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != CLAIM_PARTS)
        return -1;
    redisReply *const *e = r->element;
    if (e[CLAIM_NOW]->type != REDIS_REPLY_INTEGER || e[CLAIM_LEASE]->type != REDIS_REPLY_STRING ||
        e[CLAIM_NEXT]->type != REDIS_REPLY_INTEGER ||
        e[CLAIM_DUE_LEFT]->type != REDIS_REPLY_INTEGER ||
        e[CLAIM_EXTRAS]->type != REDIS_REPLY_ARRAY || e[CLAIM_EXTRAS]->elements % 3 != 0 ||
        e[CLAIM_RETURNED]->type != REDIS_REPLY_ARRAY)
        return -1;
    const redisReply *x = e[CLAIM_EXTRAS];
    for (size_t i = 0; i < x->elements; i += 3)
        if (x->element[i]->type != REDIS_REPLY_INTEGER ||
            (x->element[i + 1]->type != REDIS_REPLY_STRING &&
             x->element[i + 1]->type != REDIS_REPLY_NIL) ||
            x->element[i + 2]->type != REDIS_REPLY_INTEGER)
            return -1;
    for (size_t i = 0; i < e[CLAIM_RETURNED]->elements; i++)
        if (e[CLAIM_RETURNED]->element[i]->type != REDIS_REPLY_INTEGER)
            return -1;
    c->count = scanner_claimed(e[CLAIM_IDS], NULL, NULL);
    if (c->count < 0)
        return -1;
    c->now = e[CLAIM_NOW]->integer;
    c->lease = e[CLAIM_LEASE];
    c->next = e[CLAIM_NEXT]->integer;
    c->due_left = e[CLAIM_DUE_LEFT]->integer;
    c->extras = x;
    c->ids = e[CLAIM_IDS];
    c->returned = e[CLAIM_RETURNED];
    return 0;
}

/*
 * Claims (renewing the lock) and dispatches up to `want` due IDs, or takes
 * the reply of the claim sent ahead (then `want` is that claim's). Returns
 * how long the loop may wait before claiming again: 0 when the batch was
 * full (more are due), else the time to the next deadline, at most
 * scanner.poll_ms; -1 when fenced.
 */
int scanner_claim(lapse_scanner *s, int want)
{
    int poll_ms = s->cfg->scanner_poll_ms;
    int folded = 0; /* claim.lua dropped this claim's stale twins itself */
    int64_t lock_until;
    redisReply *r;
    if (s->ahead_pending) {
        s->ahead_pending = 0;
        want = s->ahead_want;
        lock_until = s->ahead_lock_until;
        if (lapse_redis_get_reply(s->ahead, &r) < 0)
            return 0; /* (its IDs, if any, are claimed again when their leases run out) */
        if (lapse_redis_noscript(s->ahead, r)) {
            freeReplyObject(r); /* Redis lost its scripts: the usual way loads them */
            return 0;
        }
    } else {
        char buf[5][24];
        const char *argv[CLAIM_ARGC];
        size_t argvlen[CLAIM_ARGC];
        int nkeys, argc = scanner_claim_argv(s, want, buf, argv, argvlen, &nkeys);
        /* The lock this claim renews lives 90 % of the lease from (at the
         * latest) now: past that, another scanner may own the shard, so
         * what is left of the batch is not sent (a pause, e.g. SIGSTOP,
         * mid-batch). */
        lock_until = lapse_clock_mono_ms() + s->cfg->scanner_lease_ms * 9 / 10;
        r = lapse_redis_eval(s->node, LAPSE_SCRIPT_CLAIM, nkeys, argc, argv, argvlen);
        folded = nkeys > CLAIM_NKEYS;
        METRIC_SET(s, redis_up, r != NULL);
    }
    enum lapse_fence fence = lapse_script_fence(r, NULL);
    if (fence != LAPSE_FENCE_NONE) {
        freeReplyObject(r);
        if (fence == LAPSE_FENCE_LOCK) {
            scanner_fenced(s);
            return -1;
        }
        /* the layout changed under us. Right after a fence the new
         * layout may not be published yet: then wait a little. */
        int64_t was = s->layout.epoch;
        scanner_reload(s);
        if (s->layout.epoch != was)
            return 0;
        lapse_log_limited(&s->lim_redis, 1, LAPSE_LOG_WARN,
                          "shard %u: fenced at a layout newer than epoch %lld that is not "
                          "published: an interrupted split or finish? (lapse-scale status)",
                          s->shard, (long long)was);
        return poll_ms;
    }
    struct claim_reply c;
    if (claim_decode(r, &c) < 0) {
        scanner_redis_error(s, "claim", s->node, r);
        if (r)
            freeReplyObject(r);
        int wait = lapse_redis_backoff_ms(s->node);
        return wait > poll_ms ? wait : poll_ms;
    }
    long long now = c.now, next = c.next;
    const redisReply *lease = c.lease;
    size_t claimed = c.count;
    long long due_left = c.due_left, max_deadline = LLONG_MIN;
    if (claimed >= (size_t)want && want > 0 && s->active)
        scanner_claim_ahead(s, claimed);
    /* the batch keeps the reply: the flights' IDs live in it */
    struct batch *b =
        claimed ? malloc(sizeof *b + claimed * (sizeof(struct flight) + sizeof(long long) + 1))
                : NULL;
    if (!b) {
        freeReplyObject(r);
        if (claimed)
            return poll_ms; /* the leases run out; claimed again later */
    } else {
        struct flight *fl = (struct flight *)(b + 1);
        long long *deadlines = (long long *)(fl + claimed);
        char *verdict = (char *)(deadlines + claimed);
        *b = (struct batch){
            .reply = r, .lease = lease, .term = s->term, .refs = claimed + 1, .claimed = claimed};
        for (size_t i = 0; i < claimed; i++)
            fl[i] = (struct flight){.batch = b};
        scanner_claimed(c.ids, fl, deadlines);
        if (folded) {
            memset(verdict, 0, claimed);
        } else {
            scanner_twins_check(s, fl, claimed, verdict);
            scanner_twins_drop(s, fl, claimed, verdict, lease->str, lease->len);
        }
        const redisReply *extras = c.extras, *returned = c.returned;
        size_t x = 0, y = 0; /* the next (k, payload, seq); the next place returned */
        int old_taken = 0;
        long long seen_below = s->seen_below, seen_at = s->seen_at;
        for (size_t i = 0; i < claimed; i++) {
            const redisReply *payload = NULL;
            long long seq = 0;
            if (x < extras->elements && extras->element[x]->integer == (long long)i + 1) {
                payload = extras->element[x + 1];
                seq = extras->element[x + 2]->integer;
                x += 3;
            }
            int back = y < returned->elements && returned->element[y]->integer == (long long)i + 1;
            y += back;
            long long deadline = deadlines[i];
            /* written already past due (scanner_seen): lateness counts from
             * when this scanner could first have seen it */
            long long since = !back && deadline < seen_below ? seen_at : deadline;
            if (!back && deadline > max_deadline)
                max_deadline = deadline;
            if (deadline <= now - s->cfg->scanner_fresh_ms)
                old_taken++;
            /* not sent (a stale twin; the lock may have expired; Kafka
             * refused it): it stays leased and is sent later, by whoever
             * holds the lock then */
            if (verdict[i] != 0 || lapse_clock_mono_ms() >= lock_until ||
                scanner_dispatch(s, &fl[i], deadline, since, payload, seq) < 0)
                b->refs--;
            else if (since != deadline)
                METRIC_INC(s, written_past_due);
        }
        scanner_batch_unref(b, 1); /* the hold of the loop above */
        if (s->cfg->scanner_catchup_rate)
            s->backlog_tokens -= old_taken;
    }
    scanner_seen(s, now, due_left, claimed == (size_t)want && want > 0, max_deadline);
    METRIC_ADD(s, claimed, claimed);
    METRIC_SET(s, due, due_left);
    METRIC_SET(s, oldest_overdue_ms, next >= 0 && next <= now ? now - next : 0);
    if (claimed >= (size_t)want && want > 0)
        return 0;
    if (due_left > 0 && s->cfg->scanner_catchup_rate) { /* held back: wait for budget */
        int step = 1000 / s->cfg->scanner_catchup_rate + 1;
        return step < poll_ms ? step : poll_ms;
    }
    if (next < 0 || next - now > poll_ms)
        return poll_ms;
    return next > now ? (int)(next - now) : 0;
}
