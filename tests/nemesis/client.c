/*
 * nemesis-client — the nemesis's seeded workload writer, on the producer
 * library: a watchdog / order-timeout service's mix of touch, extend,
 * watch, repeat and cancel over the IDs PREFIX0 .. PREFIX(N-1), recorded
 * op by op so that nemesis-check can prove the guarantees from the record.
 *
 *   nemesis-client -c CONF --seed S --writer NAME --prefix P --ids N
 *                  --rate OPS_PER_S --seconds T --history FILE [--first-n K]
 *                  [--via lib|stdin|kafka] [--producer PATH]
 *                  [--brokers B --topic T --group G] [--drain-ms MS]
 *
 * --via says how the ops reach lapse (client.h): the producer library in
 * this process (lib, the default), a lapse-producer run per batch on its
 * stdin (stdin, client_stdin.c), or messages for the Kafka ingress (kafka,
 * client_kafka.c). After T s the outcomes still unknown are waited for up
 * to --drain-ms (kafka: the ingress's commits; default 30000).
 *
 * The record (FILE, appended to; tests/nemesis/check_load.c reads it):
 *   {"t":"op","w":NAME,"n":42,"op":"touch","id":"c-17","in_ms":500,
 *    "payload":"...","sent_ms":...}      before the op is submitted
 *   {"t":"ack","w":NAME,"n":42,"ack_ms":...,"ok":true}   after the flush
 *   {"t":"ack",...,"ok":false,"err":"..."}   refused, or reported through
 *                                            on_error (may have applied)
 * An op has "at_ms" (absolute) or "in_ms" (relative), "period_ms" for a
 * repeat, neither for a cancel. Each line goes out in one write() to a file
 * opened O_APPEND, so a kill -9 leaves whole lines only: the ops of the
 * batch it interrupted have no ack (unknown), and a restart with --first-n
 * above the last n carries on in the same file.
 *
 * Determinism: op n is drawn from its own PRNG stream, splitmix64 seeded
 * with (seed, n), so the same seed gives the same op sequence (ID, kind,
 * times, payload) whatever the timing, and a restart at --first-n K draws
 * exactly the ops a run without the kill would have drawn from K on. Only
 * absolute times depend on the clock (now + a drawn offset).
 *
 * Pacing: every TICK_MS the ops due by then (rate * elapsed) are submitted,
 * then flushed; the acks follow each flush. Times are CLOCK_REALTIME ms.
 * Exit status: 0 after T s (or on SIGTERM/SIGINT, after a last flush),
 * 1 when the history cannot be written or the producer cannot start,
 * 2 on bad arguments.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

#define TICK_MS 20
#define BATCH_MAX 4096 /* ops between two flushes, at most */

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

int64_t client_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* splitmix64: a small PRNG of our own, so the sequence is the same on
 * every libc. */
static uint64_t mix_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A value in [lo, hi]. */
static int64_t mix_range(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(mix_next(s) % (uint64_t)(hi - lo + 1));
}

/*
 * Draws op n. The mix: touch 22 %, extend 28 %, watch 25 %, cancel 10 %,
 * repeat 7 %, and 8 % touch/extend far ahead; times mostly 50 ms .. 10 s
 * ahead (so most fire during a run), relative 4 in 5, absolute 1 in 5;
 * "far" ones 60 s .. 5 min; repeats every 0.5 .. 5 s, first point 50 ms ..
 * 3 s ahead (IDs are shared, so later ops touch, extend or cancel them);
 * a payload on ~20 %.
 */
static void draw(uint64_t seed, uint64_t n, const char *prefix, uint64_t ids, struct op *o)
{
    uint64_t s = seed ^ (n * UINT64_C(0xd1b54a32d192ed03));
    mix_next(&s);
    memset(o, 0, sizeof *o);
    o->n = n;
    snprintf(o->id, sizeof o->id, "%s%" PRIu64, prefix, mix_next(&s) % ids);
    int r = (int)mix_range(&s, 0, 99);
    int far = 0;
    if (r < 22)
        o->op = LAPSE_OP_TOUCH;
    else if (r < 50)
        o->op = LAPSE_OP_EXTEND;
    else if (r < 75)
        o->op = LAPSE_OP_WATCH;
    else if (r < 85)
        o->op = LAPSE_OP_CANCEL;
    else if (r < 92)
        o->op = LAPSE_OP_REPEAT;
    else {
        o->op = r < 96 ? LAPSE_OP_TOUCH : LAPSE_OP_EXTEND;
        far = 1;
    }
    if (o->op == LAPSE_OP_CANCEL)
        return;
    o->kind = mix_range(&s, 0, 4) == 0 ? LAPSE_WHEN_ABS : LAPSE_WHEN_REL;
    if (far)
        o->when = mix_range(&s, 60000, 300000);
    else if (o->op == LAPSE_OP_REPEAT)
        o->when = mix_range(&s, 50, 3000);
    else
        o->when = mix_range(&s, 50, 10000);
    if (o->op == LAPSE_OP_REPEAT)
        o->period = mix_range(&s, 500, 5000);
    if (mix_range(&s, 0, 4) == 0) {
        o->has_payload = 1;
        snprintf(o->payload, sizeof o->payload, "p%" PRIu64 " %" PRIx64, n, mix_next(&s) >> 40);
    }
}

