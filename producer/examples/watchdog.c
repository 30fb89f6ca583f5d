/*
 * A device-signal pipeline embedding lapse: every signal pushes the device's
 * "offline" deadline 60 s ahead; the batch is flushed when the input goes
 * quiet. Build: docs/library.md, "Building a program with the library".
 * Input: one device ID per line on stdin (blank lines are skipped).
 *
 * Written to be copied into production, so it keeps three rules:
 *  - a line is read whole: a line too long to be an ID is refused once, as
 *    a whole, never cut into pieces that would pass as IDs of their own;
 *  - a queued signal is not held back: when no more input is waiting, the
 *    queue is flushed, or a device that signals rarely would go offline
 *    while its signal waited for the batch to fill;
 *  - the exit status is non-zero when any line was refused or not applied.
 *
 * Usage: watchdog [CONFIG] (lapse.conf when not given); --help.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "producer.h"

static uint64_t refused; /* lines refused or not applied */

static void on_error(void *ctx, uint64_t tag, const char *reason)
{
    (void)ctx;
    refused++;
    fprintf(stderr, "line %" PRIu64 ": not applied: %s\n", tag, reason);
}

/* 1 when stdin has input waiting now (or at its end: read will say). */
static int input_waiting(void)
{
    struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
    return poll(&pfd, 1, 0) != 0;
}

/* Line n ended: `len` bytes at `line` (without "\n"), or when too_long > 0,
 * a line of that many bytes, not kept. Submitted, or refused once. */
static void line_end(lapse_producer *p, const char *line, size_t len, size_t too_long, uint64_t n)
{
    char err[256];
    if (too_long > 0) {
        refused++;
        fprintf(stderr, "line %" PRIu64 ": refused: %zu bytes, an ID has at most %d\n", n, too_long,
                LAPSE_ID_MAX);
        return;
    }
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len == 0)
        return;
    int rc =
        lapse_producer_extend(p, line, len, LAPSE_WHEN_REL, 60000, NULL, 0, n, err, sizeof err);
    if (rc == -1) { /* refused at once; -2 was reported through on_error */
        refused++;
        fprintf(stderr, "line %" PRIu64 ": %s\n", n, err);
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: watchdog [CONFIG (lapse.conf)] < device IDs, one a line\n"
                 "Pushes each device's deadline 60 s ahead. Exit status: 0 every line\n"
                 "applied; 1 a line refused or not applied, or no start; 2 bad arguments.\n");
}

int main(int argc, char **argv)
{
    char err[256];
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    /* a config path never starts with '-' here: "./-odd.conf" names one */
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fprintf(stderr, "watchdog: %s \"%s\"\n",
                argc > 2 ? "unexpected argument" : "unknown option", argv[argc > 2 ? 2 : 1]);
        usage(stderr);
        return 2;
    }
    /* A line longer than an ID cannot be one: only its length is kept. */
    char buf[LAPSE_ID_MAX + 2];
    size_t have = 0, too_long = 0; /* bytes held; > 0: the line is overlong */
    uint64_t n = 0;
    lapse_producer *p =
        lapse_producer_open(argc > 1 ? argv[1] : "lapse.conf", on_error, NULL, err, sizeof err);
    if (!p) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    char in[4096];
    ssize_t got;
    for (;;) {
        if (lapse_producer_pending(p) > 0 && !input_waiting() &&
            lapse_producer_flush(p, err, sizeof err) < 0)
            fprintf(stderr, "%s\n", err); /* each operation went to on_error */
        got = read(STDIN_FILENO, in, sizeof in);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        for (ssize_t i = 0; i < got; i++) {
            if (in[i] == '\n') {
                line_end(p, buf, have, too_long, ++n);
                have = too_long = 0;
            } else if (too_long) {
                too_long++;
            } else if (have == sizeof buf) {
                too_long = have + 1;
            } else {
                buf[have++] = in[i];
            }
        }
    }
    if (got < 0)
        fprintf(stderr, "stdin: %s\n", strerror(errno));
    if (have > 0 || too_long > 0) /* a last line without "\n" */
        line_end(p, buf, have, too_long, ++n);
    int rc = lapse_producer_flush(p, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    lapse_producer_free(p);
    if (refused > 0)
        fprintf(stderr, "%" PRIu64 " of %" PRIu64 " lines refused or not applied\n", refused, n);
    return rc < 0 || got < 0 || refused > 0;
}
