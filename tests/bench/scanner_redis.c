/*
 * lapse-bench-scanner-redis: the Redis-side helpers of `make bench-scanner`
 * (tests/bench/scanner-run). Four jobs, each one connection to one Redis:
 *
 *   load HOST PORT NS SHARDS COUNT DUE_MS PREFIX [SPREAD_MS]
 *       COUNT IDs "PREFIX%08d" straight into the shard zsets NS:z:S (S by
 *       the documented hash; no payloads, no other keys), score DUE_MS - (i %
 *       SPREAD_MS): all due from DUE_MS on, spread over SPREAD_MS (100 by
 *       default) so scores differ as deadlines do. Variadic ZADDs of 1000
 *       members, pipelined.
 *
 *   bare HOST PORT NS SHARD DUE_MS BATCH TIMEOUT_MS
 *       the limit the scanner is measured against: waits until the Redis
 *       clock reads DUE_MS, then calls EVALSHA of BARE_LUA below (take up to
 *       BATCH due IDs, remove each one whose score is still the one read:
 *       claim and compare-and-delete in one round trip, nothing else) until a
 *       call finds nothing due. Run one per shard, in parallel, for several.
 *
 *   remove HOST PORT NS SHARD DUE_MS BATCH TIMEOUT_MS
 *       as bare with REMOVE_LUA: the removal alone (ZRANGEBYSCORE -inf now
 *       LIMIT 0 BATCH, then one ZREM of what it read), the least Redis can
 *       do per fired ID: the burst section's limit.
 *
 *   watch HOST PORT NS SHARDS DUE_MS TIMEOUT_MS [EVERY_MS]
 *       times a drain by others (the scanners): waits until the Redis clock
 *       reads DUE_MS, then sums ZCARD NS:z:S + HLEN NS:f:S over shards
 *       0..SHARDS-1 (one pipelined round trip) every EVERY_MS (default
 *       WATCH_MS) until it is 0.
 *       A claimed ID is either still in the zset or in its claim's in-flight
 *       record until its event is acknowledged and ack.lua settled it, so 0
 *       means every ID went through claim, Kafka and ack.
 *
 *   load-small HOST PORT NS SHARDS COUNT DUE_MS PREFIX [SPREAD_MS]
 *       the same IDs and scores into a namespace in small keys (`lapse-scale
 *       init --small-keys`; common/bucket.h, lib/bucket.lua): each shard
 *       gets the buckets a scanner grows it to (the least b with at most 64
 *       IDs a bucket on average, s = 0: lib/bucket.lua's bk_full stops
 *       there), written in this order: the state key NS:k:S "b 0", then
 *       each bucket NS:z:S:J whole in one ZADD (J = the ID's bucket hash mod
 *       2^b), then the index: NS:x:S:G (bucket J -> its lowest score,
 *       groups of 2048) and NS:x:S (group G -> its lowest entry), ZADD LT.
 *       A running scanner that splits a bucket meanwhile finds it whole,
 *       and the index stays a lower bound. The whole load is sorted in
 *       memory first (8 bytes an ID).
 *
 *   watch-small HOST PORT NS SHARDS DUE_MS TIMEOUT_MS [EVERY_MS]
 *       as watch for a namespace in small keys: sums ZCARD NS:z:S (a shard
 *       still converting) + ZCARD NS:x:S (index groups with entries: a
 *       claim removes a bucket's entry when it empties it) + HLEN NS:f:S;
 *       0 means every ID was claimed and settled. ids, t10 and t90 then
 *       count index groups, not IDs.
 *
 * Each prints one line of key=value pairs on stdout; times are unix ms of the
 * local clock (the same host as Redis). Every loop is bounded by TIMEOUT_MS
 * (or by COUNT); exit status 1 on a Redis error or a timeout.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bucket.h"
#include "hash.h"
#include "layout.h"

#include "glue.h"

#define PROG "lapse-bench-scanner-redis"
#define LOAD_MEMBERS 1000 /* members per ZADD */
#define LOAD_PIPELINE 16  /* ZADDs per round trip */
#define WATCH_MS 2
#define BENCH_KEY_MAX (LAPSE_NS_MAX + 32)

/* The reference loop body: the least a claim-and-remove of due IDs can do. */
static const char BARE_LUA[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, ARGV[1])\n"
    "local n = 0\n"
    "for i = 1, #due, 2 do\n"
    "    if redis.call('ZSCORE', KEYS[1], due[i]) == due[i + 1] then\n"
    "        redis.call('ZREM', KEYS[1], due[i])\n"
    "        n = n + 1\n"
    "    end\n"
    "end\n"
    "return { #due / 2, n }\n";

