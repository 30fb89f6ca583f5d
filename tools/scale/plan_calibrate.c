/*
 * plan_calibrate — see plan_calibrate.h. Every loop is bounded by its count
 * and by the run's deadline (LAPSE_PLAN_CALIBRATE_MAX_MS); the scratch
 * keys are found by SCAN of the scratch namespace's prefix and deleted by
 * UNLINK, whatever happened before.
 */
#include "plan_calibrate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "layout.h"
#include "plan_fit.h"
#include "producer.h"
#include "script.h"
#include "stop.h"

#define CAL_CLAIMS 1000    /* IDs falling due one a ms: a claim's own cost */
#define CAL_PAYLOAD 32     /* the payload the payload phase stores */
#define CAL_REF_PIPE 1000  /* ZADDs a round trip in the reference */
#define CAL_REF_IDS 100000 /* ZADDs in the reference, into one zset */

struct cal {
    const struct lapse_config *cfg;
    struct lapse_config scratch; /* cfg with the scratch namespace, its first node only */
    char ns[LAPSE_NS_MAX + 1];
    lapse_redis *node;
    int id_bytes;
    int64_t deadline_ms;                             /* monotonic: the run gives up past it */
    char token[64];                                  /* the scratch shard's lock holder */
    char keys[LAPSE_SHARD_NKEYS + 1][LAPSE_KEY_MAX]; /* the shard's keys, its lease key */
    char epoch[24];
    long failed; /* operations the producer reported not applied */
    long top;    /* the one-zset form's larger set: CAL_TOP, less on a node short of memory */
    char *err;
    size_t errsize;
};

static int cal_fail(struct cal *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cal_fail(struct cal *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errsize, fmt, ap);
    va_end(ap);
    return -1;
}

/* -1 with errstr when stopped or past the deadline, else 0. */
static int cal_check(struct cal *c)
{
    if (lapse_stop)
        return cal_fail(c, "interrupted");
    if (lapse_clock_mono_ms() > c->deadline_ms)
        return cal_fail(c, "calibration: still running after %d s (is Redis busy or slow?)",
                        LAPSE_PLAN_CALIBRATE_MAX_MS / 1000);
    return 0;
}

/* A reply that is not an error, or NULL with errstr set (what: the step). */
static redisReply *cal_reply(struct cal *c, redisReply *r, const char *what)
{
    if (r && r->type != REDIS_REPLY_ERROR)
        return r;
    cal_fail(c, "calibration: %s: %s", what, r ? r->str : lapse_redis_errstr(c->node));
    if (r)
        freeReplyObject(r);
    return NULL;
}

/* INFO `section`'s numeric fields f1 (+ f2 when given) into *out. */
static int cal_info(struct cal *c, const char *section, const char *f1, const char *f2, double *out)
{
    redisReply *r = cal_reply(c, lapse_redis_command(c->node, "INFO %s", section), "INFO");
    if (!r)
        return -1;
    double sum = 0;
    int found = 0;
    const char *want[2] = {f1, f2};
    for (int k = 0; k < 2 && want[k]; k++) {
        size_t n = strlen(want[k]);
        for (const char *p = r->type == REDIS_REPLY_STRING ? r->str : ""; p && *p;
             p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
            if (strncmp(p, want[k], n) == 0 && p[n] == ':') {
                sum += strtod(p + n + 1, NULL);
                found++;
                break;
            }
        }
    }
    freeReplyObject(r);
    if (found != (f2 ? 2 : 1))
        return cal_fail(c, "calibration: INFO %s has no %s", section, f1);
    *out = sum;
    return 0;
}

/* A phase's start or end: Redis CPU s and used_memory. */
struct cal_mark {
    double cpu, mem;
};
static int cal_mark(struct cal *c, struct cal_mark *m)
{
    return cal_info(c, "cpu", "used_cpu_user", "used_cpu_sys", &m->cpu) < 0 ||
                   cal_info(c, "memory", "used_memory", NULL, &m->mem) < 0
               ? -1
               : 0;
}

