/*
 * check_priv — what check_load.c (the records parsed into memory) and
 * check.c (the rules over them) share: the records' shapes.
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

#endif