/* The removal alone: what firing an ID cannot do with less. */
static const char REMOVE_LUA[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, ARGV[1])\n"
    "if #due > 0 then redis.call('ZREM', KEYS[1], unpack(due)) end\n"
    "return { #due, #due }\n";

static void usage(FILE *out)
{
    fprintf(out, "usage: " PROG " load HOST PORT NS SHARDS COUNT DUE_MS PREFIX [SPREAD_MS]\n"
                 "       " PROG " load-small HOST PORT NS SHARDS COUNT DUE_MS PREFIX [SPREAD_MS]\n"
                 "       " PROG " bare HOST PORT NS SHARD DUE_MS BATCH TIMEOUT_MS\n"
                 "       " PROG " remove HOST PORT NS SHARD DUE_MS BATCH TIMEOUT_MS\n"
                 "       " PROG " watch HOST PORT NS SHARDS DUE_MS TIMEOUT_MS [EVERY_MS]\n"
                 "       " PROG " watch-small HOST PORT NS SHARDS DUE_MS TIMEOUT_MS [EVERY_MS]\n"
                 "(see tests/bench/scanner_redis.c)\n");
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static redisContext *connect_redis(const char *host, int port)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        fprintf(stderr, PROG ": redis %s:%d: %s\n", host, port, c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, (struct timeval){30, 0});
    return c;
}

/* A reply that is not an error, or NULL (reported). */
static redisReply *checked(redisContext *c, redisReply *r, const char *what)
{
    if (!r || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, PROG ": %s: %s\n", what, r ? r->str : c->errstr);
        if (r)
            freeReplyObject(r);
        return NULL;
    }
    return r;
}

static int redis_now_ms(redisContext *c, int64_t *out)
{
    redisReply *r = checked(c, redisCommand(c, "TIME"), "TIME");
    if (!r)
        return -1;
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements == 2;
    if (ok)
        *out = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Waits (bounded by deadline, local ms) until the Redis clock reads due. */
static int wait_redis_clock(redisContext *c, int64_t due, int64_t deadline)
{
    for (;;) {
        int64_t now;
        if (redis_now_ms(c, &now) < 0)
            return -1;
        if (now >= due)
            return 0;
        if (wall_ms() > deadline) {
            fprintf(stderr, PROG ": the Redis clock did not reach %" PRId64 " in time\n", due);
            return -1;
        }
        int64_t left = due - now;
        sleep_ms(left > 50 ? 20 : 1);
    }
}

struct member {
    char score[24];
    char id[48];
};

static int cmd_load(redisContext *c, const char *ns, uint32_t shards, int64_t count, int64_t due,
                    const char *prefix, int64_t spread)
{
    /* One bucket of pending members per shard, flushed at LOAD_MEMBERS. */
    struct member(*buf)[LOAD_MEMBERS] = calloc(shards, sizeof *buf);
    size_t *fill = calloc(shards, sizeof *fill);
    const char **argv = malloc((2 + 2 * LOAD_MEMBERS) * sizeof *argv);
    size_t *argvlen = malloc((2 + 2 * LOAD_MEMBERS) * sizeof *argvlen);
    char key[BENCH_KEY_MAX];
    int rc = -1, queued = 0;
    if (!buf || !fill || !argv || !argvlen) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    for (int64_t i = 0; i <= count; i++) {
        uint32_t s = 0;
        if (i < count) {
            char id[48];
            int len = snprintf(id, sizeof id, "%s%08" PRId64, prefix, i);
            s = lapse_shard_of(lapse_hash(id, (size_t)len), shards);
            struct member *m = &buf[s][fill[s]++];
            memcpy(m->id, id, (size_t)len + 1);
            snprintf(m->score, sizeof m->score, "%" PRId64, due - i % spread);
        }
        for (uint32_t t = 0; t < shards; t++) {
            if (!(i == count ? fill[t] > 0 : t == s && fill[t] == LOAD_MEMBERS))
                continue;
            lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_DUE, t);
            int n = 0;
            argv[n] = "ZADD", argvlen[n++] = 4;
            argv[n] = key, argvlen[n++] = strlen(key);
            for (size_t k = 0; k < fill[t]; k++) {
                argv[n] = buf[t][k].score, argvlen[n++] = strlen(buf[t][k].score);
                argv[n] = buf[t][k].id, argvlen[n++] = strlen(buf[t][k].id);
            }
            if (redisAppendCommandArgv(c, n, argv, argvlen) != REDIS_OK)
                goto out;
            fill[t] = 0;
            queued++;
        }
        while (queued > 0 && (queued >= LOAD_PIPELINE || i == count)) {
            redisReply *r;
            if (redisGetReply(c, (void **)&r) != REDIS_OK || !checked(c, r, "ZADD"))
                goto out;
            freeReplyObject(r);
            queued--;
        }
    }
    printf("loaded=%" PRId64 " shards=%u due_ms=%" PRId64 "\n", count, shards, due);
    rc = 0;
out:
    if (rc < 0 && c->err)
        fprintf(stderr, PROG ": load: %s\n", c->errstr);
    free(buf);
    free(fill);
    free(argv);
    free(argvlen);
    return rc;
}

