/*
 * inspect — what Redis holds for one ID, read without changing anything:
 * its shard (and, during a split, its twin in the old shard), the pending
 * deadline or the lease it is in flight under and the deadline being
 * dispatched, its payload, its repeat record, and the shard's scanner.
 *
 * Only plain reads (TIME, ZSCORE, HGET, GET, SISMEMBER), pipelined per
 * node, on a connection that first asks Redis not to count them as
 * accesses (CLIENT NO-TOUCH, Redis 7.2 and later; older servers refuse it
 * and the reads go on): an operator's look must not keep keys warm or run
 * a script that writes. The reads of one shard are one round trip, not one
 * transaction: a scanner may move the ID between two of them, which the
 * result shows as it was read. In a shard in small keys (bucket.h) they
 * go to the ID's bucket, named by the shard's state key read before them
 * (and with them: a bucket split between the two reads them again).
 */
#ifndef LAPSE_INSPECT_H
#define LAPSE_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "layout.h"
#include "redis.h"

/* What one shard holds for the ID. */
struct lapse_inspect_place {
    uint32_t shard;
    uint16_t node;          /* index into cfg->nodes */
    int64_t now_ms;         /* the shard's Redis clock when read */
    int found;              /* the ID is in the shard's zset */
    int64_t deadline_ms;    /* pending deadline, -1 when none (absent or in flight) */
    int in_flight;          /* holds a lease (a fractional score) */
    int taken;              /* ... a producer's take during a split (.75), not a claim (.5) */
    int64_t lease_ms;       /* the lease's end (its score's whole ms), -1 when not in flight */
    int64_t dispatching_ms; /* the deadline being dispatched, from the lease's record; -1
                                   when the record has none (then the lease's ms stands for it) */
    char *payload;          /* malloc'd, payload_len bytes; NULL when none is stored */
    size_t payload_len;
    int64_t period_ms; /* repeat period, -1 when the ID does not repeat */
    int64_t fired;     /* fires so far of a repeating ID (next seq = fired + 1) */
    int moved;         /* new shard during a split: the ID was written here (NS:m) */
    char holder[128];  /* the shard's lock holder (active scanner), "" when none */
};

struct lapse_inspect {
    uint64_t hash;                 /* XXH64 of the ID */
    struct lapse_inspect_place at; /* its shard in the current layout */
    int has_twin;                  /* splitting, and the ID moves: `twin` is its old shard */
    struct lapse_inspect_place twin;
};

/* Longest ID lapse accepts (docs/protocol.md: 1..512 bytes). */
#define LAPSE_INSPECT_ID_MAX 512

/* 0 when `id` is an ID lapse could hold (1..512 bytes, none of them
 * 0x00-0x20 or 0x7f), else -1 with the reason in errstr. */
int lapse_inspect_id_check(const char *id, size_t len, char *errstr, size_t size);

/*
 * Reads what layout `l` says the ID's shard (and twin) hold. `nodes` are
 * connections to cfg->nodes, index for index. Returns 0 (an unknown ID is
 * a success with nothing found), or -1 with the reason in errstr; *out
 * must be freed with lapse_inspect_free either way.
 */
int lapse_inspect_read(lapse_redis **nodes, const struct lapse_config *cfg,
                       const struct lapse_layout *l, const char *id, size_t len,
                       struct lapse_inspect *out, char *errstr, size_t size);

void lapse_inspect_free(struct lapse_inspect *in); /* accepts a zeroed one */

/*
 * A safe preview of `len` bytes for a terminal: printable ASCII as is,
 * backslash as "\\", \n \r \t, every other byte as \xNN; at most `max`
 * input bytes, then "..." when there were more. Writes into out
 * (NUL-terminated, cut short if `size` is too small: 4 * max + 8 always
 * suffices) and returns out.
 */
char *lapse_inspect_preview(const char *p, size_t len, size_t max, char *out, size_t size);

/* `ms` (unix ms) as ISO-8601 UTC with milliseconds, "2026-11-25T10:11:12.345Z",
 * into out (at least 32 bytes); returns out. */
char *lapse_inspect_iso(int64_t ms, char *out, size_t size);

#endif
