/*
 * split_priv — what split.c (the layout steps, the finish of a split or a
 * merge), merge.c (the merge's start, its retiring shards) and
 * split_move.c (the IDs and watch records left to move) share.
 */
#ifndef LAPSE_SPLIT_PRIV_H
#define LAPSE_SPLIT_PRIV_H

#include <stdint.h>

#include "bucket.h"
#include "config.h"
#include "layout.h"
#include "redis.h"

/* IDs (and watch records) a call moves at most. */
#define MOVE_CHUNK 256
/* Keys one UNLINK of a retiring shard's takes at most. */
#define MERGE_BATCH 256

/* split.c: the layout in force (-1 with errstr also when there is none);
 * `l` written as record `which` ("layout" or "layout:next"); the fence and
 * publish steps of layout:next = `next` (`cur`: the layout in force, whose
 * shards are fenced too); what a pending layout:next of another kind than
 * `want` asks (-1 with errstr); the refusal of a change while another runs. */
int split_current(lapse_redis *home, const struct lapse_config *cfg, struct lapse_layout *cur,
                  char *errstr, size_t size);
int split_write(lapse_redis *home, const struct lapse_config *cfg, const char *which,
                const struct lapse_layout *l, char *errstr, size_t size);
int split_commit(lapse_redis **nodes, const struct lapse_config *cfg,
                 const struct lapse_layout *next, const struct lapse_layout *cur, char *errstr,
                 size_t size);
int split_pending(const struct lapse_layout *next, enum lapse_layout_state want, char *errstr,
                  size_t size);
int split_refuse_changing(const struct lapse_config *cfg, const struct lapse_layout *cur,
                          char *errstr, size_t size);

/* split_move.c: the form of shard `shard` (its state key read, bucket.h);
 * deleting the moved-ID markers of every shard that receives IDs in `l`
 * (their sets, their buckets'): before a change starts (leftovers of an
 * interrupted finish must not count) and after it ends; moving old shard
 * `shard`'s watch records whose IDs belong to its pair there. 0, or -1 with
 * errstr. */
int split_buckets(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard,
                  struct lapse_buckets *bk, char *errstr, size_t size);
int split_unmark_receivers(lapse_redis **nodes, const struct lapse_config *cfg,
                           const struct lapse_layout *l, char *errstr, size_t size);
int split_watch_move(lapse_redis **nodes, const struct lapse_config *cfg,
                     const struct lapse_layout *l, uint32_t shard, char *errstr, size_t size);

/* merge.c: the claims in flight (records) of the retiring shards of `l`,
 * counted into *claims; the retiring shards' keys removed (all but their
 * locks and epoch fences); after the publish, their scanners' last marks.
 * 0, or -1 with errstr. */
int merge_in_flight(lapse_redis **nodes, const struct lapse_config *cfg,
                    const struct lapse_layout *l, uint64_t *claims, char *errstr, size_t size);
int merge_retire(lapse_redis **nodes, const struct lapse_config *cfg, const struct lapse_layout *l,
                 char *errstr, size_t size);
void merge_tidy(lapse_redis **nodes, const struct lapse_config *cfg, const struct lapse_layout *l);

#endif