#define SMALL_LOAD 64     /* bk_full's BK_LOAD: the most IDs a bucket holds on average */
#define SMALL_GROUP 2048  /* lib/bucket.lua's BK_GROUP: buckets a group index */
#define SMALL_PIPELINE 64 /* commands per round trip */

/* Reads the replies of the queued commands; -1 on an error. */
static int drain_replies(redisContext *c, int *queued, const char *what)
{
    while (*queued > 0) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || !checked(c, r, what))
            return -1;
        freeReplyObject(r);
        (*queued)--;
    }
    return 0;
}

static int append_argv(redisContext *c, int n, const char **argv, const size_t *argvlen,
                       int *queued, const char *what)
{
    if (redisAppendCommandArgv(c, n, argv, argvlen) != REDIS_OK)
        return -1;
    if (++*queued >= SMALL_PIPELINE)
        return drain_replies(c, queued, what);
    return 0;
}

static int cmd_load_small(redisContext *c, const char *ns, uint32_t shards, int64_t count,
                          int64_t due, const char *prefix, int64_t spread)
{
    uint64_t *cnt = calloc(shards, sizeof *cnt), *base = calloc(shards + 1, sizeof *base);
    unsigned *lvl = calloc(shards, sizeof *lvl);
    uint32_t *gi = malloc((size_t)(count ? count : 1) * sizeof *gi);
    uint32_t *order = malloc((size_t)(count ? count : 1) * sizeof *order);
    uint32_t *start = NULL;
    int64_t *low = NULL;
    const char **argv = NULL;
    size_t *argvlen = NULL;
    char(*sbuf)[24] = NULL, (*ibuf)[48] = NULL;
    int rc = -1, queued = 0;
    if (!cnt || !base || !lvl || !gi || !order) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    char id[48];
    /* the shards' sizes, and so their levels */
    for (int64_t i = 0; i < count; i++) {
        int len = snprintf(id, sizeof id, "%s%08" PRId64, prefix, i);
        uint32_t s = lapse_shard_of(lapse_hash(id, (size_t)len), shards);
        cnt[s]++;
        gi[i] = s;
    }
    for (uint32_t s = 0; s < shards; s++) {
        unsigned b = 0;
        while ((cnt[s] >> b) > SMALL_LOAD && b < 24)
            b++;
        lvl[s] = b;
        base[s + 1] = base[s] + ((uint64_t)1 << b);
    }
    uint64_t nb = base[shards];
    start = calloc(nb + 1, sizeof *start);
    low = malloc(nb * sizeof *low);
    if (!start || !low || nb > UINT32_MAX) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    /* each ID's bucket (global number), counted, then the IDs by bucket */
    for (int64_t i = 0; i < count; i++) {
        int len = snprintf(id, sizeof id, "%s%08" PRId64, prefix, i);
        uint32_t s = gi[i];
        uint32_t j = lapse_bucket_hash(id, (size_t)len) & (uint32_t)((1u << lvl[s]) - 1);
        gi[i] = (uint32_t)(base[s] + j);
        start[gi[i] + 1]++;
    }
    size_t most = 1;
    for (uint64_t k = 0; k < nb; k++) {
        if (start[k + 1] > most)
            most = start[k + 1];
        start[k + 1] += start[k];
    }
    for (int64_t i = 0; i < count; i++)
        order[start[gi[i]]++] = (uint32_t)i;
    for (uint64_t k = nb; k > 0; k--) /* back to each bucket's first place */
        start[k] = start[k - 1];
    start[0] = 0;
    if (most <
        SMALL_GROUP *
            4) /* (the index's calls reuse the buffers: 2048 a group, 8192 groups at b = 24) */
        most = SMALL_GROUP * 4;
    argv = malloc((2 + 2 * most + 2) * sizeof *argv);
    argvlen = malloc((2 + 2 * most + 2) * sizeof *argvlen);
    sbuf = malloc(most * sizeof *sbuf);
    ibuf = malloc(most * sizeof *ibuf);
    if (!argv || !argvlen || !sbuf || !ibuf) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    char key[BENCH_KEY_MAX], bkey[BENCH_KEY_MAX + 16], val[32];
    for (uint32_t s = 0; s < shards; s++) {
        /* 1. the state key */
        lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_BUCKETS, s);
        snprintf(val, sizeof val, "%u 0", lvl[s]);
        argv[0] = "SET", argvlen[0] = 3;
        argv[1] = key, argvlen[1] = strlen(key);
        argv[2] = val, argvlen[2] = strlen(val);
        if (append_argv(c, 3, argv, argvlen, &queued, "SET") < 0 ||
            drain_replies(c, &queued, "SET") < 0)
            goto out;
        /* 2. each bucket whole, in one ZADD */
        lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_DUE, s);
        uint32_t nbs = 1u << lvl[s];
        for (uint32_t j = 0; j < nbs; j++) {
            uint64_t g = base[s] + j;
            uint32_t from = start[g], to = start[g + 1];
            low[g] = INT64_MAX;
            if (from == to)
                continue;
            snprintf(bkey, sizeof bkey, "%s:%u", key, j);
            int n = 0;
            argv[n] = "ZADD", argvlen[n++] = 4;
            argv[n] = bkey, argvlen[n++] = strlen(bkey);
            for (uint32_t q = from; q < to; q++) {
                int64_t i = order[q], sc = due - i % spread;
                if (sc < low[g])
                    low[g] = sc;
                snprintf(sbuf[q - from], sizeof sbuf[0], "%" PRId64, sc);
                snprintf(ibuf[q - from], sizeof ibuf[0], "%s%08" PRId64, prefix, i);
                argv[n] = sbuf[q - from], argvlen[n++] = strlen(sbuf[q - from]);
                argv[n] = ibuf[q - from], argvlen[n++] = strlen(ibuf[q - from]);
            }
            /* (the strings go out now: the buffers are reused) */
            if (redisAppendCommandArgv(c, n, argv, argvlen) != REDIS_OK)
                goto out;
            if (++queued >= SMALL_PIPELINE && drain_replies(c, &queued, "ZADD") < 0)
                goto out;
        }
        if (drain_replies(c, &queued, "ZADD") < 0)
            goto out;
        /* 3. the index: each group's, then the top */
        char xkey[BENCH_KEY_MAX], gkey[BENCH_KEY_MAX + 16];
        lapse_key_shard(xkey, sizeof xkey, ns, LAPSE_KEY_INDEX, s);
        uint32_t ngroups = (nbs + SMALL_GROUP - 1) / SMALL_GROUP;
        int64_t *gmin = malloc(ngroups * sizeof *gmin);
        if (!gmin)
            goto out;
        for (uint32_t gr = 0; gr < ngroups; gr++) {
            gmin[gr] = INT64_MAX;
            snprintf(gkey, sizeof gkey, "%s:%u", xkey, gr);
            int n = 0;
            argv[n] = "ZADD", argvlen[n++] = 4;
            argv[n] = gkey, argvlen[n++] = strlen(gkey);
            argv[n] = "LT", argvlen[n++] = 2;
            for (uint32_t j = gr * SMALL_GROUP; j < nbs && j < (gr + 1) * SMALL_GROUP; j++) {
                int64_t lo = low[base[s] + j];
                if (lo == INT64_MAX)
                    continue;
                if (lo < gmin[gr])
                    gmin[gr] = lo;
                uint32_t q = j - gr * SMALL_GROUP;
                snprintf(sbuf[q], sizeof sbuf[0], "%" PRId64, lo);
                snprintf(ibuf[q], sizeof ibuf[0], "%u", j);
                argv[n] = sbuf[q], argvlen[n++] = strlen(sbuf[q]);
                argv[n] = ibuf[q], argvlen[n++] = strlen(ibuf[q]);
            }
            if (n > 3 && (append_argv(c, n, argv, argvlen, &queued, "ZADD index") < 0 ||
                          drain_replies(c, &queued, "ZADD index") < 0)) {
                free(gmin);
                goto out;
            }
        }
        int n = 0;
        argv[n] = "ZADD", argvlen[n++] = 4;
        argv[n] = xkey, argvlen[n++] = strlen(xkey);
        argv[n] = "LT", argvlen[n++] = 2;
        for (uint32_t gr = 0; gr < ngroups; gr++) {
            if (gmin[gr] == INT64_MAX)
                continue;
            snprintf(sbuf[gr], sizeof sbuf[0], "%" PRId64, gmin[gr]);
            snprintf(ibuf[gr], sizeof ibuf[0], "%u", gr);
            argv[n] = sbuf[gr], argvlen[n++] = strlen(sbuf[gr]);
            argv[n] = ibuf[gr], argvlen[n++] = strlen(ibuf[gr]);
        }
        free(gmin);
        if (n > 3 && (append_argv(c, n, argv, argvlen, &queued, "ZADD top index") < 0 ||
                      drain_replies(c, &queued, "ZADD top index") < 0))
            goto out;
    }
    printf("loaded=%" PRId64 " shards=%u due_ms=%" PRId64 " levels=", count, shards, due);
    for (uint32_t s = 0; s < shards; s++)
        printf("%s%u", s ? "," : "", lvl[s]);
    printf("\n");
    rc = 0;