/* The shard clock, ms. */
static int cal_now(struct cal *c, int64_t *now)
{
    redisReply *r = cal_reply(c, lapse_redis_command(c->node, "TIME"), "TIME");
    if (!r)
        return -1;
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 2;
    if (ok)
        *now = strtoll(r->element[0]->str, NULL, 10) * 1000 +
               strtoll(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    return ok ? 0 : cal_fail(c, "calibration: TIME: an unexpected reply");
}

/* ID number i as id_bytes bytes: base-36 digits, left-padded with 'p'. */
static void cal_id(const struct cal *c, long i, char *buf)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    memset(buf, 'p', (size_t)c->id_bytes);
    buf[c->id_bytes] = '\0';
    for (int k = c->id_bytes - 1; k >= 0 && i > 0; k--, i /= 36)
        buf[k] = digits[i % 36];
}

static void cal_on_error(void *ctx, uint64_t tag, const char *reason)
{
    struct cal *c = ctx;
    (void)tag;
    if (c->failed++ == 0)
        snprintf(c->err, c->errsize, "calibration: a write was not applied: %s", reason);
}

enum cal_op { CAL_TOUCH, CAL_EXTEND, CAL_CANCEL };

/* Writes `count` IDs through the producer library: first, first + stride,
 * ..., the j-th write's deadline base + j (later each write, as time
 * goes), with a CAL_PAYLOAD-byte payload when payload; with `grow`, a
 * claim of nothing after each batch (as the shard's scanner would call one
 * meanwhile: in small keys it splits the buckets that filled). `order`:
 *   CAL_IN_ORDER   as said;
 *   CAL_SHUFFLED   the IDs in a scrambled order (as devices call: a reset's
 *                  ID sits anywhere in the set, and finding it there costs
 *                  Redis cache misses that an ID next to the last one's
 *                  does not);
 *   CAL_SCATTERED  the IDs in order, their deadlines scrambled: the set's
 *                  order by deadline is not the order its entries were
 *                  allocated in, as in a set whose IDs have moved for a
 *                  while. A set written with rising deadlines lies in
 *                  memory in its own order, and a write that walks it costs
 *                  less there than in any set that has lived: bench-plan's
 *                  extends, after its resets had moved every ID once, cost
 *                  1.3 times what they cost on the set fresh from its writes
 *                  (docs/benchmarks.md). */
#define CAL_PRIME 1000003L /* a prime above every count: j -> j * CAL_PRIME % count permutes */
enum cal_order { CAL_IN_ORDER, CAL_SHUFFLED, CAL_SCATTERED };
static int cal_claim(struct cal *c, int batch, int *took);
static int cal_lock(struct cal *c);
static int cal_write(struct cal *c, lapse_producer *p, enum cal_op op, long first, long count,
                     long stride, enum cal_order order, int64_t base, int payload, int grow)
{
    char id[600], pl[CAL_PAYLOAD], e[256];
    memset(pl, 'x', sizeof pl);
    long chunk = c->cfg->producer_batch > 0 ? c->cfg->producer_batch : 1000;
    for (long j = 0; j < count; j++) {
        long k = (long)((long long)j * CAL_PRIME % count);
        long i = first + (order == CAL_SHUFFLED ? k : j) * stride;
        int64_t at = base + (order == CAL_SCATTERED ? k : j);
        cal_id(c, i, id);
        int rc = op == CAL_CANCEL
                     ? lapse_producer_cancel(p, id, (size_t)c->id_bytes, (uint64_t)i, e, sizeof e)
                     : (op == CAL_TOUCH ? lapse_producer_touch : lapse_producer_extend)(
                           p, id, (size_t)c->id_bytes, LAPSE_WHEN_ABS, at, payload ? pl : NULL,
                           payload ? sizeof pl : 0, (uint64_t)i, e, sizeof e);
        if (rc < 0)
            return c->failed ? -1 : cal_fail(c, "calibration: a write failed: %s", e);
        if ((j + 1) % chunk == 0 || j + 1 == count) {
            if (lapse_producer_flush(p, e, sizeof e) < 0)
                return c->failed ? -1 : cal_fail(c, "calibration: a write failed: %s", e);
            int took;
            for (int k2 = 0; grow && k2 < 2; k2++)
                if (cal_claim(c, 1, &took) < 0)
                    return -1;
            if (cal_check(c) < 0)
                return -1;
        }
    }
    return c->failed ? -1 : 0;
}

/* claim.lua as a scanner calls it (scanner/claim.c) for up to `batch` IDs,
 * then ack.lua for the whole claim (scanner/ack.c), as once Kafka took all
 * of its events. *took: 1 when it claimed any. */
