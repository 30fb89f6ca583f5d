/*
 * client_stdin — nemesis-client's stdin way: each batch is one
 * lapse-producer run, its lines on the producer's stdin, as a shell
 * pipeline or a cron job would write them.
 *
 * Outcomes, from what the producer promises (docs/protocol.md, "The
 * producer protocol"): exit 0, every line applied; exit 1, the lines it
 * named ("line N: reason") were not, and the others were when nothing but
 * such lines (and its waiting notes) was printed; anything else (another
 * status, an unknown message) acks every line ok:false (it may or may not
 * have applied); killed by a signal (the nemesis' kill -9): no acks, the
 * outcome stays unknown.
 *
 * About 1 batch in 4 carries one malformed line, never recorded as an op:
 * the producer must report it and apply its neighbours.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

#define LINES_MAX 4096

struct stdin_way {
    const char *conf, *producer;
    uint64_t seed, batches;
    char *buf; /* the batch's lines */
    size_t len, cap;
    uint64_t n[LINES_MAX]; /* op n of line i + 1, or UINT64_MAX: the bad line */
    size_t lines;
};

static int append(struct stdin_way *w, const char *text, size_t len)
{
    if (w->len + len > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 65536;
        while (cap < w->len + len)
            cap *= 2;
        char *b = realloc(w->buf, cap);
        if (!b)
            return -1;
        w->buf = b;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, text, len);
    w->len += len;
    return 0;
}

static int stdin_submit(void *ctx, struct op *o)
{
    struct stdin_way *w = ctx;
    if (w->lines + 2 > LINES_MAX && w->lines > 0) {
        errno = ENOBUFS;
        return -1;
    }
    int64_t sent = client_now_ms();
    if (o->kind == LAPSE_WHEN_ABS)
        o->when += sent;
    /* the bad line: once in a batch of about 1 in 4, before its first op */
    if (w->lines == 0 && (w->seed + w->batches) % 4 == 0) {
        const char bad[] = "touch nemesis-bad-line +soon\n";
        if (append(w, bad, sizeof bad - 1) < 0)
            return -1;
        w->n[w->lines++] = UINT64_MAX;
    }
    if (client_record_op(o, sent) < 0)
        return -1;
    char line[256];
    int len;
    const char *name = lapse_op_name(o->op);
    const char *at = o->kind == LAPSE_WHEN_ABS ? "@" : "+";
    if (o->op == LAPSE_OP_CANCEL)
        len = snprintf(line, sizeof line, "cancel %s\n", o->id);
    else if (o->op == LAPSE_OP_REPEAT)
        len = snprintf(line, sizeof line, "repeat %s %s%" PRId64 " %" PRId64 "%s%s\n", o->id, at,
                       o->when, o->period, o->has_payload ? " " : "",
                       o->has_payload ? o->payload : "");
    else
        len = snprintf(line, sizeof line, "%s %s %s%" PRId64 "%s%s\n", name, o->id, at, o->when,
                       o->has_payload ? " " : "", o->has_payload ? o->payload : "");
    if (len < 0 || (size_t)len >= sizeof line || append(w, line, (size_t)len) < 0)
        return -1;
    w->n[w->lines++] = o->n;
    return 0;
}

/* The line number a "line N: reason" message names, or 0. */
static size_t named_line(const char *msg, const char **reason)
{
    if (strncmp(msg, "line ", 5) != 0)
        return 0;
    char *end;
    unsigned long v = strtoul(msg + 5, &end, 10);
    if (end == msg + 5 || *end != ':')
        return 0;
    *reason = end[1] == ' ' ? end + 2 : end + 1;
    return (size_t)v;
}

/* Runs the producer on the batch. Returns its wait status, or -1. Its
 * stderr is left in errf. */
static int run_producer(struct stdin_way *w, FILE *errf)
{
    int in[2];
    if (pipe(in) < 0)
        return -1;
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(fileno(errf), 2);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1);
        close(in[0]);
        close(in[1]);
        execl(w->producer, w->producer, "-c", w->conf, (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", w->producer, strerror(errno));
        _exit(127);
    }
    close(in[0]);
    for (size_t off = 0; off < w->len;) {
        ssize_t k = write(in[1], w->buf + off, w->len - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            break; /* EPIPE: killed; its status says so */
        off += (size_t)k;
    }
    close(in[1]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return status;
}

static int stdin_flush(void *ctx)
{
    struct stdin_way *w = ctx;
    if (w->lines == 0)
        return 0;
    FILE *errf = tmpfile();
    if (!errf)
        return -1;
    int status = run_producer(w, errf);
    int rc = 0;
    if (status == -1) {
        rc = -1;
    } else if (WIFSIGNALED(status)) {
        fprintf(stderr,
                "nemesis-client: a batch of %zu lines: lapse-producer killed by signal %d "
                "(outcomes unknown)\n",
                w->lines, WTERMSIG(status));
    } else {
        int code = WEXITSTATUS(status);
        char **why = calloc(w->lines, sizeof *why);
        char other[256] = "";
        char msg[1024];
        rewind(errf);
        while (why && fgets(msg, sizeof msg, errf)) {
            msg[strcspn(msg, "\n")] = '\0';
            const char *reason;
            size_t ln = named_line(msg, &reason);
            if (ln >= 1 && ln <= w->lines) {
                if (!why[ln - 1])
                    why[ln - 1] = strdup(reason);
            } else if (!strstr(msg, "waiting for Redis") && !other[0]) {
                snprintf(other, sizeof other, "%.200s", msg);
            }
        }
        for (size_t i = 0; why && i < w->lines && rc == 0; i++) {
            if (w->n[i] == UINT64_MAX) {
                if (!why[i])
                    fprintf(stderr, "nemesis-client: the bad line was not reported\n");
                continue;
            }
            const char *err = NULL;
            if (code != 0 && code != 1)
                err = other[0] ? other : "lapse-producer failed";
            else if (why[i])
                err = why[i];
            else if (code == 1 && other[0])
                err = other;
            rc = client_record_ack(w->n[i], err);
        }
        for (size_t i = 0; why && i < w->lines; i++)
            free(why[i]);
        if (!why)
            rc = -1;
        free(why);
    }
    fclose(errf);
    w->len = 0;
    w->lines = 0;
    w->batches++;
    return rc;
}

static int stdin_drain(void *ctx, int64_t wait_ms)
{
    (void)wait_ms;
    return stdin_flush(ctx);
}

static void stdin_close(void *ctx)
{
    struct stdin_way *w = ctx;
    free(w->buf);
    free(w);
}

void *client_stdin_open(const struct client_opts *opts)
{
    if (!opts->producer || !opts->conf) {
        fprintf(stderr, "nemesis-client: --via stdin needs -c and --producer\n");
        return NULL;
    }
    struct stdin_way *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->conf = opts->conf;
    w->producer = opts->producer;
    w->seed = opts->seed;
    return w;
}

const struct client_way client_stdin_way = {
    .name = "stdin",
    .submit = stdin_submit,
    .flush = stdin_flush,
    .drain = stdin_drain,
    .close = stdin_close,
    .tick_ms = 300,
};
