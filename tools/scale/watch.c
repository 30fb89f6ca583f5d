/*
 * watch — see watch.h. The split's progress is measured here, between
 * refreshes: the IDs left in the old shards (tools/scale/split.h: a ZSCAN of
 * each old shard) sampled with the monotonic clock; the rate is the drop
 * over the last RATE_SAMPLES refreshes, so a drain that starts or stops
 * mid-watch shows within a few of them. Without a drain the last moving ID
 * leaves when it falls due at the latest, which bounds the estimate.
 */
#include "watch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "health.h"
#include "inspect.h"
#include "layout.h"
#include "split.h"
#include "status.h"
#include "stop.h"

#define RATE_SAMPLES 10

struct progress {
    int64_t epoch;               /* the split the samples belong to */
    int n;                       /* samples held */
    int64_t at_ms[RATE_SAMPLES]; /* monotonic ms, oldest first */
    uint64_t left[RATE_SAMPLES]; /* IDs left in the old shards then */
};

static void progress_add(struct progress *pg, int64_t epoch, int64_t at, uint64_t left)
{
    if (pg->epoch != epoch)
        pg->n = 0, pg->epoch = epoch;
    if (pg->n == RATE_SAMPLES) {
        memmove(pg->at_ms, pg->at_ms + 1, (RATE_SAMPLES - 1) * sizeof pg->at_ms[0]);
        memmove(pg->left, pg->left + 1, (RATE_SAMPLES - 1) * sizeof pg->left[0]);
        pg->n--;
    }
    pg->at_ms[pg->n] = at;
    pg->left[pg->n++] = left;
}

/* The IDs gone from the old shards per second over the samples; -1 until
 * there are two. */
static double progress_rate(const struct progress *pg)
{
    if (pg->n < 2 || pg->at_ms[pg->n - 1] <= pg->at_ms[0])
        return -1;
    return ((double)pg->left[0] - (double)pg->left[pg->n - 1]) * 1000 /
           (double)(pg->at_ms[pg->n - 1] - pg->at_ms[0]);
}

/* One refresh: prints the block. */
static void refresh(const struct lapse_config *cfg, lapse_redis **nodes, struct progress *pg,
                    int interval_ms, int tty)
{
    char iso[40], err[512];
    printf("[%s] ", lapse_inspect_iso(lapse_clock_ms(), iso, sizeof iso));
    struct lapse_layout l;
    int rc = lapse_layout_load(nodes[0], cfg, &l, err, sizeof err);
    if (rc != 0) {
        printf("namespace %s: %s\n", cfg->ns, rc == 1 ? "not initialised" : err);
        return;
    }
    printf("namespace %s: %u shards, %s", cfg->ns, l.shards, lapse_layout_state_name(l.state));
    if (lapse_layout_changing(&l))
        printf(" %u -> %u", l.prev_shards, l.shards);
    printf(", epoch %" PRId64, l.epoch);
    if (tty)
        printf("   (every %g s; Ctrl-C ends)", interval_ms / 1000.0);
    printf(LAPSE_SCALE_SHARD_HEADER);
    uint64_t to_move = 0;
    int64_t last_due = -1;
    int complete = 1; /* every old shard counted: the total means something */
    for (uint32_t i = 0; i < lapse_layout_span(&l) && !lapse_stop; i++) {
        lapse_redis *r = nodes[l.node_of[i]];
        struct lapse_health h;
        if (lapse_health_read(r, cfg, i, &h, err, sizeof err) < 0) {
            printf("%-6u %-22s %s\n", i, lapse_redis_name(r), err);
            complete = 0;
            continue;
        }
        char overdue[32], move[32] = "-";
        lapse_scale_overdue_text(lapse_health_overdue_ms(&h), overdue, sizeof overdue);
        if (lapse_layout_gives(&l, i)) {
            struct lapse_split_left left;
            if (lapse_split_left(nodes, cfg, &l, i, &left, err, sizeof err) < 0) {
                complete = 0;
                snprintf(move, sizeof move, "?");
            } else {
                to_move += left.ids;
                if (left.last_due_ms > last_due)
                    last_due = left.last_due_ms;
                snprintf(move, sizeof move, "%" PRIu64, left.ids);
            }
        }
        printf(LAPSE_SCALE_SHARD_ROW, i, lapse_redis_name(r), h.pending, h.due, h.inflight, overdue,
               move, h.holder[0] ? h.holder : "none");
    }
    if (lapse_layout_changing(&l) && complete && !lapse_stop) {
        progress_add(pg, l.epoch, lapse_clock_mono_ms(), to_move);
        double rate = progress_rate(pg);
        int merge = l.state == LAPSE_LAYOUT_MERGING;
        printf("%s %u -> %u: %" PRIu64 " IDs left to check in the %s shards",
               merge ? "merge" : "split", l.prev_shards, l.shards, to_move,
               merge ? "retiring" : "old");
        if (to_move == 0)
            printf("; none left: lapse-scale finish ends the %s\n", merge ? "merge" : "split");
        else if (rate < 0)
            printf("; rate: measuring (next refresh)");
        else if (rate <= 0)
            printf("; not going down now");
        else
            printf("; going down %.1f/s, ends in ~%.0f s at this rate", rate, to_move / rate);
        char in[64];
        if (to_move > 0 && last_due >= 0)
            printf("; at the latest when the last falls due, %s (%s)\n",
                   lapse_inspect_iso(last_due, iso, sizeof iso),
                   lapse_scale_from_now(last_due, lapse_clock_ms(), in, sizeof in));
        else if (to_move > 0)
            printf("\n");
    }
    lapse_layout_free(&l);
}

int lapse_scale_watch(const struct lapse_config *cfg, lapse_redis **nodes, int interval_ms,
                      int count)
{
    lapse_stop_on_signals(0); /* a blocked read or sleep ends at once */
    int tty = isatty(STDOUT_FILENO);
    struct progress pg = {.epoch = -1};
    for (int n = 0; !lapse_stop && (count <= 0 || n < count); n++) {
        if (n > 0)
            lapse_clock_sleep_ms(interval_ms);
        if (lapse_stop)
            break;
        if (tty)
            printf("\033[H\033[2J"); /* home, clear: redraw in place like watch(1) */
        else if (n > 0)
            printf("\n");
        refresh(cfg, nodes, &pg, interval_ms, tty);
        fflush(stdout);
    }
    return 0;
}