static int cal_claim(struct cal *c, int batch, int *took)
{
    char b[24], lease_ms[24], fresh[24];
    snprintf(b, sizeof b, "%d", batch);
    snprintf(lease_ms, sizeof lease_ms, "%d", c->cfg->scanner_lease_ms);
    snprintf(fresh, sizeof fresh, "%d", c->cfg->scanner_fresh_ms);
    enum { NK = LAPSE_SHARD_NKEYS + 1 };
    const char *argv[NK + 6];
    size_t len[NK + 6];
    for (int k = 0; k < NK; k++)
        argv[k] = c->keys[k], len[k] = strlen(c->keys[k]);
    const char *args[6] = {c->token, b, lease_ms, fresh, b, c->epoch};
    for (int i = 0; i < 6; i++)
        argv[NK + i] = args[i], len[NK + i] = strlen(args[i]);
    redisReply *r =
        cal_reply(c, lapse_redis_eval(c->node, LAPSE_SCRIPT_CLAIM, NK, NK + 6, argv, len), "claim");
    if (!r)
        return -1;
    /* claim.lua's reply: { now, lease, next, due_left, extras, claimed, returned } */
    enum { C_LEASE = 1, C_IDS = 5, C_PARTS = 7 };
    if (r->type != REDIS_REPLY_ARRAY || r->elements != C_PARTS ||
        r->element[C_LEASE]->type != REDIS_REPLY_STRING ||
        r->element[C_IDS]->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return cal_fail(c, "calibration: claim: an unexpected reply");
    }
    *took = r->element[C_IDS]->len > 0;
    int rc = 0;
    if (*took) {
        /* (the count after the lease only sets ack's reply: -1 says "the
         * whole claim", as a scanner's -n does) */
        const char *aargv[LAPSE_SHARD_NKEYS + 3];
        size_t alen[LAPSE_SHARD_NKEYS + 3];
        for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
            aargv[k] = c->keys[k], alen[k] = strlen(c->keys[k]);
        aargv[LAPSE_SHARD_NKEYS] = c->token, alen[LAPSE_SHARD_NKEYS] = strlen(c->token);
        aargv[LAPSE_SHARD_NKEYS + 1] = r->element[C_LEASE]->str;
        alen[LAPSE_SHARD_NKEYS + 1] = r->element[C_LEASE]->len;
        aargv[LAPSE_SHARD_NKEYS + 2] = "-1", alen[LAPSE_SHARD_NKEYS + 2] = 2;
        redisReply *a = cal_reply(c,
                                  lapse_redis_eval(c->node, LAPSE_SCRIPT_ACK, LAPSE_SHARD_NKEYS,
                                                   LAPSE_SHARD_NKEYS + 3, aargv, alen),
                                  "ack");
        rc = a ? 0 : -1;
        if (a)
            freeReplyObject(a);
    }
    freeReplyObject(r);
    return rc;
}

/* Claims and acknowledges until nothing is due, batch IDs a claim, at most
 * max_claims claims. */
static int cal_fire(struct cal *c, int batch, long max_claims)
{
    int took = 1;
    for (long k = 0; took && k < max_claims; k++)
        if (cal_claim(c, batch, &took) < 0 || cal_check(c) < 0)
            return -1;
    return took ? cal_fail(c, "calibration: IDs still due after %ld claims", max_claims) : 0;
}

/* A busy shard's steady state: `n` IDs falling due one a ms from 200 ms
 * on, claimed as they fall due, each claim acknowledged whole; after an
 * empty claim the loop waits a ms (a scanner waits for the next
 * deadline). *claims: the claims that took IDs. */
