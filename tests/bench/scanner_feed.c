/*
 * lapse-bench-scanner-feed: paced lapse-producer input for `make
 * bench-scanner` (tests/bench/scanner-run). Deadlines are absolute (@unix ms
 * of this host's clock, which is also Redis's: same host), so lateness can
 * be read off the events.
 *
 *   due COUNT RATE START_MS LEAD_MS PREFIX
 *       COUNT IDs falling due at RATE a second from START_MS: line i is
 *       "touch PREFIX%08d @(START_MS + i * 1000 / RATE)", written LEAD_MS
 *       before its deadline (so a deadline is always scheduled LEAD_MS ahead).
 *       It stays (idle, its stdout open) until LINGER_MS after the last
 *       deadline, so the producer reading it runs as long as IDs fall due.
 *
 *   resets POP RATE SECONDS FIRE_LEAD_MS HOLD_LEAD_MS FIRE_EVERY PREFIX
 *       a population of POP IDs reset round-robin at RATE lines a second for
 *       SECONDS: line k resets ID k % POP in round k / POP. One reset in
 *       FIRE_EVERY ((id + round) % FIRE_EVERY == 0) is "touch ID @(now +
 *       FIRE_LEAD_MS)" and fires before the ID's next reset; the others are
 *       "extend ID @(now + HOLD_LEAD_MS)", a deadline the next reset pushes
 *       on before it falls due (HOLD_LEAD_MS > POP / RATE s) — a watchdog.
 *       RATE 0: unpaced, as fast as the reader takes lines (its capacity),
 *       "now" read every CHUNK lines. At the end (SECONDS, or a signal) it
 *       writes "cancel ID" for the whole population: nothing it set is left
 *       to fire later (what was claimed already still fires).
 *
 * Pacing: the lines of a SLICE_MS slice are written when the slice starts
 * (absolute sleeps); a reader slower than RATE makes the feeder fall behind,
 * it never skips a line. Every PROGRESS_MS (resets) it appends "unix_ms
 * lines lag_ms" to the file in $FEED_PROGRESS (if set), taken right after a
 * write returned: lines = written so far (taken by the reader, give or take
 * a pipe buffer), lag = how far behind schedule the write finished. A stalled
 * reader shows as a gap in the samples followed by a catch-up.
 * The summary goes to stderr as one "key=value ..." line. Bounded by COUNT
 * (due) or SECONDS (resets: it stops then, whatever is left). SIGTERM/SIGINT
 * end it cleanly after the current write: only whole lines are ever written,
 * so the producer sees a clean end of input.
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glue.h"

#define PROG "lapse-bench-scanner-feed"
#define SLICE_MS 5
#define PROGRESS_MS 100
#define LINGER_MS 1000 /* due: idle after the last deadline */
#define CHUNK 1000     /* unpaced: lines between clock reads */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: " PROG " due COUNT RATE START_MS LEAD_MS PREFIX\n"
            "       " PROG " resets POP RATE SECONDS FIRE_LEAD_MS HOLD_LEAD_MS FIRE_EVERY PREFIX\n"
            "(see tests/bench/scanner_feed.c)\n");
}

