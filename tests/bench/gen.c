/*
 * lapse-bench-gen: writes producer input for `make bench` (tests/bench/run).
 *
 * Its jobs, each cheap enough that the producer, not the generator, is what a
 * benchmark measures:
 *
 *   ids OP COUNT WHEN            COUNT lines "OP dev-%08d WHEN", i = 1..COUNT,
 *                                as fast as stdout takes them (written to a
 *                                file before anything is timed).
 *   fleet DEVICES SECONDS TIMEOUT_MS [--paced | --at BASE_MS [--stagger N]]
 *                                a device fleet: every device signals once a
 *                                (simulated) second, each signal one line
 *                                "extend dev-%08d WHEN". Device i signals at
 *                                offset i/DEVICES of each second, so the load
 *                                is spread evenly.
 *       --paced      real time: the lines of a 10 ms slice are written when
 *                    the slice starts (CLOCK_MONOTONIC, absolute sleeps), with
 *                    WHEN = +TIMEOUT_MS. A reader slower than the fleet makes
 *                    the generator fall behind; it never skips a signal and
 *                    reports how far behind it got.
 *       --at BASE_MS compressed time: as fast as stdout takes them, with
 *                    absolute deadlines WHEN = @(BASE_MS + signal time +
 *                    TIMEOUT_MS), signal time being the simulated ms since
 *                    the start. A consumer that compares deadlines only
 *                    (coalescing) sees the same sequence as in real time.
 *       --stagger N  (after --at BASE_MS) device i comes online in second
 *                    i % N (its earlier signals are left out): devices that
 *                    did not all start at once, so with bounded slack their
 *                    writes spread evenly over the seconds (the steady
 *                    state) instead of coming all in the same ones.
 *
 *   on-shard SHARDS SHARD COUNT PREFIX
 *                                COUNT IDs "PREFIX%08d", i = 1, 2, ..., one a
 *                                line, only those whose shard among SHARDS
 *                                (the documented hash) is SHARD: a load that
 *                                fills one shard (make bench-reshard). The
 *                                summary says how many i were tried.
 *
 *   lone PORT NS SHARDS COUNT GAP_MS
 *                                the lone-line latency of a long-running
 *                                producer reading our stdout: COUNT lines
 *                                "touch lone-%08d +3600000", one every GAP_MS,
 *                                each timed from its write until ZSCORE on
 *                                127.0.0.1:PORT sees it (polled every 0.1 ms,
 *                                given up after 2 s), after one warm-up line
 *                                (not counted) that the producer, starting,
 *                                answers late. Summary: p50/p99/max ms.
 *
 *   zadd-resp NS SHARDS COUNT BASE_MS
 *                                the same COUNT IDs as native Redis commands
 *                                for `redis-cli --pipe` (RESP): "ZADD NS:z:S
 *                                score dev-%08d", S the ID's shard by the
 *                                documented hash, scores rising from BASE_MS
 *                                by 1 ms per 100 IDs like deadlines of a
 *                                100k lines/s stream: the raw Redis cost of
 *                                what `ids touch` asks lapse to do.
 *
 * IDs are "dev-" and 8 digits: 12 bytes for i < 10^8. Every loop is bounded
 * by its counts; a summary goes to stderr as one "key=value ..." line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "hash.h"
#include "layout.h"

#include "glue.h"

#define ID_FMT "dev-%08" PRIu64
#define SLICE_MS 10
#define COUNT_MAX 100000000ULL /* IDs stay 12 bytes */

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: lapse-bench-gen ids OP COUNT WHEN\n"
        "       lapse-bench-gen on-shard SHARDS SHARD COUNT PREFIX\n"
        "       lapse-bench-gen lone PORT NS SHARDS COUNT GAP_MS\n"
        "       lapse-bench-gen zadd-resp NS SHARDS COUNT BASE_MS\n"
        "       lapse-bench-gen fleet DEVICES SECONDS TIMEOUT_MS --paced|--at BASE_MS [--stagger N]\n"
        "Writes lapse-producer input on stdout (see tests/bench/gen.c).\n");
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > max)
        return -1;
    *out = v;
    return 0;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until_ns(int64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000), (long)(t % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static int gen_ids(const char *op, uint64_t count, const char *when)
{
    for (uint64_t i = 1; i <= count; i++)
        if (printf("%s " ID_FMT " %s\n", op, i, when) < 0)
            return -1;
    if (fflush(stdout) != 0)
        return -1;
    fprintf(stderr, "lines=%" PRIu64 "\n", count);
    return 0;
}

/* See "on-shard" above. PREFIX is at most 32 bytes; i stays below COUNT_MAX. */
static int gen_on_shard(uint32_t shards, uint32_t shard, uint64_t count, const char *prefix)
{
    char id[64];
    uint64_t n = 0, i;
    for (i = 1; n < count && i < COUNT_MAX; i++) {
        int idlen = snprintf(id, sizeof id, "%s%08" PRIu64, prefix, i);
        if (lapse_shard_of(lapse_hash(id, (size_t)idlen), shards) != shard)
            continue;
        if (printf("%s\n", id) < 0)
            return -1;
        n++;
    }
    if (fflush(stdout) != 0)
        return -1;
    fprintf(stderr, "ids=%" PRIu64 " tried=%" PRIu64 "\n", n, i - 1);
    return 0;
}

static int gen_zadd_resp(const char *ns, uint32_t shards, uint64_t count, uint64_t base_ms)
{
    char key[LAPSE_NS_MAX + 32], id[32], score[32];
    for (uint64_t i = 1; i <= count; i++) {
        int idlen = snprintf(id, sizeof id, ID_FMT, i);
        uint32_t shard = lapse_shard_of(lapse_hash(id, (size_t)idlen), shards);
        if (lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_DUE, shard) < 0)
            return -1;
        int slen = snprintf(score, sizeof score, "%" PRIu64, base_ms + i / 100);
        if (printf("*4\r\n$4\r\nZADD\r\n$%zu\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", strlen(key), key,
                   slen, score, idlen, id) < 0)
            return -1;
    }
    if (fflush(stdout) != 0)
        return -1;
    fprintf(stderr, "commands=%" PRIu64 "\n", count);
    return 0;
}

