/*
 * backoff — how long to wait before trying again after a failure.
 *
 * Exponential with jitter: the step doubles from min_ms to max_ms and each
 * wait is drawn uniformly from [step/2, step]. The jitter is not cosmetic:
 * with a fixed wait, a retry can fall into step with a periodic fault (a
 * connection dropped every 75 ms, retried 50 ms after each drop, lands in
 * the next drop every time) and never get through, and many clients of one
 * restarted Redis would all come back in the same millisecond.
 *
 * A plain value type: no allocation, no I/O. Not thread-safe.
 */
#ifndef LAPSE_BACKOFF_H
#define LAPSE_BACKOFF_H

#include <stdint.h>

struct lapse_backoff {
    int min_ms, max_ms; /* bounds of the step */
    int step_ms;        /* the current step; min_ms after a success */
    uint64_t rng;       /* xorshift64* state, never 0 */
};

/* Sets the bounds (1 <= min_ms <= max_ms) and seeds the jitter from the
 * clock, the process and b's address, so processes started together draw
 * different waits. */
void lapse_backoff_init(struct lapse_backoff *b, int min_ms, int max_ms);

/* The wait before the next attempt, in ms; doubles the step (up to max_ms). */
int lapse_backoff_next(struct lapse_backoff *b);

/* After a success: the next failure waits about min_ms again. */
void lapse_backoff_reset(struct lapse_backoff *b);

#endif