out:
    if (rc < 0 && c->err)
        fprintf(stderr, PROG ": load-small: %s\n", c->errstr);
    free(cnt);
    free(base);
    free(lvl);
    free(gi);
    free(order);
    free(start);
    free(low);
    free(argv);
    free(argvlen);
    free(sbuf);
    free(ibuf);
    return rc;
}

static int cmd_bare(redisContext *c, const char *script, const char *ns, uint32_t shard,
                    int64_t due, int64_t batch, int64_t timeout_ms)
{
    int64_t deadline = wall_ms() + timeout_ms;
    char key[BENCH_KEY_MAX], nbatch[24];
    lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_DUE, shard);
    snprintf(nbatch, sizeof nbatch, "%" PRId64, batch);
    redisReply *r = checked(c, redisCommand(c, "SCRIPT LOAD %s", script), "SCRIPT LOAD");
    if (!r)
        return -1;
    char sha[64];
    snprintf(sha, sizeof sha, "%s", r->str);
    freeReplyObject(r);
    if (wait_redis_clock(c, due, deadline) < 0)
        return -1;
    int64_t start = wall_ms(), ids = 0, calls = 0;
    for (;;) {
        r = checked(c, redisCommand(c, "EVALSHA %s 1 %s %s", sha, key, nbatch), "EVALSHA");
        if (!r)
            return -1;
        calls++;
        long long seen =
            r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[0]->integer : -1;
        long long removed = seen >= 0 ? r->element[1]->integer : 0;
        freeReplyObject(r);
        if (seen < 0) {
            fprintf(stderr, PROG ": bare: unexpected reply\n");
            return -1;
        }
        ids += removed;
        if (seen == 0)
            break;
        if (wall_ms() > deadline) {
            fprintf(stderr, PROG ": bare: shard %u not empty after %" PRId64 " ms\n", shard,
                    timeout_ms);
            return -1;
        }
    }
    printf("start_ms=%" PRId64 " end_ms=%" PRId64 " ids=%" PRId64 " calls=%" PRId64 "\n", start,
           wall_ms(), ids, calls);
    return 0;
}

