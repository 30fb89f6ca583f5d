/*
 * forget — offline IDs that never came back are forgotten after
 * scanner.offline_retention_s (common/lua/forget.lua walks the shard's
 * watch records a slice a call), and the shard's offline count reaches the
 * metrics (lapse_scanner_offline).
 *
 * A pass looks at FORGET_SLICE records a second until it has seen them all,
 * then rests FORGET_REST_MS: an idle shard pays one call every 10 s, and a
 * shard of ten million watched IDs is walked in under three hours.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "scanner_priv.h"

#define FORGET_SLICE 1000
#define FORGET_STEP_MS 1000
#define FORGET_REST_MS 10000

void scanner_forget(lapse_scanner *s, int64_t now)
{
    if (!s->active || !s->node || now < s->forget_at_ms)
        return;
    char retention[24], slice[16], busy_age[24];
    snprintf(retention, sizeof retention, "%lld",
             (long long)s->cfg->scanner_offline_retention_s * 1000);
    snprintf(slice, sizeof slice, "%d", FORGET_SLICE);
    /* a busy record (lib/watch.lua) waits for its timeout's ack or drop: a
     * timeout stays in flight a lease or two, so one far older is left over */
    snprintf(busy_age, sizeof busy_age, "%lld", (long long)s->cfg->scanner_lease_ms * 20);
    const char *argv[] = {s->keys[0],       s->keys[5], s->token, retention,
                          s->forget_cursor, slice,      busy_age};
    size_t lens[7];
    for (int i = 0; i < 7; i++)
        lens[i] = strlen(argv[i]);
    redisReply *r = lapse_redis_eval(s->node, LAPSE_SCRIPT_FORGET, 2, 7, argv, lens);
    s->forget_at_ms = now + FORGET_STEP_MS;
    /* forget.lua's reply: { next cursor, forgotten, offline IDs now } */
    enum { F_CURSOR, F_FORGOTTEN, F_OFFLINE, F_PARTS };
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != F_PARTS ||
        r->element[F_CURSOR]->type != REDIS_REPLY_STRING ||
        r->element[F_FORGOTTEN]->type != REDIS_REPLY_INTEGER ||
        r->element[F_OFFLINE]->type != REDIS_REPLY_INTEGER) {
        if (lapse_script_fence(r, NULL) != LAPSE_FENCE_LOCK) /* (fenced: the claim says so) */
            scanner_redis_error(s, "forget", s->node, r);
        if (r)
            freeReplyObject(r);
        return;
    }
    const redisReply *cursor = r->element[F_CURSOR];
    snprintf(s->forget_cursor, sizeof s->forget_cursor, "%.*s", (int)cursor->len, cursor->str);
    if (strcmp(s->forget_cursor, "0") == 0) { /* a pass ended: the next in 10 s, or sooner
                                                 with a short retention */
        int64_t rest = (int64_t)s->cfg->scanner_offline_retention_s * 500;
        s->forget_at_ms = now + (rest < FORGET_REST_MS ? rest : FORGET_REST_MS);
    }
    METRIC_ADD(s, offline_forgotten, (uint64_t)r->element[F_FORGOTTEN]->integer);
    METRIC_SET(s, offline, r->element[F_OFFLINE]->integer);
    freeReplyObject(r);
}
