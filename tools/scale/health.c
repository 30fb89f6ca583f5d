/*
 * health — see health.h. The script (common/lua/health.lua) only reads, so
 * it may run against a replica-backed primary under any load without
 * changing what the scanners see.
 */
#include "health.h"

#include <stdio.h>
#include <string.h>

#include "layout.h"

/* common/lua/health.lua (embedded by scripts/embed-lua: it pastes in
 * lib/bucket.lua, which reads a shard in small keys bucket by bucket). */
extern const char lapse_lua_health[];

int lapse_health_read(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard,
                      struct lapse_health *out, char *errstr, size_t size)
{
    char z[LAPSE_KEY_MAX], f[LAPSE_KEY_MAX], l[LAPSE_KEY_MAX];
    lapse_key(z, sizeof z, cfg, LAPSE_KEY_DUE, shard);
    lapse_key(f, sizeof f, cfg, LAPSE_KEY_INFLIGHT, shard);
    lapse_key(l, sizeof l, cfg, LAPSE_KEY_LOCK, shard);
    redisReply *rep = lapse_redis_command(r, "EVAL %s 3 %s %s %s %d", lapse_lua_health, z, f, l,
                                          LAPSE_HEALTH_LISTPACK);
    if (!rep) {
        snprintf(errstr, size, "%s", lapse_redis_errstr(r));
        return -2;
    }
    int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 12;
    for (size_t i = 0; ok && i < 12; i++)
        ok = rep->element[i]->type == (i == 5 ? REDIS_REPLY_STRING : REDIS_REPLY_INTEGER);
    if (ok) {
        long long now = rep->element[4]->integer, oldest = rep->element[3]->integer;
        long long earliest = rep->element[6]->integer;
        out->now_ms = now;
        out->pending = rep->element[0]->integer;
        out->due = rep->element[1]->integer;
        out->inflight = rep->element[2]->integer;
        out->oldest_due_ms = oldest >= 0 ? now - oldest : -1;
        out->oldest_inflight_ms = earliest >= 0 && earliest <= now ? now - earliest : -1;
        snprintf(out->holder, sizeof out->holder, "%s", rep->element[5]->str);
        out->keys = rep->element[7]->integer;
        out->largest_ids = rep->element[8]->integer;
        out->largest_bytes = rep->element[9]->integer;
        out->over_listpack = rep->element[10]->integer;
        out->offline = rep->element[11]->integer;
    } else {
        snprintf(errstr, size, "%s: shard %u: unexpected reply to the counters' script%s%s",
                 lapse_redis_name(r), shard, rep->type == REDIS_REPLY_ERROR ? ": " : "",
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "");
    }
    freeReplyObject(rep);
    return ok ? 0 : -1;
}

int64_t lapse_health_overdue_ms(const struct lapse_health *h)
{
    return h->oldest_due_ms > h->oldest_inflight_ms ? h->oldest_due_ms : h->oldest_inflight_ms;
}