/* See "lone" above. The latency includes our poll's round trip (~0.1 ms). */
static int gen_lone(int port, const char *ns, uint32_t shards, uint64_t count, uint64_t gap_ms)
{
    redisContext *c = redisConnect("127.0.0.1", port);
    if (!c || c->err) {
        fprintf(stderr, "lapse-bench-gen: redis 127.0.0.1:%d: %s\n", port,
                c ? c->errstr : "out of memory");
        redisFree(c);
        return -2;
    }
    int64_t *lat = malloc(count * sizeof *lat);
    if (!lat) {
        redisFree(c);
        return -1;
    }
    uint64_t missed = 0;
    int64_t next = mono_ns();
    /* Line 0 only warms up: it also waits for the producer to start (config,
     * connections, scripts, layout), which is not what a lone line in a
     * running stream waits for. It is timed like the others, not counted. */
    for (uint64_t i = 0; i <= count; i++) {
        char id[32], key[LAPSE_NS_MAX + 32];
        int idlen = snprintf(id, sizeof id, "lone-%08" PRIu64, i);
        uint32_t shard = lapse_shard_of(lapse_hash(id, (size_t)idlen), shards);
        if (lapse_key_shard(key, sizeof key, ns, LAPSE_KEY_DUE, shard) < 0)
            break;
        sleep_until_ns(next);
        next += (int64_t)gap_ms * 1000000;
        if (printf("touch %s +3600000\n", id) < 0 || fflush(stdout) != 0) {
            free(lat);
            redisFree(c);
            return -1;
        }
        int64_t t0 = mono_ns(), t = t0;
        for (int seen = 0; !seen && t - t0 < 2000000000; t = mono_ns()) {
            redisReply *r = redisCommand(c, "ZSCORE %s %b", key, id, (size_t)idlen);
            if (!r) {
                fprintf(stderr, "lapse-bench-gen: redis: %s\n", c->errstr);
                free(lat);
                redisFree(c);
                return -2;
            }
            seen = r->type == REDIS_REPLY_STRING;
            freeReplyObject(r);
            if (!seen)
                sleep_until_ns(mono_ns() + 100000);
        }
        if (i == 0)
            continue; /* the warm-up */
        lat[i - 1] = t - t0;
        missed += lat[i - 1] >= 2000000000;
    }
    qsort(lat, count, sizeof *lat, cmp_i64);
    fprintf(stderr, "lines=%" PRIu64 " p50_ms=%.2f p99_ms=%.2f max_ms=%.2f missed=%" PRIu64 "\n",
            count, lat[count / 2] / 1e6, lat[count * 99 / 100] / 1e6, lat[count - 1] / 1e6, missed);
    free(lat);
    redisFree(c);
    return 0;
}

/*
 * Signal k of the fleet (k = 0 .. devices*seconds-1) is device k % devices in
 * second k / devices, at ms offset (k % devices) * 1000 / devices.
 */
