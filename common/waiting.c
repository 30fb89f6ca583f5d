/*
 * waiting — the lines a program logs while it waits for Redis at start
 * (waiting.h). Pure: the caller passes the time, so the unit tests drive a
 * whole wait without sleeping.
 */
#include "waiting.h"

#include <stdio.h>

void lapse_waiting_init(struct lapse_waiting *w, const struct lapse_config *cfg, size_t node,
                        int64_t now_ms)
{
    w->timeout_ms = cfg->redis_retry_timeout_ms;
    w->where = node < cfg->nnodes ? cfg->nodes[node].where : NULL;
    w->start_ms = now_ms;
    w->said_ms = -1;
}

/* "60 s", "1.5 s", "500 ms": a duration as an operator reads it. */
static void duration(char *out, size_t size, int64_t ms)
{
    if (ms < 1000)
        snprintf(out, size, "%lld ms", (long long)ms);
    else if (ms % 1000 == 0)
        snprintf(out, size, "%lld s", (long long)(ms / 1000));
    else
        snprintf(out, size, "%.1f s", (double)ms / 1000);
}

const char *lapse_waiting_line(struct lapse_waiting *w, const char *why, int64_t now_ms, char *buf,
                               size_t size)
{
    if (w->said_ms >= 0 && now_ms - w->said_ms < LAPSE_WAITING_EVERY_MS)
        return NULL;
    const char *open = w->where ? " (" : "", *at = w->where ? w->where : "",
               *close = w->where ? ")" : "";
    char d[32];
    if (w->said_ms < 0) {
        duration(d, sizeof d, w->timeout_ms);
        snprintf(buf, size, "waiting for Redis%s%s%s up to %s (redis.retry_timeout_ms): %s", open,
                 at, close, d, why);
    } else {
        int64_t left = w->start_ms + w->timeout_ms - now_ms;
        duration(d, sizeof d, left < 0 ? 0 : (left + 999) / 1000 * 1000); /* whole seconds, up */
        snprintf(buf, size, "still waiting for Redis%s%s%s, %s left: %s", open, at, close, d, why);
    }
    w->said_ms = now_ms;
    return buf;
}
