/*
 * lapse-producer: applies the line protocol read on stdin, or, with
 * --from-kafka, the command messages and watchdog signals of ingress.topic
 * (producer/ingress/ingress.c does that; this file only wires it up).
 *
 * Reads stdin in large chunks, parses each complete line, and queues it in
 * the producer library; whenever no more input is waiting (or at EOF) it
 * flushes, so a lone line in a live stream is applied at once while a fast
 * stream is batched. Bad lines are reported as "line N: reason" and skipped.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "ingress.h"
#include "layout.h"
#include "line.h"
#include "log.h"
#include "producer.h"
#include "redis.h"
#include "stop.h"
#include "waiting.h"

/* The longest line we accept: op, id, when, period, payload and separators. */
#define LINE_MAX_BYTES (LAPSE_PAYLOAD_MAX + LAPSE_ID_MAX + 256)

/* Parsed lines between their prefetch hint and their submission: enough to
 * overlap a few cache misses, few enough to stay in L1. */
#define PREFETCH 16

struct run {
    lapse_producer *p;
    unsigned long long rejected; /* lines refused, by us or by Redis */
    struct {
        struct lapse_cmd cmd; /* points into the read buffer */
        unsigned long long lineno;
    } pending[PREFETCH]; /* a ring: `first`, then npending - 1 more */
    size_t first, npending;
};

static void on_error(void *ctx, uint64_t tag, const char *reason)
{
    struct run *run = ctx;
    run->rejected++;
    fprintf(stderr, "line %llu: %s\n", (unsigned long long)tag, reason);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: lapse-producer -c FILE [--from-kafka]\n"
                 "Reads commands on stdin, one a line, and applies them:\n");
    for (int op = LAPSE_OP_TOUCH; lapse_op_args(op); op++) /* every op the parser knows */
        fprintf(out, "  %-6s %s\n", lapse_op_name(op), lapse_op_args(op));
    fprintf(out, "<when> is +<ms> (from now, on the shard's Redis clock) or @<unix_ms>;\n"
                 "watch is extend with recovery on (lapse-producer(1)).\n"
                 "Exit status: 0 every line applied; 1 a line rejected, or Redis unreachable\n"
                 "for redis.retry_timeout_ms; 2 bad options or config; 78 Redis refused us\n"
                 "(password, user, ACL, TLS).\n"
                 "With --from-kafka, consumes ingress.topic as group ingress.group instead:\n"
                 "JSON command messages and raw signals for the watchdog rules (see\n"
                 "lapse.conf.example); runs until SIGTERM/SIGINT.\n");
}

static void submit(struct run *run, const struct lapse_cmd *cmd, unsigned long long lineno)
{
    char why[256];
    switch (lapse_producer_submit(run->p, cmd, lineno, why, sizeof why)) {
    case -1: /* refused: a rule of the protocol */
        run->rejected++;
        fprintf(stderr, "line %llu: %s\n", lineno, why);
        break;
    case -2: /* the batch it completed failed: each line was reported */
        log_error("%s", why);
        break;
    }
}

/* Submits the oldest parsed line waiting in the pipeline. */
static void submit_oldest(struct run *run)
{
    submit(run, &run->pending[run->first].cmd, run->pending[run->first].lineno);
    run->first = (run->first + 1) % PREFETCH;
    run->npending--;
}

/* Submits the parsed lines waiting in the pipeline, oldest first. */
static void drain(struct run *run)
{
    while (run->npending > 0)
        submit_oldest(run);
}

/* Parsed lines wait PREFETCH - 1 lines after their prefetch hint before they
 * are submitted (see lapse_producer_prefetch); they point into the read
 * buffer, so the caller drains them before it moves or reuses it. */
static void handle_line(struct run *run, const char *line, size_t len, unsigned long long lineno)
{
    struct lapse_cmd cmd;
    char why[256];
    switch (lapse_line_parse(line, len, &cmd, why, sizeof why)) {
    case LAPSE_LINE_BLANK:
        return;
    case LAPSE_LINE_ERROR:
        drain(run); /* reports stay in line order */
        run->rejected++;
        fprintf(stderr, "line %llu: %s\n", lineno, why);
        return;
    case LAPSE_LINE_OK:
        lapse_producer_prefetch(run->p, cmd.id, cmd.id_len);
        if (run->npending == PREFETCH)
            submit_oldest(run);
        size_t k = (run->first + run->npending++) % PREFETCH;
        run->pending[k].cmd = cmd;
        run->pending[k].lineno = lineno;
        return;
    }
}