/* Sum of the shards' ZCARD and HLEN of their in-flight records, one
 * pipelined round trip; -1 on error. */
static int small_keys; /* watch-small: the index's groups too */

static int64_t pending(redisContext *c, const char *ns, uint32_t shards)
{
    char key[BENCH_KEY_MAX];
    for (uint32_t s = 0; s < shards; s++) {
        lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_DUE, s);
        if (redisAppendCommand(c, "ZCARD %s", key) != REDIS_OK)
            return -1;
        lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_INDEX, s);
        if (small_keys && redisAppendCommand(c, "ZCARD %s", key) != REDIS_OK)
            return -1;
        lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_INFLIGHT, s);
        if (redisAppendCommand(c, "HLEN %s", key) != REDIS_OK)
            return -1;
    }
    int64_t sum = 0;
    for (uint32_t s = 0; s < (small_keys ? 3 : 2) * shards; s++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || !checked(c, r, "ZCARD/HLEN"))
            return -1;
        sum += r->integer;
        freeReplyObject(r);
    }
    return sum;
}

static int cmd_watch(redisContext *c, const char *ns, uint32_t shards, int64_t due,
                     int64_t timeout_ms, int every_ms)
{
    int64_t deadline = wall_ms() + timeout_ms;
    int64_t total = pending(c, ns, shards);
    if (total < 0 || wait_redis_clock(c, due, deadline) < 0)
        return -1;
    /* t10/t90: when 10 % / 90 % were gone: the steady rate without the ramp
     * and the tail */
    int64_t start = wall_ms(), first = -1, t10 = -1, t90 = -1, left = total;
    while (left > 0) {
        if (wall_ms() > deadline) {
            fprintf(stderr, PROG ": watch: %" PRId64 " of %" PRId64 " left after %" PRId64 " ms\n",
                    left, total, timeout_ms);
            return -1;
        }
        sleep_ms(every_ms);
        if ((left = pending(c, ns, shards)) < 0)
            return -1;
        int64_t now = wall_ms();
        if (first < 0 && left < total)
            first = now;
        if (t10 < 0 && left <= total - total / 10)
            t10 = now;
        if (t90 < 0 && left <= total / 10)
            t90 = now;
    }
    printf("start_ms=%" PRId64 " end_ms=%" PRId64 " ids=%" PRId64 " first_ms=%" PRId64
           " t10_ms=%" PRId64 " t90_ms=%" PRId64 "\n",
           start, wall_ms(), total, first, t10, t90);
    return 0;
}

