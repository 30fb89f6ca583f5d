/*
 * status — lapse-scale status [--json]: the layout; per node how it is
 * reached, its primary, replicas online and lag (per primary on a
 * cluster); per shard its node, pending, due, in flight, overdue and
 * active scanner; during a split what is left to move.
 *
 * The figures have one name wherever lapse-scale shows them (status,
 * status --watch, status --json, check, check --json): "due" is how many
 * IDs fell due and wait to be claimed; "overdue" how late the shard's
 * oldest undelivered deadline is (due, or in flight past its deadline:
 * tools/scale/health.h), "-" in text and null in JSON when nothing is.
 */
#ifndef LAPSE_SCALE_STATUS_H
#define LAPSE_SCALE_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "layout.h"
#include "redis.h"

/* Where the readers below send what goes wrong on the way (a shard that
 * cannot be read, a wait for a node that does not answer): one line each,
 * without a program name, the rest still read. The readers themselves
 * never print: lapse-scale passes lapse_scale_warn_stderr ("lapse-scale:
 * LINE" on stderr), lapse-console its log. NULL: dropped. */
typedef void lapse_scale_warn_fn(void *ctx, const char *line);
void lapse_scale_warn_stderr(void *ctx, const char *line);
/* Prints o as one line of compact JSON on stdout, where every --json of
 * lapse-scale goes. 0, or -1 (o NULL, or out of memory: nothing printed). */
int lapse_scale_print_json(const json_t *o);
/* Formats a line and passes it to warn (NULL: nothing). */
void lapse_scale_warnf(lapse_scale_warn_fn *warn, void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The shard table's header and row, shared by status and status --watch
 * so both say the same in the same columns. A row's arguments: shard,
 * node, pending, due, inflight (long long), overdue, to_move, scanner. */
#define LAPSE_SCALE_SHARD_HEADER                                                                 \
    "\n%-6s %-22s %10s %10s %9s %10s %10s  %s\n", "shard", "node", "pending", "due", "inflight", \
        "overdue", "to_move", "scanner"
#define LAPSE_SCALE_SHARD_ROW "%-6u %-22s %10lld %10lld %9lld %10s %10s  %s\n"

/* "12.3 s" (tenths, truncated) for an overdue of ms, "-" for -1 (nothing
 * due): the text status, status --watch show. Returns buf. */
const char *lapse_scale_overdue_text(int64_t overdue_ms, char *buf, size_t size);

/* A length of time as people read it, tenths of seconds below 100 s:
 * "4.3 s", "12 min 5 s", "3 h 12 min", "2 d 3 h" (truncated). Returns buf. */
const char *lapse_scale_duration(int64_t ms, char *buf, size_t size);

/* ms relative to now: "in 41.3 s", "4.3 s ago" (lapse_scale_duration).
 * Returns buf. */
const char *lapse_scale_from_now(int64_t ms, int64_t now, char *buf, size_t size);

/* The command that completes a layout change pending in layout:next
 * (written, not published): "split", "merge" or "finish". */
const char *lapse_scale_pending_cmd(const struct lapse_layout *next);

/* " (splitting 4 -> 8)", " (merging 8 -> 4)" or "" (stable): what the
 * displays print after the shard count. Returns buf. */
const char *lapse_scale_change_text(const struct lapse_layout *l, char *buf, size_t size);

/* What status --json prints, as one object (new reference): the layout,
 * nodes, memory, every shard (a shard that cannot be read has "error",
 * and *failed is set to 1), during a split or merge what is left to move.
 * Reads only; reads that get no reply are tried again for up to
 * redis.retry_timeout_ms. NULL with errstr when the layout cannot be read
 * (or out of memory). key_bytes 0: without each shard's
 * largest key's MEMORY USAGE (largest_key_bytes null; health.h). */
json_t *lapse_scale_status_json(const struct lapse_config *cfg, lapse_redis **nodes, int key_bytes,
                                lapse_scale_warn_fn *warn, void *ctx, int *failed, char *errstr,
                                size_t size);

/* Prints the status (status --due is due.h's). Returns the exit status: 0,
 * or 1 when the layout or a shard cannot be read (the reason on stderr;
 * the other shards are shown all the same). */
int lapse_scale_status(const struct lapse_config *cfg, lapse_redis **nodes, int as_json);

/* The layout, read again while no reply comes (up to
 * redis.retry_timeout_ms); status, get and finish read it through this. 0, or -1 with the reason printed on stderr (an
 * uninitialised namespace: how to initialise it). lapse_scale_layout_read
 * is the same without printing: the reason in errstr, a wait's line to warn. */
int lapse_scale_layout_read(const struct lapse_config *cfg, lapse_redis **nodes,
                            struct lapse_layout *l, lapse_scale_warn_fn *warn, void *ctx,
                            char *errstr, size_t size);
int lapse_scale_layout(const struct lapse_config *cfg, lapse_redis **nodes, struct lapse_layout *l);

#endif