static int cal_steady(struct cal *c, lapse_producer *p, long from, long n, long *claims)
{
    int64_t now;
    if (cal_now(c, &now) < 0 ||
        cal_write(c, p, CAL_TOUCH, from, n, 1, CAL_IN_ORDER, now + 200, 0, 0) < 0 ||
        cal_lock(c) < 0)
        return -1;
    int64_t end = lapse_clock_mono_ms() + 200 + n + 300;
    int batch = c->cfg->scanner_batch > 0 ? c->cfg->scanner_batch : 500, took;
    *claims = 0;
    while (lapse_clock_mono_ms() < end) {
        if (cal_claim(c, batch, &took) < 0 || cal_check(c) < 0)
            return -1;
        *claims += took;
        if (!took)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return 0;
}

/* Takes the scratch shard's lock as a scanner does (acquire.lua), or
 * finds it still ours: before each phase that claims, since the writes
 * before it may have outlasted the lock's PX (no claim renewed it). */
static int cal_lock(struct cal *c)
{
    char lease[24];
    snprintf(lease, sizeof lease, "%d", c->cfg->scanner_lease_ms);
    const char *argv[LAPSE_SHARD_NKEYS + 2];
    size_t len[LAPSE_SHARD_NKEYS + 2];
    for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
        argv[k] = c->keys[k], len[k] = strlen(c->keys[k]);
    argv[LAPSE_SHARD_NKEYS] = c->token, len[LAPSE_SHARD_NKEYS] = strlen(c->token);
    argv[LAPSE_SHARD_NKEYS + 1] = lease, len[LAPSE_SHARD_NKEYS + 1] = strlen(lease);
    redisReply *r = cal_reply(c,
                              lapse_redis_eval(c->node, LAPSE_SCRIPT_ACQUIRE, LAPSE_SHARD_NKEYS,
                                               LAPSE_SHARD_NKEYS + 2, argv, len),
                              "acquire");
    if (!r)
        return -1;
    /* acquire.lua: { 1, recovered } ours now, or { 0, holder } (ours
     * still, when the holder is our token) */
    int got = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
              r->element[0]->type == REDIS_REPLY_INTEGER &&
              (r->element[0]->integer == 1 || (r->element[1]->type == REDIS_REPLY_STRING &&
                                               strcmp(r->element[1]->str, c->token) == 0));
    freeReplyObject(r);
    return got ? 0 : cal_fail(c, "calibration: the scratch shard's lock is held by another");
}

/* The scratch namespace's layout (one shard in `form`), its keys, and its
 * lock taken as a scanner takes it. */
static int cal_shard(struct cal *c, int form)
{
    char e[512];
    const struct lapse_config *s = &c->scratch;
    if (lapse_layout_init(c->node, s, 1, form ? LAPSE_INIT_CONVERT : LAPSE_INIT_ONE_ZSET, e,
                          sizeof e) < 0)
        return cal_fail(c, "calibration: init: %s", e);
    struct lapse_layout l = {0};
    if (lapse_layout_load(c->node, s, &l, e, sizeof e) != 0)
        return cal_fail(c, "calibration: layout: %s", e);
    int rc = form ? lapse_layout_small_keys(&c->node, s, &l, 0, e, sizeof e) : 0;
    snprintf(c->epoch, sizeof c->epoch, "%lld", (long long)l.epoch);
    lapse_layout_free(&l);
    if (rc < 0)
        return cal_fail(c, "calibration: small keys: %s", e);
    for (int k = 0; k < LAPSE_SHARD_NKEYS; k++)
        lapse_key(c->keys[k], LAPSE_KEY_MAX, s, lapse_shard_keys[k], 0);
    lapse_key(c->keys[LAPSE_SHARD_NKEYS], LAPSE_KEY_MAX, s, LAPSE_KEY_LEASE, 0);
    return cal_lock(c);
}

/* Deletes every key of the scratch namespace (SCAN of its prefix, UNLINK),
 * at most `rounds` SCAN calls. 0, or -1 (errstr, unless it holds a reason
 * already) when keys may be left. */
static int cal_clean(struct cal *c, int had_error)
{
    char pattern[LAPSE_NS_MAX + 8];
    snprintf(pattern, sizeof pattern, "%s:*", c->ns);
    char cursor[32] = "0";
    int64_t until = lapse_clock_mono_ms() + 30000;
    lapse_redis_ensure(c->node);
    do {
        redisReply *r =
            lapse_redis_command(c->node, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (!had_error)
                cal_fail(c,
                         "calibration: keys of namespace %s may be left (SCAN: %s); delete "
                         "them with redis-cli --scan --pattern '%s' | xargs redis-cli unlink",
                         c->ns,
                         r && r->type == REDIS_REPLY_ERROR ? r->str : lapse_redis_errstr(c->node),
                         pattern);
            if (r)
                freeReplyObject(r);
            return -1;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        redisReply *keys = r->element[1];
        if (keys->elements > 0) {
            const char **argv = malloc((keys->elements + 1) * sizeof *argv);
            size_t *len = malloc((keys->elements + 1) * sizeof *len);
            if (argv && len) {
                argv[0] = "UNLINK", len[0] = 6;
                for (size_t i = 0; i < keys->elements; i++)
                    argv[i + 1] = keys->element[i]->str, len[i + 1] = keys->element[i]->len;
                redisReply *u =
                    lapse_redis_command_argv(c->node, (int)keys->elements + 1, argv, len);
                if (u)
                    freeReplyObject(u);
            }
            free(argv);
            free(len);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0 && lapse_clock_mono_ms() < until);
    /* UNLINK frees big keys in the background: the next phase's memory
     * delta must not see them go */
    double pending = 1;
    while (!had_error && strcmp(cursor, "0") == 0 && pending > 0 && lapse_clock_mono_ms() < until) {
        if (cal_info(c, "memory", "lazyfree_pending_objects", NULL, &pending) < 0)
            return -1;
        if (pending > 0)
            nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    if (strcmp(cursor, "0") != 0 && !had_error)
        return cal_fail(c,
                        "calibration: keys of namespace %s may be left (cleaning took "
                        "over 30 s)",
                        c->ns);
    return strcmp(cursor, "0") == 0 ? 0 : -1;
}

/* The reference: n IDs as plain ZADDs, CAL_REF_PIPE a round trip, into one
 * scratch zset. Its cost per ZADD into *us. */
static int cal_reference(struct cal *c, long n, int64_t base, double *us)
{
    char key[LAPSE_NS_MAX + 8], score[24], id[600];
    snprintf(key, sizeof key, "%s:ref", c->ns);
    struct cal_mark a, b;
    if (cal_mark(c, &a) < 0)
        return -1;
    for (long i = 0; i < n; i += CAL_REF_PIPE) {
        long m = n - i < CAL_REF_PIPE ? n - i : CAL_REF_PIPE;
        for (long k = 0; k < m; k++) {
            cal_id(c, i + k, id);
            snprintf(score, sizeof score, "%lld", (long long)(base + i + k));
            const char *argv[4] = {"ZADD", key, score, id};
            size_t len[4] = {4, strlen(key), strlen(score), (size_t)c->id_bytes};
            if (lapse_redis_append_argv(c->node, 4, argv, len) < 0)
                return cal_fail(c, "calibration: ZADD: %s", lapse_redis_errstr(c->node));
        }
        for (long k = 0; k < m; k++) {
            redisReply *r = NULL;
            if (lapse_redis_get_reply(c->node, &r) < 0)
                return cal_fail(c, "calibration: ZADD: %s", lapse_redis_errstr(c->node));
            r = cal_reply(c, r, "ZADD");
            if (!r)
                return -1;
            freeReplyObject(r);
        }
        if (cal_check(c) < 0)
            return -1;
    }
    if (cal_mark(c, &b) < 0)
        return -1;
    *us = (b.cpu - a.cpu) * 1e6 / (double)n;
    return 0;
}

/* What a form is measured with: the set sizes its writes are measured
 * at, the IDs a measurement writes, the IDs fired. One zset: a set of
 * 100,000 and one of 800,000 (the fit's slope, plan_fit.h; what the
 * writes cost grows most where the set outgrows the CPU's caches, tens of
 * MB, so the larger must be past them). Each size sits where the set's
 * hash table finished its last doubling (at 65,536 and 524,288: a
 * doubling's rehash takes about half as many writes again) and its next
 * is more than a measurement's new IDs away. Small keys: one size (their
 * writes cost several times more, and the run must stay short), taken as
 * flat. */
#define CAL_REPEATS 3
#define CAL_ID_BYTES \
    200 /* a pending ID's memory at most, for the room check (~130 B at 16 bytes) */
#define CAL_SPAN 10000000L /* ms between two writes' deadlines: above every ID's number */
#define CAL_FRESH 4000000L /* the first ID of the steady and payload phases: above the set */
static const struct cal_plan {
    long level[2]; /* the set before each size's measurements */
    int nlevels;
    long per;  /* IDs a measurement */
    long fire; /* IDs fired in full claims */
} cal_plans[LAPSE_PLAN_FORMS] = {
    [LAPSE_PLAN_ONE_ZSET] = {{LAPSE_PLAN_CALIBRATE_LOW, LAPSE_PLAN_CALIBRATE_TOP},
                             2,
                             LAPSE_PLAN_CALIBRATE_IDS,
                             100000},
    [LAPSE_PLAN_SMALL_KEYS] = {{20000, 0}, 1, 10000, 40000},
};

/* The writes' points: for each of new, reset, extend, the set's size and
 * the µs an op of each measurement. */
enum { W_NEW, W_RESET, W_EXTEND, CAL_WRITES };
struct cal_points {
    double ids[CAL_WRITES][2 * CAL_REPEATS], us[CAL_WRITES][2 * CAL_REPEATS];
    size_t n;
};

/* One measurement: `count` writes (first, stride: cal_write), its Redis
 * CPU an op into us. */
static int cal_measure(struct cal *c, lapse_producer *p, enum cal_op op, long first, long count,
                       long stride, enum cal_order order, int64_t base, int grow, double *us)
{
    struct cal_mark a, b;
    if (cal_mark(c, &a) < 0 ||
        cal_write(c, p, op, first, count, stride, order, base, 0, grow) < 0 || cal_mark(c, &b) < 0)
        return -1;
    *us = (b.cpu - a.cpu) * 1e6 / (double)count;
    return 0;
}

/* The writes at each of the form's sizes, interleaved (new, reset,
 * extend, new, ...: what drifts over the run, another process's load,
 * falls on the three alike), CAL_REPEATS times a size; *have: the IDs
 * pending after, numbered 0..*have-1. */
static int cal_writes(struct cal *c, lapse_producer *p, int form, int64_t day, long *have,
                      struct cal_points *pt)
{
    struct cal_plan plan = cal_plans[form];
    const struct cal_plan *cp = &plan;
    if (form == LAPSE_PLAN_ONE_ZSET)
        plan.level[1] = c->top, plan.nlevels = c->top > plan.level[0] ? 2 : 1;
    long block = 0;
    pt->n = 0;
    *have = 0;
    for (int l = 0; l < cp->nlevels; l++) {
        long grow = cp->level[l] - *have;
        if (grow > 0 && cal_write(c, p, CAL_TOUCH, *have, grow, 1, CAL_SCATTERED,
                                  day + CAL_SPAN * block++, 0, form) < 0)
            return -1;
        if (grow > 0)
            *have += grow;
        for (int r = 0; r < CAL_REPEATS; r++, pt->n++) {
            size_t i = pt->n;
            /* new IDs, cancelled again unmeasured: the set stays at its
             * size, under the next power of two, where its hash table
             * would double and rehash every ID (a cost of growing, not of
             * a set that holds its size, which is what plan answers for) */
            pt->ids[W_NEW][i] = (double)*have + (double)cp->per / 2;
            if (cal_measure(c, p, CAL_TOUCH, *have, cp->per, 1, CAL_IN_ORDER,
                            day + CAL_SPAN * block++, form, &pt->us[W_NEW][i]) < 0 ||
                cal_write(c, p, CAL_CANCEL, *have, cp->per, 1, CAL_IN_ORDER, 0, 0, 0) < 0)
                return -1;
            /* resets and extends: cp->per pending IDs spread over the set
             * (another cut each repeat), in a scrambled order, each to a
             * later deadline than any */
            long stride = *have / cp->per, first = r % stride;
            /* (the extends another cut than the resets': the IDs a reset
             * just moved sit together at the set's end, in the cache, and
             * would cost an extend half what one anywhere does) */
            long other = (first + stride / 2) % stride;
            pt->ids[W_RESET][i] = pt->ids[W_EXTEND][i] = (double)*have;
            if (cal_measure(c, p, CAL_TOUCH, first, cp->per, stride, CAL_SHUFFLED,
                            day + CAL_SPAN * block++, 0, &pt->us[W_RESET][i]) < 0 ||
                cal_measure(c, p, CAL_EXTEND, other, cp->per, stride, CAL_SHUFFLED,
                            day + CAL_SPAN * block++, 0, &pt->us[W_EXTEND][i]) < 0)
                return -1;
        }
    }
    return 0;
}

/* One form's phases into *k. */
static int cal_form(struct cal *c, int form, struct lapse_plan_form_costs *k)
{
    if (cal_shard(c, form) < 0)
        return -1;
    const struct cal_plan *cp = &cal_plans[form];
    char e[512];
    c->failed = 0;
    lapse_producer *p = lapse_producer_new(&c->scratch, cal_on_error, c, e, sizeof e);
    if (!p)
        return cal_fail(c, "calibration: producer: %s", e);
    int64_t now;
    struct cal_mark m0, m1, m4, m5, m6, m7;
    struct cal_points pt;
    long have = 0;
    int rc = -1;
    if (cal_now(c, &now) < 0)
        goto out;
    int64_t day = now + 86400000; /* deadlines a day away and later: nothing falls due */
    /* the writes (and their memory: the delta over them, per ID left) */
    if (cal_mark(c, &m0) < 0 || cal_writes(c, p, form, day, &have, &pt) < 0 || cal_mark(c, &m1) < 0)
        goto out;
    const double ref = (double)cp->level[0];
    struct lapse_plan_fit f[CAL_WRITES];
    for (int w = 0; w < CAL_WRITES; w++)
        if (lapse_plan_fit(pt.ids[w], pt.us[w], pt.n, ref, &f[w]) < 0) {
            cal_fail(c, "calibration: a write measured no Redis CPU (INFO cpu did not move)");
            goto out;
        }
    k->size_ids = ref;
    k->new_us = f[W_NEW].us, k->new_per_doubling = f[W_NEW].per_doubling;
    k->new_spread_pct = f[W_NEW].spread_pct;
    k->reset_us = f[W_RESET].us, k->reset_per_doubling = f[W_RESET].per_doubling;
    k->reset_spread_pct = f[W_RESET].spread_pct;
    k->extend_us = f[W_EXTEND].us, k->extend_per_doubling = f[W_EXTEND].per_doubling;
    k->extend_spread_pct = f[W_EXTEND].spread_pct;
    k->bytes_per_id = (m1.mem - m0.mem) / (double)have;
    /* fires: cp->fire of them due (deadlines a minute ago, distinct),
     * claimed scanner.batch at a time */
    int batch = c->cfg->scanner_batch > 0 ? c->cfg->scanner_batch : 500;
    long n = cp->fire < have ? cp->fire : have;
    if (cal_now(c, &now) < 0 ||
        cal_write(c, p, CAL_TOUCH, 0, n, 1, CAL_IN_ORDER, now - 60000 - n, 0, 0) < 0 ||
        cal_lock(c) < 0 || cal_mark(c, &m4) < 0 || cal_fire(c, batch, n / batch + 16) < 0 ||
        cal_mark(c, &m5) < 0)
        goto out;
    k->fire_us = (m5.cpu - m4.cpu) * 1e6 / (double)n;
    /* a claim's own cost: CAL_CLAIMS IDs falling due one a ms, claimed as
     * they do (the writes before the first deadline count too: a small
     * part, taken out below at the new ID's cost) */
    long claims = 0;
    if (cal_mark(c, &m6) < 0 || cal_steady(c, p, CAL_FRESH, CAL_CLAIMS, &claims) < 0 ||
        cal_mark(c, &m7) < 0)
        goto out;
    if (claims < CAL_CLAIMS / 10) {
        cal_fail(c, "calibration: only %ld claims took IDs falling due (Redis too slow?)", claims);
        goto out;
    }
    double new_now = lapse_plan_fit_at(k->new_us, k->new_per_doubling, ref, (double)(have - n));
    double claim = ((m7.cpu - m6.cpu) * 1e6 - CAL_CLAIMS * (new_now + k->fire_us)) / (double)claims;
    k->claim_us = claim > 0 ? claim : 0;
    /* a payload: a quarter of a measurement's IDs, new, each with
     * CAL_PAYLOAD bytes */
    long q = cp->per / 4;
    struct cal_mark p0, p1;
    if (cal_mark(c, &p0) < 0 ||
        cal_write(c, p, CAL_TOUCH, 2 * CAL_FRESH, q, 1, CAL_IN_ORDER, day, 1, form) < 0 ||
        cal_mark(c, &p1) < 0)
        goto out;
    double extra = (p1.mem - p0.mem) / (double)q - k->bytes_per_id - CAL_PAYLOAD;
    k->payload_extra = extra > 0 ? extra : 0;
    rc = 0;
out:
    lapse_producer_free(p);
    return rc;
}

int lapse_plan_calibrate(const struct lapse_config *cfg, lapse_redis *node, int id_bytes,
                         struct lapse_plan_costs *out, char *errstr, size_t size)
{
    struct cal c = {.cfg = cfg, .node = node, .id_bytes = id_bytes, .err = errstr, .errsize = size};
    if (cfg->cluster)
        return cal_fail(&c, "--calibrate measures one Redis server: not on a Redis Cluster "
                            "(calibrate against one of its primaries with a config naming it "
                            "in redis.nodes, or plan with the default costs)");
    if (id_bytes < 4)
        return cal_fail(&c, "--calibrate needs IDs of 4 bytes or more (--id-bytes)");
    /* NS.plan.<pid>, NS cut so that the whole fits */
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".plan.%ld", (long)getpid());
    int keep = LAPSE_NS_MAX - (int)strlen(suffix);
    snprintf(c.ns, sizeof c.ns, "%.*s%s", keep, cfg->ns, suffix);
    c.scratch = *cfg;
    c.scratch.ns = c.ns;
    c.scratch.nnodes = 1;
    c.scratch.producer_slack_ms = 0; /* every extend written, none absorbed */
    c.scratch.redis_accept_eviction = 1;
    snprintf(c.token, sizeof c.token, "plan-calibrate:%ld", (long)getpid());
    c.deadline_ms = lapse_clock_mono_ms() + LAPSE_PLAN_CALIBRATE_MAX_MS;
    lapse_stop_on_signals(0);

    *out = (struct lapse_plan_costs){.source = LAPSE_PLAN_CALIBRATED,
                                     .id_bytes = id_bytes,
                                     .calibration_ids = LAPSE_PLAN_CALIBRATE_IDS};
    int rc = -1;
    struct lapse_redis_memory mem;
    int64_t now;
    if (lapse_redis_ensure(node) < 0) {
        cal_fail(&c, "calibration: %s", lapse_redis_errstr(node));
        return -1;
    }
    if (lapse_redis_memory(node, 0, &mem) == 0 && mem.max > 0)
        out->maxmemory = mem.max;
    /* the larger set in at most a quarter of what maxmemory leaves (at
     * CAL_ID_BYTES an ID): a calibration must not push a node in use to
     * its limit; under 4 times the smaller set, one size only (no slope;
     * the size then need not sit between two doublings: a little of a
     * rehash more) */
    c.top = LAPSE_PLAN_CALIBRATE_TOP;
    if (out->maxmemory > 0 && mem.used >= 0) {
        long long room = (out->maxmemory - mem.used) / 4 / CAL_ID_BYTES;
        if (room < c.top)
            c.top = room >= 4 * LAPSE_PLAN_CALIBRATE_LOW ? (long)room : 0;
    }
    double ref = 0;
    if (cal_now(&c, &now) < 0 || cal_clean(&c, 0) < 0 ||
        cal_reference(&c, CAL_REF_IDS, now + 86400000, &ref) < 0 || cal_clean(&c, 0) < 0 ||
        cal_form(&c, LAPSE_PLAN_ONE_ZSET, &out->form[LAPSE_PLAN_ONE_ZSET]) < 0 ||
        cal_clean(&c, 0) < 0 ||
        cal_form(&c, LAPSE_PLAN_SMALL_KEYS, &out->form[LAPSE_PLAN_SMALL_KEYS]) < 0)
        goto out;
    out->form[LAPSE_PLAN_ONE_ZSET].zadd_us = ref;
    out->form[LAPSE_PLAN_SMALL_KEYS].zadd_us = ref;
    char top[64] = "";
    if (c.top > 0)
        snprintf(top, sizeof top, "%ld", c.top);
    else
        snprintf(top, sizeof top, " (no room under maxmemory for a larger: writes flat)");
    time_t t = time(NULL);
    struct tm tm;
    char when[32] = "?";
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(out->origin, sizeof out->origin,
             "calibrated on %s (%s) at %s: writes of %ld IDs %d times at sets of %ld%s%s "
             "(one zset), %ld (small keys), %d-byte IDs",
             lapse_redis_name(node), lapse_redis_addr(node), when,
             cal_plans[LAPSE_PLAN_ONE_ZSET].per, CAL_REPEATS,
             cal_plans[LAPSE_PLAN_ONE_ZSET].level[0], c.top > 0 ? " and " : "", top,
             cal_plans[LAPSE_PLAN_SMALL_KEYS].level[0], id_bytes);
    rc = 0;
out:
    if (cal_clean(&c, rc < 0) < 0)
        rc = -1;
    return rc;
}
