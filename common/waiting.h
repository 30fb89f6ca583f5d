/*
 * waiting — what a program says while it waits for Redis at start
 * (lapse_redis_ensure_within's on_wait, the scanner's attach): at once, how
 * long it will wait at most and which line of the config names the node;
 * then again about every 10 s with the time left, so that a
 * program waiting out redis.retry_timeout_ms never looks hung. Every
 * program words it the same because they all take their lines from here;
 * common/ prints nothing, so this writes the line and the program logs it.
 */
#ifndef LAPSE_WAITING_H
#define LAPSE_WAITING_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* A line is due this long after the last: callers ask at least once a
 * second (the connect back-off's longest step), so lines come at most
 * about 10 s apart. */
#define LAPSE_WAITING_EVERY_MS 9000

struct lapse_waiting {
    int timeout_ms;    /* the longest wait: redis.retry_timeout_ms */
    const char *where; /* "FILE:LINE" naming the node (config.h), or NULL */
    int64_t start_ms;  /* monotonic ms the wait began */
    int64_t said_ms;   /* monotonic ms of the last line; -1 before the first */
};

/* Begins a wait for cfg->nodes[node] at monotonic time now_ms (the start
 * of the program's first attempt). Keeps a pointer into cfg. */
void lapse_waiting_init(struct lapse_waiting *w, const struct lapse_config *cfg, size_t node,
                        int64_t now_ms);

/* The line to log at monotonic time now_ms, why being the last attempt's
 * error: at the first call "waiting for Redis (FILE:LINE) up to 60 s
 * (redis.retry_timeout_ms): WHY", then, once LAPSE_WAITING_EVERY_MS passed
 * since the last line, "still waiting for Redis (FILE:LINE), 50 s left:
 * WHY". Written into buf (size bytes); returns buf, or NULL (buf left
 * alone) when no line is due. */
const char *lapse_waiting_line(struct lapse_waiting *w, const char *why, int64_t now_ms, char *buf,
                               size_t size);

#endif