static int input_waiting(void)
{
    struct pollfd pfd = {.fd = 0, .events = POLLIN};
    return poll(&pfd, 1, 0) > 0;
}

/* Logs what is due about the nodes' maxmemory-policy (producer.h). */
static void log_notices(lapse_producer *p)
{
    int error = 0;
    const char *m;
    while ((m = lapse_producer_notice(p, &error)))
        LAPSE_LOG(error ? LAPSE_LOG_ERROR : LAPSE_LOG_WARN, "%s", m);
}

/* Reads stdin to EOF; returns 0, or -1 when the producer itself failed. */
static int serve(struct run *run)
{
    char *buf = malloc(LINE_MAX_BYTES + 65536);
    if (!buf) {
        log_error("out of memory");
        return -1;
    }
    log_notices(run->p);
    size_t have = 0, cap = LINE_MAX_BYTES + 65536;
    unsigned long long lineno = 0;
    int skipping = 0; /* inside an over-long line: drop bytes to its '\n' */
    char why[256];
    while (!lapse_stop) {
        ssize_t n = read(0, buf + have, cap - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            log_error("stdin: %s", strerror(errno));
            break;
        }
        int eof = n == 0;
        have += (size_t)n;
        size_t pos = 0;
        for (;;) {
            char *nl = memchr(buf + pos, '\n', have - pos);
            if (!nl)
                break;
            size_t len = (size_t)(nl - (buf + pos));
            if (skipping)
                skipping = 0; /* the end of an over-long line, counted already */
            else
                handle_line(run, buf + pos, len, ++lineno);
            pos += len + 1;
        }
        drain(run);
        log_notices(run->p);
        memmove(buf, buf + pos, have - pos);
        have -= pos;
        if (have == cap) { /* no '\n' within the longest line allowed */
            if (!skipping) {
                lineno++;
                run->rejected++;
                fprintf(stderr, "line %llu: line longer than %d bytes\n", lineno, LINE_MAX_BYTES);
            }
            skipping = 1;
            have = 0;
        }
        if (eof) {
            if (have && !skipping)
                handle_line(run, buf, have, ++lineno); /* last line without '\n' */
            drain(run);
            break;
        }
        if (!input_waiting() && lapse_producer_flush(run->p, why, sizeof why) < 0)
            log_error("%s", why);
    }
    free(buf);
    if (lapse_producer_flush(run->p, why, sizeof why) < 0) {
        log_error("%s", why);
        return -1;
    }
    return 0;
}

/* The start's wait for the first node (say_waiting); begun by start(). */
static struct lapse_waiting waiting;

/* lapse_producer_new_waiting's on_wait: says at once that it waits, how
 * long at most, for which node of the config, and why; then again about
 * every 10 s with the time left (waiting.h). */
static void say_waiting(void *ctx, const char *why, int wait_ms)
{
    char line[768];
    (void)ctx;
    (void)wait_ms;
    if (lapse_waiting_line(&waiting, why, lapse_clock_mono_ms(), line, sizeof line))
        log_warn("%s", line);
}

/* The other nodes, once each at start: one that does not answer is named
 * now (its line of the config, how long its writes will wait, why), not
 * only once its writes fail. It is not waited for here: its writes wait
 * for it, and only its lines are reported failed if it stays down (a
 * node that is down: docs/operating.md). */
static void say_nodes_down(const struct lapse_config *cfg)
{
    for (size_t i = 1; i < cfg->nnodes; i++) {
        lapse_redis *r = lapse_node_open(cfg, i);
        if (r && lapse_redis_ensure(r) < 0 && !lapse_redis_refused(r)) {
            struct lapse_waiting w;
            char line[768];
            lapse_waiting_init(&w, cfg, i, lapse_clock_mono_ms());
            if (lapse_waiting_line(&w, lapse_redis_errstr(r), lapse_clock_mono_ms(), line,
                                   sizeof line))
                log_warn("%s; its writes wait for it, then their lines are reported failed", line);
        }
        lapse_redis_free(r);
    }
}

