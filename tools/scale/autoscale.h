/*
 * autoscale — the scaler's rules (lapse-scale autoscale): from the figures
 * read so far, the layout and the clock, whether to split, merge, finish a
 * change under way, or do nothing, and why, in one line naming the figures
 * and the thresholds (docs/operating.md, "The scaler").
 *
 * A pure function over its arguments: no Redis, no clock, no output, so the
 * rules are unit-tested as they are (tests/unit/test_autoscale.c); the loop
 * that reads the figures and acts is autoscale_run.c.
 *
 * The rules, in order:
 *  1. A split or merge under way is finished (finish --drain), whoever
 *     started it: nothing else is done meanwhile.
 *  2. A reading is hot when any up figure is above its threshold (due IDs
 *     per second per shard, pending IDs per shard, the oldest overdue ID of
 *     a shard that has an active scanner, the busiest scanner's busy
 *     fraction, the worst scanner's lateness p99), cold when every down
 *     figure is at or below its threshold (due and pending per shard,
 *     overdue at most half of up_overdue_ms, no node above down_memory_pct
 *     or down_cpu_pct, no scanner busy above down_busy_pct, lateness p99 at
 *     most half of up_lateness_ms). A scanner figure not read (no
 *     scale.scanner_hosts, no scanner answered, no event fired) neither
 *     heats nor holds back. A reading that failed, or was taken while the
 *     layout was changing or had another shard count, is neither.
 *  3. Split (N -> 2N) when the readings have been hot without a break for
 *     up_window_ms; merge (N -> N/2) when cold for down_window_ms. One step
 *     at a time: the windows start again after any change.
 *  4. Not within cooldown_ms of the last change's end (nor of the scaler's
 *     start: it cannot know when the last change was), never above
 *     max_shards, never below min_shards.
 * The config refuses down thresholds that would let a merge call for a
 * split again (common/config_scale.c): after a merge each shard carries
 * twice the load.
 */
#ifndef LAPSE_SCALE_AUTOSCALE_H
#define LAPSE_SCALE_AUTOSCALE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* The figures of one reading (autoscale_read.c fills them). */
struct lapse_autoscale_reading {
    int64_t at_ms;      /* monotonic clock when read */
    uint32_t shards;    /* the layout's shard count */
    uint32_t prev;      /* its prev_shards (== shards when stable) */
    int changing;       /* 1: a split or merge under way */
    int merging;        /* with changing: 1 a merge, 0 a split */
    int ok;             /* 1: every shard and node answered (else why says why) */
    double due_per_s;   /* mean per shard: IDs due within the next minute / 60 */
    double pending;     /* mean per shard: IDs held (in flight included) */
    int64_t overdue_ms; /* the oldest overdue ID's age on a shard with an active
                           scanner, -1 when none is due there */
    double memory_pct;  /* the fullest node's used / maxmemory in %, -1 unknown */
    double cpu_pct;     /* the busiest node's Redis CPU, % of a core, -1 unknown */
    /* the scanners' own figures (scale.scanner_hosts), between this reading
     * and the shard's previous one; a shard whose scanner did not answer
     * leaves them to the others (and does not make the reading fail) */
    double busy;              /* the busiest scanner's busy fraction 0..1, -1 unknown */
    int64_t lateness_p99_ms;  /* the worst scanner's lateness p99 (a bucket's upper bound,
                                INT64_MAX above the last), -1 unknown or no event */
    uint32_t scanners_read;   /* shards whose scanner answered */
    uint32_t scanners_unread; /* shards whose scanner did not (scanner_hosts set) */
    char why[256];            /* without ok: what could not be read */
};

enum lapse_autoscale_action {
    LAPSE_AUTOSCALE_NONE = 0,
    LAPSE_AUTOSCALE_SPLIT,
    LAPSE_AUTOSCALE_MERGE,
    LAPSE_AUTOSCALE_FINISH, /* a split or merge is under way: finish --drain it */
};

struct lapse_autoscale_decision {
    enum lapse_autoscale_action action;
    uint32_t from, to; /* the shard counts (from == to for none) */
    char reason[1024]; /* one line: the figures, the thresholds, the windows */
};

/* The action's name: "none", "split", "merge", "finish". */
const char *lapse_autoscale_action_name(enum lapse_autoscale_action a);

/* 1 when reading r calls for a split under cfg's thresholds, else 0. */
int lapse_autoscale_hot(const struct lapse_config *cfg, const struct lapse_autoscale_reading *r);

/* 1 when reading r allows a merge under cfg's thresholds, else 0. */
int lapse_autoscale_cold(const struct lapse_config *cfg, const struct lapse_autoscale_reading *r);

/*
 * Decides from the readings h[0..n-1] (oldest first, the last one the
 * current layout and figures), the end of the last change (or the
 * scaler's start) last_change_ms and now_ms, both on the readings'
 * monotonic clock, into *d. Reads cfg->scale_* only. Always fills *d.
 */
void lapse_autoscale_decide(const struct lapse_config *cfg, const struct lapse_autoscale_reading *h,
                            size_t n, int64_t last_change_ms, int64_t now_ms,
                            struct lapse_autoscale_decision *d);

/* The readings lapse_autoscale_decide still needs at now_ms: the index of
 * the first one younger than the longer window plus one interval (those
 * before it may be dropped). */
size_t lapse_autoscale_keep_from(const struct lapse_config *cfg,
                                 const struct lapse_autoscale_reading *h, size_t n, int64_t now_ms);

#endif
