/*
 * check_priv — what the checker's files share: the records' shapes, which
 * check_load.c parses into memory; and the state of one nm_check, which
 * check.c (the run: grouping, the verdict lines) sets and prints and
 * check_rules.c's rules fill.
 */
#ifndef NEMESIS_CHECK_PRIV_H
#define NEMESIS_CHECK_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"

enum { OP_TOUCH = 1, OP_EXTEND, OP_WATCH, OP_REPEAT, OP_CANCEL };
enum { WHEN_NONE = 0, WHEN_AT, WHEN_IN };
enum { ACK_NONE = 0, ACK_OK, ACK_FAIL };

struct op {
    char *w;      /* writer */
    char *id;     /* the ID */
    int64_t n;    /* the writer's op number */
    int op;       /* OP_* */
    int kind;     /* WHEN_* */
    int64_t when; /* at_ms or in_ms */
    int64_t period;
    int64_t sent;
    int ack; /* ACK_* */
    int64_t ack_ms;
    char *err;      /* ack ok:false: why (may be NULL) */
    int64_t lo, hi; /* possible deadlines (first point of a repeat) */
};

struct event {
    char *id;
    int recovered; /* 0 timeout, 1 recovered */
    int64_t deadline, fired, seq, recovered_ms;
    size_t order; /* its line in events.jsonl */
};

struct fault {
    char *kind, *target;
    int64_t start, end;
};

struct nm_run {
    int64_t seed, start, stop, end, grace;
    char *ns;
    char **writers;
    unsigned char *replays; /* per writer: its ops may be applied again
                               (meta "replaying": an at-least-once path) */
    size_t nwriters;
    struct op *ops;
    size_t nops, capops;
    struct event *evs;
    size_t nevs, capevs;
    struct fault *faults;
    size_t nfaults, capfaults;
};

/* Grows *arr (of `elem`-byte items, *cap of them) to hold one more:
 * 0, or -1 (ENOMEM). */
int nm_grow(void **arr, size_t *cap, size_t count, size_t elem);

/* "touch", "extend", ... for OP_*; "?" for anything else. */
const char *nm_op_name(int op);

/* One ID's records: ops[0..nops) in its order, evs[0..nevs) in file order. */
struct idv {
    const char *id;
    struct op *ops;
    size_t nops;
    struct event *evs;
    size_t nevs;
};

/* What a violated rule prints, and how many times. */
struct verdict {
    unsigned long bad;      /* violations */
    unsigned long counted;  /* what was judged */
    unsigned long extra[4]; /* rule-specific counts */
    char first[1024];       /* the first violation, one line */
    const char *ids[64];    /* offending IDs to show (at most params->shown) */
    int nids;
    char *why[64]; /* per shown ID, the first reason */
};

/* Duplicate counts by fault kind: a small table. */
struct dupkind {
    const char *kind;
    unsigned long count;
};

#define NBUCKETS 7 /* lateness histogram buckets (check_rules.c's buckets[]) */

/*
 * The state of the nm_check running (one at a time), defined in check.c:
 * its tolerances and records (set by nm_check), and what the rules found
 * (cleared by nm_check, filled by the rules, printed by nm_check).
 */
extern const struct nm_params *P;
extern const struct nm_run *R;
extern struct verdict V[NM_RULES + 1];
extern unsigned long hist[2][NBUCKETS]; /* lateness: [0] outside faults, [1] inside */
extern struct dupkind dupkinds[32];
extern int ndupkinds;

/* Runs every rule over one ID's records (its ops' lo and hi set), adding
 * to V, hist and dupkinds (check_rules.c). */
void nm_rules(const struct idv *v);

#endif