/* lapse_producer_new_waiting, saying what it waits for (say_waiting). */
static lapse_producer *start(const struct lapse_config *cfg, lapse_producer_error_cb *errors,
                             void *ctx, char *err, size_t size)
{
    lapse_waiting_init(&waiting, cfg, 0, lapse_clock_mono_ms());
    lapse_producer *p = lapse_producer_new_waiting(cfg, errors, say_waiting, ctx, err, size);
    if (p)
        say_nodes_down(cfg);
    return p;
}

/* The exit status when lapse_producer_new failed (errno says how): 78 when
 * Redis refused us (EX_CONFIG: a restart will not help, see the units), 0
 * when a signal stopped the start, else 1 (Redis unreachable for
 * redis.retry_timeout_ms, the namespace not initialised: a restart may
 * help). The reason goes to stderr unless stopped. */
static int start_failed(const char *err)
{
    int why = errno;
    if (why == EINTR)
        return 0;
    log_error("%s", err);
    return why == EACCES ? EX_CONFIG : 1;
}

/*
 * --from-kafka: the ingress's heap is kept once grown. librdkafka's fetch
 * thread allocates every message it reads and our reaper thread frees it;
 * with glibc's defaults the heap was given back and faulted in again, 4 kB
 * at a time, at each swing of the consumer's queue (malloc and page faults
 * were half the ingress's CPU with a backlog: tests/bench/ingress-run,
 * 2026-11-29). What bounds what is kept: the queue's bound
 * (queued.min.messages), the messages held uncommitted, and the reaper's
 * backlog (LAPSE_REAPER_BACKLOG).
 * (Transparent huge pages, glibc.malloc.hugetlb=1, cut the CPU further but
 * stalled the fetch thread at its page faults: 0.6 of the rate with slack.)
 */
static void ingress_heap(void)
{
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_TOP_PAD, 64 << 20);
}

/* --from-kafka: the ingress owns the producer's error callback. Returns the
 * exit status. */
static int serve_kafka(const struct lapse_config *cfg)
{
    char err[512];
    lapse_ingress *ing = lapse_ingress_new(cfg, err, sizeof err);
    if (!ing) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    lapse_producer *p = start(cfg, lapse_ingress_on_error, ing, err, sizeof err);
    if (!p) {
        int rc = start_failed(err);
        lapse_ingress_free(ing);
        return rc;
    }
    int rc = lapse_ingress_serve(ing, p, &lapse_stop);
    lapse_producer_free(p);
    lapse_ingress_free(ing);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int from_kafka = 0;
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"from-kafka", no_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        if (ch == 'c')
            path = optarg;
        else if (ch == 'k')
            from_kafka = 1;
        else if (ch == 'h') {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "lapse-producer: unexpected argument \"%s\" (try --help)\n", argv[optind]);
        return 2;
    }
    if (!path) {
        fprintf(stderr, "lapse-producer: -c FILE is required\n");
        return 2;
    }
    if (from_kafka)
        ingress_heap();
    lapse_log_init("lapse-producer", LAPSE_LOG_INFO);
    struct lapse_config cfg;
    char err[2048]; /* every problem of a config, a line each */
    if (lapse_config_load(&cfg, path, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    lapse_log_init("lapse-producer", cfg.log_level);
    /* before anything slow (connecting): a SIGTERM during start-up is a
     * clean stop too, never death by the default action */
    lapse_stop_on_signals(1);
    if (from_kafka) {
        int rc = serve_kafka(&cfg);
        lapse_config_free(&cfg);
        return rc;
    }
    struct run run = {0};
    run.p = start(&cfg, on_error, &run, err, sizeof err);
    if (!run.p) {
        int rc = start_failed(err);
        lapse_config_free(&cfg);
        return rc;
    }

    int rc = serve(&run);
    struct lapse_producer_stats st;
    lapse_producer_stats(run.p, &st);
    log_info("done: %llu lines rejected; operations: %llu submitted, %llu coalesced, "
             "%llu absorbed by slack, %llu written in %llu batches, %llu failed",
             run.rejected, (unsigned long long)st.submitted, (unsigned long long)st.coalesced,
             (unsigned long long)st.absorbed, (unsigned long long)st.written,
             (unsigned long long)st.flushes, (unsigned long long)st.failed);
    lapse_producer_free(run.p);
    lapse_config_free(&cfg);
    if (rc < 0)
        return 1;
    return run.rejected ? 1 : 0;
}