static int history_fd = -1;

/* Appends obj (stolen) and a newline in one write(). */
static int record(json_t *obj)
{
    char *text = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(obj);
    if (!text)
        return -1;
    size_t len = strlen(text);
    char *line = realloc(text, len + 2);
    if (!line) {
        free(text);
        return -1;
    }
    line[len] = '\n';
    line[len + 1] = '\0';
    ssize_t w;
    do
        w = write(history_fd, line, len + 1);
    while (w < 0 && errno == EINTR);
    free(line);
    return w == (ssize_t)(len + 1) ? 0 : -1;
}

/* The ops since the last flush, and the failures reported for them. */
static struct {
    uint64_t n[BATCH_MAX];
    char *err[BATCH_MAX]; /* NULL: no failure reported */
    size_t count;
} batch;
static const char *writer = "client";

static void on_error(void *ctx, uint64_t tag, const char *reason)
{
    (void)ctx;
    for (size_t i = 0; i < batch.count; i++)
        if (batch.n[i] == tag && !batch.err[i])
            batch.err[i] = strdup(reason ? reason : "failed");
}

int client_record_ack(uint64_t n, const char *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "t", json_string("ack"));
    json_object_set_new(o, "w", json_string(writer));
    json_object_set_new(o, "n", json_integer((json_int_t)n));
    json_object_set_new(o, "ack_ms", json_integer(client_now_ms()));
    json_object_set_new(o, "ok", json_boolean(err == NULL));
    if (err)
        json_object_set_new(o, "err", json_string(err));
    return record(o);
}

void client_op_fields(json_t *j, const struct op *o)
{
    json_object_set_new(j, "op", json_string(lapse_op_name(o->op)));
    json_object_set_new(j, "id", json_string(o->id));
    if (o->kind != LAPSE_WHEN_NONE)
        json_object_set_new(j, o->kind == LAPSE_WHEN_ABS ? "at_ms" : "in_ms",
                            json_integer(o->when));
    if (o->op == LAPSE_OP_REPEAT)
        json_object_set_new(j, "period_ms", json_integer(o->period));
    if (o->has_payload)
        json_object_set_new(j, "payload", json_string(o->payload));
}

int client_record_op(const struct op *o, int64_t sent_ms)
{
    json_t *j = json_object();
    json_object_set_new(j, "t", json_string("op"));
    json_object_set_new(j, "w", json_string(writer));
    json_object_set_new(j, "n", json_integer((json_int_t)o->n));
    client_op_fields(j, o);
    json_object_set_new(j, "sent_ms", json_integer(sent_ms));
    return record(j);
}

/* ---- the lib way: the producer library in this process */

/* Records the op line and submits it. A refusal is acked at once. */
static int lib_submit(void *ctx, struct op *o)
{
    lapse_producer *p = ctx;
    int64_t sent = client_now_ms();
    if (o->kind == LAPSE_WHEN_ABS)
        o->when += sent;
    if (client_record_op(o, sent) < 0)
        return -1;
    struct lapse_cmd cmd = {
        .op = o->op,
        .id = o->id,
        .id_len = strlen(o->id),
        .when_kind = o->kind,
        .when_ms = o->when,
        .period_ms = o->period,
        .payload = o->has_payload ? o->payload : NULL,
        .payload_len = o->has_payload ? strlen(o->payload) : 0,
    };
    batch.n[batch.count] = o->n;
    batch.err[batch.count] = NULL;
    batch.count++;
    char err[256];
    if (lapse_producer_submit(p, &cmd, o->n, err, sizeof err) == -1) {
        batch.count--; /* never queued: acked failed now */
        return client_record_ack(o->n, err);
    }
    return 0; /* -2: reported through on_error, acked after the flush */
}

/* Flushes and writes the batch's acks. */
static int lib_flush(void *ctx)
{
    lapse_producer *p = ctx;
    char err[256];
    if (lapse_producer_flush(p, err, sizeof err) < 0)
        fprintf(stderr, "nemesis-client: flush: %s\n", err);
    int rc = 0;
    for (size_t i = 0; i < batch.count; i++) {
        if (client_record_ack(batch.n[i], batch.err[i]) < 0)
            rc = -1;
        free(batch.err[i]);
        batch.err[i] = NULL;
    }
    batch.count = 0;
    return rc;
}

static int lib_drain(void *ctx, int64_t wait_ms)
{
    (void)wait_ms;
    return lib_flush(ctx);
}

static void lib_close(void *ctx)
{
    lapse_producer_free(ctx);
}

static const struct client_way lib_way = {
    .name = "lib",
    .submit = lib_submit,
    .flush = lib_flush,
    .drain = lib_drain,
    .close = lib_close,
    .tick_ms = 20,
};

