/*
 * clock — milliseconds, wall and monotonic.
 *
 * Deadlines are judged on the shard's Redis clock (TIME inside the Lua
 * scripts), never on these: the local wall clock only stamps fired_ms, and the
 * monotonic clock measures waits.
 */
#ifndef LAPSE_CLOCK_H
#define LAPSE_CLOCK_H

#include <stdint.h>

int64_t lapse_clock_ms(void);      /* unix time in ms (CLOCK_REALTIME) */
int64_t lapse_clock_mono_ms(void); /* CLOCK_MONOTONIC in ms, for intervals */
/* CLOCK_MONOTONIC in microseconds: for sums of intervals much shorter than a
 * millisecond (a scanner's loop pass), which ms would round away. */
int64_t lapse_clock_mono_us(void);

/* Sleeps ms milliseconds (an interrupting signal ends it early: callers
 * re-check their stop flag). For back-off outside event loops only. */
void lapse_clock_sleep_ms(int ms);

#endif
