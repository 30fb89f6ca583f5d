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

#include "hash.h"
#include "layout.h"

#include "glue.h"

#define PROG "lapse-bench-scanner-redis"
#define LOAD_MEMBERS 1000 /* members per ZADD */
#define LOAD_PIPELINE 16  /* ZADDs per round trip */
#define WATCH_MS 2
#define KEY_MAX (LAPSE_NS_MAX + 32)

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
                 "       " PROG " bare HOST PORT NS SHARD DUE_MS BATCH TIMEOUT_MS\n"
                 "       " PROG " remove HOST PORT NS SHARD DUE_MS BATCH TIMEOUT_MS\n"
                 "       " PROG " watch HOST PORT NS SHARDS DUE_MS TIMEOUT_MS [EVERY_MS]\n"
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

static int cmd_load(redisContext *c, const char *ns, uint32_t shards, int64_t count,
                    int64_t due, const char *prefix, int64_t spread)
{
    /* One bucket of pending members per shard, flushed at LOAD_MEMBERS. */
    struct member(*buf)[LOAD_MEMBERS] = calloc(shards, sizeof *buf);
    size_t *fill = calloc(shards, sizeof *fill);
    const char **argv = malloc((2 + 2 * LOAD_MEMBERS) * sizeof *argv);
    size_t *argvlen = malloc((2 + 2 * LOAD_MEMBERS) * sizeof *argvlen);
    char key[KEY_MAX];
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

static int cmd_bare(redisContext *c, const char *script, const char *ns, uint32_t shard,
                    int64_t due, int64_t batch, int64_t timeout_ms)
{
    int64_t deadline = wall_ms() + timeout_ms;
    char key[KEY_MAX], nbatch[24];
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
        long long seen = r->type == REDIS_REPLY_ARRAY && r->elements == 2 ? r->element[0]->integer : -1;
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
static int64_t pending(redisContext *c, const char *ns, uint32_t shards)
{
    char key[KEY_MAX];
    for (uint32_t s = 0; s < shards; s++) {
        lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_DUE, s);
        if (redisAppendCommand(c, "ZCARD %s", key) != REDIS_OK)
            return -1;
        lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_INFLIGHT, s);
        if (redisAppendCommand(c, "HLEN %s", key) != REDIS_OK)
            return -1;
        /* a shard in small keys: its top index is empty once its buckets are */
        lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_INDEX, s);
        if (redisAppendCommand(c, "ZCARD %s", key) != REDIS_OK)
            return -1;
    }
    int64_t sum = 0;
    for (uint32_t s = 0; s < 3 * shards; s++) {
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
    if (!strcmp(cmd, "load") && (argc == 9 || argc == 10))
        bad = parse_i64(argv[5], 1, LAPSE_MAX_SHARDS, &a) < 0 || !lapse_shards_valid((long)a) ||
              parse_i64(argv[6], 0, 99999999, &b) < 0 ||
              parse_i64(argv[7], 0, INT64_MAX / 2, &d) < 0 || strlen(argv[8]) > 32 ||
              (argc == 10 && parse_i64(argv[9], 1, 3600000, &spread) < 0);
    else if ((!strcmp(cmd, "bare") || !strcmp(cmd, "remove")) && argc == 9)
        bad = parse_i64(argv[5], 0, LAPSE_MAX_SHARDS - 1, &a) < 0 ||
              parse_i64(argv[6], 0, INT64_MAX / 2, &d) < 0 ||
              parse_i64(argv[7], 1, 100000, &b) < 0 ||
              parse_i64(argv[8], 1, 3600000, &e) < 0;
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
        rc = cmd_load(c, ns, (uint32_t)a, b, d, argv[8], spread);
    else if (!strcmp(cmd, "bare") || !strcmp(cmd, "remove"))
        rc = cmd_bare(c, !strcmp(cmd, "bare") ? BARE_LUA : REMOVE_LUA, ns, (uint32_t)a, d, b, e);
    else
        rc = cmd_watch(c, ns, (uint32_t)a, d, e, (int)every);
    redisFree(c);
    fflush(stdout);
    return rc < 0 ? 1 : 0;
}