static void sleep_until_ms(int64_t t)
{
    struct timespec ts = {(time_t)(t / 1000), (long)(t % 1000) * 1000000L};
    while (!stop && clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Progress samples for the driver (FEED_PROGRESS). */
struct progress {
    FILE *f;
    int64_t next_ms;
    int64_t max_lag_ms;
};

static void progress_note(struct progress *p, int64_t now, int64_t lines, int64_t lag)
{
    if (lag > p->max_lag_ms)
        p->max_lag_ms = lag;
    if (!p->f || now < p->next_ms)
        return;
    fprintf(p->f, "%" PRId64 " %" PRId64 " %" PRId64 "\n", now, lines, lag);
    fflush(p->f);
    p->next_ms = now + PROGRESS_MS;
}

static int feed_due(int64_t count, int64_t rate, int64_t start, int64_t lead, const char *prefix,
                    struct progress *p)
{
    int64_t i = 0, t0 = wall_ms();
    while (i < count && !stop) {
        /* write every line whose write time (deadline - lead) has come */
        int64_t now = wall_ms();
        int64_t upto = (now + lead - start + 1) * rate / 1000; /* lines due to be written */
        if (upto > count)
            upto = count;
        int64_t sched = start - lead + i * 1000 / rate; /* when line i was due out */
        for (; i < upto; i++)
            if (printf("touch %s%08" PRId64 " @%" PRId64 "\n", prefix, i, start + i * 1000 / rate) <
                0)
                return -1;
        if (fflush(stdout) != 0)
            return -1;
        progress_note(p, now, i, now > sched ? now - sched : 0);
        if (i < count) {
            int64_t next = start - lead + i * 1000 / rate;
            int64_t wake = now + SLICE_MS;
            sleep_until_ms(next > wake ? next : wake);
        }
    }
    int64_t last = start + (count - 1) * 1000 / rate;
    fprintf(stderr, "lines=%" PRId64 " elapsed_ms=%" PRId64 " max_lag_ms=%" PRId64 "\n", i,
            wall_ms() - t0, p->max_lag_ms);
    if (!stop && wall_ms() < last + LINGER_MS) /* (stopped: the reader may end now) */
        sleep_until_ms(last + LINGER_MS);
    return 0;
}

static int feed_resets(int64_t pop, int64_t rate, int64_t seconds, int64_t fire_lead,
                       int64_t hold_lead, int64_t fire_every, const char *prefix,
                       struct progress *p)
{
    int64_t k = 0, t0 = wall_ms(), fires = 0, end = t0 + seconds * 1000;
    for (;;) {
        int64_t now = wall_ms();
        if (stop || now >= end)
            break;
        /* paced: every line whose time has come; unpaced: one chunk */
        int64_t upto = rate ? (now - t0 + 1) * rate / 1000 : k + CHUNK;
        int64_t sched = rate ? t0 + k * 1000 / rate : now;
        for (; k < upto; k++) {
            int64_t id = k % pop, round = k / pop;
            int fire = (id + round) % fire_every == 0;
            fires += fire;
            if (printf("%s %s%08" PRId64 " @%" PRId64 "\n", fire ? "touch" : "extend", prefix, id,
                       now + (fire ? fire_lead : hold_lead)) < 0)
                return -1;
        }
        if (fflush(stdout) != 0)
            return -1;
        int64_t done = wall_ms();
        progress_note(p, done, k, rate && done > sched ? done - sched : 0);
        if (rate)
            sleep_until_ms(now + SLICE_MS);
    }
    p->next_ms = 0; /* a last sample */
    progress_note(p, wall_ms(), k, 0);
    for (int64_t id = 0; id < pop; id++)
        if (printf("cancel %s%08" PRId64 "\n", prefix, id) < 0)
            return -1;
    if (fflush(stdout) != 0)
        return -1;
    int64_t elapsed = wall_ms() - t0;
    fprintf(stderr,
            "lines=%" PRId64 " fires=%" PRId64 " elapsed_ms=%" PRId64 " lines_per_s=%.0f"
            " max_lag_ms=%" PRId64 "\n",
            k, fires, elapsed, elapsed > 0 ? (double)k * 1000.0 / (double)elapsed : 0.0,
            p->max_lag_ms);
    return 0;
}

int main(int argc, char **argv)
{
    int64_t a, b, c, d, e, f;
    int rc;
    if (glue_start(argc, argv, usage))
        return 0;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* a write in progress completes: whole lines only */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct progress p = {0};
    const char *pf = getenv("FEED_PROGRESS");
    if (pf && *pf && !(p.f = fopen(pf, "w"))) {
        fprintf(stderr, PROG ": %s: %s\n", pf, strerror(errno));
        return 1;
    }
    if (argc == 7 && !strcmp(argv[1], "due") && parse_i64(argv[2], 1, 99999999, &a) == 0 &&
        parse_i64(argv[3], 1, 10000000, &b) == 0 && parse_i64(argv[4], 0, INT64_MAX / 4, &c) == 0 &&
        parse_i64(argv[5], 0, 3600000, &d) == 0 && strlen(argv[6]) <= 32) {
        rc = feed_due(a, b, c, d, argv[6], &p);
    } else if (argc == 9 && !strcmp(argv[1], "resets") &&
               parse_i64(argv[2], 1, 99999999, &a) == 0 &&
               parse_i64(argv[3], 0, 10000000, &b) == 0 && parse_i64(argv[4], 1, 3600, &c) == 0 &&
               parse_i64(argv[5], 1, 3600000, &d) == 0 && parse_i64(argv[6], 1, 3600000, &e) == 0 &&
               parse_i64(argv[7], 1, 1000000, &f) == 0 && strlen(argv[8]) <= 32) {
        rc = feed_resets(a, b, c, d, e, f, argv[8], &p);
    } else {
        usage(stderr);
        return 2;
    }
    if (p.f)
        fclose(p.f);
    if (rc < 0) {
        fprintf(stderr, PROG ": stdout: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}