static int gen_fleet(uint64_t devices, uint64_t seconds, uint64_t timeout_ms, int paced,
                     uint64_t base_ms, uint64_t stagger)
{
    uint64_t total = devices * seconds, k = 0;
    int64_t start = mono_ns(), max_lag_ns = 0;
    uint64_t slices = seconds * (1000 / SLICE_MS);
    for (uint64_t s = 0; s < slices; s++) {
        uint64_t slice_end_ms = (s + 1) * SLICE_MS; /* simulated ms, exclusive */
        if (paced) {
            int64_t due = start + (int64_t)(s * SLICE_MS) * 1000000;
            int64_t now = mono_ns();
            if (now < due)
                sleep_until_ns(due);
            else if (now - due > max_lag_ns)
                max_lag_ns = now - due;
        }
        for (; k < total; k++) {
            uint64_t dev = k % devices, sec = k / devices;
            uint64_t t_ms = sec * 1000 + dev * 1000 / devices;
            if (t_ms >= slice_end_ms)
                break;
            if (stagger > 1 && sec < dev % stagger)
                continue; /* not online yet */
            int rc = paced ? printf("extend " ID_FMT " +%" PRIu64 "\n", dev + 1, timeout_ms)
                           : printf("extend " ID_FMT " @%" PRIu64 "\n", dev + 1,
                                    base_ms + t_ms + timeout_ms);
            if (rc < 0)
                return -1;
        }
        if (paced && fflush(stdout) != 0)
            return -1;
    }
    if (fflush(stdout) != 0)
        return -1;
    double elapsed = (double)(mono_ns() - start) / 1e9;
    fprintf(stderr, "lines=%" PRIu64 " elapsed_s=%.3f max_lag_ms=%.1f\n", k, elapsed,
            (double)max_lag_ns / 1e6);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t a, b, c, base = 0;
    int rc;
    if (glue_start(argc, argv, usage))
        return 0;
    if (argc == 5 && !strcmp(argv[1], "ids")) {
        if (parse_u64(argv[3], COUNT_MAX - 1, &a) < 0) {
            fprintf(stderr, "lapse-bench-gen: COUNT must be 0..%llu\n", COUNT_MAX - 1);
            return 2;
        }
        rc = gen_ids(argv[2], a, argv[4]);
    } else if (argc == 6 && !strcmp(argv[1], "zadd-resp")) {
        if (!lapse_shards_valid(atol(argv[3])) || parse_u64(argv[4], COUNT_MAX - 1, &a) < 0 ||
            parse_u64(argv[5], UINT64_MAX / 2, &base) < 0 || strlen(argv[2]) > LAPSE_NS_MAX) {
            usage(stderr);
            return 2;
        }
        rc = gen_zadd_resp(argv[2], (uint32_t)atol(argv[3]), a, base);
    } else if (argc == 6 && !strcmp(argv[1], "on-shard")) {
        if (!lapse_shards_valid(atol(argv[2])) || parse_u64(argv[3], 65535, &a) < 0 ||
            a >= (uint64_t)atol(argv[2]) || parse_u64(argv[4], COUNT_MAX - 1, &b) < 0 ||
            strlen(argv[5]) > 32) {
            usage(stderr);
            return 2;
        }
        rc = gen_on_shard((uint32_t)atol(argv[2]), (uint32_t)a, b, argv[5]);
    } else if (argc == 7 && !strcmp(argv[1], "lone")) {
        if (parse_u64(argv[2], 65535, &a) < 0 || strlen(argv[3]) > LAPSE_NS_MAX ||
            !lapse_shards_valid(atol(argv[4])) || parse_u64(argv[5], 1000000, &b) < 0 || b == 0 ||
            parse_u64(argv[6], 60000, &c) < 0) {
            usage(stderr);
            return 2;
        }
        rc = gen_lone((int)a, argv[3], (uint32_t)atol(argv[4]), b, c);
        if (rc == -2)
            return 1;
    } else if ((argc == 6 || argc == 7 || argc == 9) && !strcmp(argv[1], "fleet")) {
        uint64_t stagger = 0;
        int paced = argc == 6 && !strcmp(argv[5], "--paced");
        int at = argc >= 7 && !strcmp(argv[5], "--at") &&
                 parse_u64(argv[6], UINT64_MAX / 2, &base) == 0 &&
                 (argc == 7 ||
                  (!strcmp(argv[7], "--stagger") && parse_u64(argv[8], 3600, &stagger) == 0));
        if (parse_u64(argv[2], COUNT_MAX - 1, &a) < 0 || a == 0 ||
            parse_u64(argv[3], 86400, &b) < 0 || parse_u64(argv[4], 86400000, &c) < 0 ||
            (!paced && !at)) {
            usage(stderr);
            return 2;
        }
        rc = gen_fleet(a, b, c, paced, base, stagger);
    } else {
        usage(stderr);
        return 2;
    }
    if (rc < 0) {
        fprintf(stderr, "lapse-bench-gen: stdout: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}