static void usage(FILE *out)
{
    fprintf(out, "usage: nemesis-client -c CONF --seed S --writer NAME --prefix P --ids N\n"
                 "                      --rate OPS_PER_S --seconds T --history FILE [--first-n K]\n"
                 "                      [--via lib|stdin|kafka] [--producer PATH]\n"
                 "                      [--brokers B --topic T --group G] [--drain-ms MS]\n"
                 "A seeded mix of touch/extend/watch/repeat/cancel over IDs P0..P(N-1), each op\n"
                 "recorded in FILE before it is submitted and its outcome after each flush.\n");
}

/* Parses a whole non-negative number into *out; -1 if it is not one. */
static int number(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || *s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *prefix = NULL, *history = NULL, *via = "lib";
    struct client_opts opts = {0};
    uint64_t seed = 0, ids = 0, rate = 0, seconds = 0, first_n = 0, drain_ms = 30000;
    int have_seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (!v) {
            bad = 1;
        } else if (strcmp(a, "-c") == 0) {
            opts.conf = v;
        } else if (strcmp(a, "--via") == 0) {
            via = v;
            bad = strcmp(v, "lib") && strcmp(v, "stdin") && strcmp(v, "kafka");
        } else if (strcmp(a, "--producer") == 0) {
            opts.producer = v;
        } else if (strcmp(a, "--brokers") == 0) {
            opts.brokers = v;
        } else if (strcmp(a, "--topic") == 0) {
            opts.topic = v;
        } else if (strcmp(a, "--group") == 0) {
            opts.group = v;
        } else if (strcmp(a, "--drain-ms") == 0) {
            bad = number(v, &drain_ms) < 0;
        } else if (strcmp(a, "--writer") == 0) {
            writer = v;
        } else if (strcmp(a, "--prefix") == 0) {
            prefix = v;
        } else if (strcmp(a, "--history") == 0) {
            history = v;
        } else if (strcmp(a, "--seed") == 0) {
            bad = number(v, &seed) < 0;
            have_seed = 1;
        } else if (strcmp(a, "--ids") == 0) {
            bad = number(v, &ids) < 0 || ids == 0;
        } else if (strcmp(a, "--rate") == 0) {
            bad = number(v, &rate) < 0 || rate == 0 || rate > 1000000;
        } else if (strcmp(a, "--seconds") == 0) {
            bad = number(v, &seconds) < 0;
        } else if (strcmp(a, "--first-n") == 0) {
            bad = number(v, &first_n) < 0;
        } else {
            fprintf(stderr, "nemesis-client: unknown option \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "nemesis-client: %s needs a %s\n", a, v ? "valid value" : "value");
            return 2;
        }
        i++;
    }
    if (!opts.conf || !prefix || !history || !have_seed || !ids || !rate) {
        fprintf(stderr, "nemesis-client: -c, --seed, --prefix, --ids, --rate and --history "
                        "are needed\n");
        usage(stderr);
        return 2;
    }
    history_fd = open(history, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (history_fd < 0) {
        fprintf(stderr, "nemesis-client: %s: %s\n", history, strerror(errno));
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    opts.seed = seed;
    const struct client_way *way = &lib_way;
    void *ctx;
    if (strcmp(via, "stdin") == 0) {
        way = &client_stdin_way;
        ctx = client_stdin_open(&opts);
    } else if (strcmp(via, "kafka") == 0) {
        way = &client_kafka_way;
        ctx = client_kafka_open(&opts);
    } else {
        char err[256];
        ctx = lapse_producer_open(opts.conf, on_error, NULL, err, sizeof err);
        if (!ctx)
            fprintf(stderr, "nemesis-client: %s\n", err);
    }
    if (!ctx)
        return 1;
    int64_t start = client_now_ms(), stop = start + (int64_t)seconds * 1000;
    uint64_t n = first_n, written = 0;
    int rc = 0;
    int64_t flushed = start;
    while (!stopping && rc == 0) {
        int64_t now = client_now_ms();
        if (now >= stop)
            break;
        uint64_t due = (uint64_t)(now - start) * rate / 1000;
        while (written < due && batch.count < BATCH_MAX && rc == 0) {
            struct op o;
            draw(seed, n++, prefix, ids, &o);
            written++;
            rc = way->submit(ctx, &o);
        }
        if (rc == 0 && now - flushed >= way->tick_ms - TICK_MS) {
            rc = way->flush(ctx);
            flushed = client_now_ms();
        }
        int64_t next = start + (int64_t)(written + 1) * 1000 / (int64_t)rate;
        int64_t wait = next - client_now_ms();
        if (wait > TICK_MS)
            wait = TICK_MS;
        if (wait > 0) {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)wait * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    if (rc == 0)
        rc = way->drain(ctx, (int64_t)drain_ms);
    way->close(ctx);
    if (rc < 0) {
        fprintf(stderr, "nemesis-client: %s: %s\n", history, strerror(errno));
        return 1;
    }
    fprintf(stderr, "nemesis-client: %" PRIu64 " ops, n %" PRIu64 "..%" PRIu64 "\n", written,
            first_n, n > first_n ? n - 1 : first_n);
    return 0;
}