int main(int argc, char **argv)
{
    int64_t port, a, b, d, e;
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    if (argc < 5 || parse_i64(argv[3], 1, 65535, &port) < 0 || strlen(argv[4]) > LAPSE_NS_MAX) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1], *host = argv[2], *ns = argv[4];
    int bad = 1;
    int64_t spread = 100;
    small_keys = !strcmp(cmd, "load-small") || !strcmp(cmd, "watch-small");
    if (small_keys)
        cmd = !strcmp(cmd, "load-small") ? "load" : "watch";
    if (!strcmp(cmd, "load") && (argc == 9 || argc == 10))
        bad = parse_i64(argv[5], 1, LAPSE_MAX_SHARDS, &a) < 0 || !lapse_shards_valid((long)a) ||
              parse_i64(argv[6], 0, 99999999, &b) < 0 ||
              parse_i64(argv[7], 0, INT64_MAX / 2, &d) < 0 || strlen(argv[8]) > 32 ||
              (argc == 10 && parse_i64(argv[9], 1, 3600000, &spread) < 0);
    else if ((!strcmp(cmd, "bare") || !strcmp(cmd, "remove")) && argc == 9)
        bad = parse_i64(argv[5], 0, LAPSE_MAX_SHARDS - 1, &a) < 0 ||
              parse_i64(argv[6], 0, INT64_MAX / 2, &d) < 0 ||
              parse_i64(argv[7], 1, 100000, &b) < 0 || parse_i64(argv[8], 1, 3600000, &e) < 0;
    int64_t every = WATCH_MS;
    if (!strcmp(cmd, "watch") && (argc == 8 || argc == 9))
        bad = parse_i64(argv[5], 1, LAPSE_MAX_SHARDS, &a) < 0 ||
              parse_i64(argv[6], 0, INT64_MAX / 2, &d) < 0 ||
              parse_i64(argv[7], 1, 3600000, &e) < 0 ||
              (argc == 9 && parse_i64(argv[8], 1, 10000, &every) < 0);
    if (bad) {
        usage(stderr);
        return 2;
    }
    redisContext *c = connect_redis(host, (int)port);
    if (!c)
        return 1;
    int rc;
    if (!strcmp(cmd, "load"))
        rc = (small_keys ? cmd_load_small : cmd_load)(c, ns, (uint32_t)a, b, d, argv[8], spread);
    else if (!strcmp(cmd, "bare") || !strcmp(cmd, "remove"))
        rc = cmd_bare(c, !strcmp(cmd, "bare") ? BARE_LUA : REMOVE_LUA, ns, (uint32_t)a, d, b, e);
    else
        rc = cmd_watch(c, ns, (uint32_t)a, d, e, (int)every);
    redisFree(c);
    fflush(stdout);
    return rc < 0 ? 1 : 0;
}
