/*
 * health — see health.h. The script (common/lua/health.lua) only reads, so
 * it may run against a replica-backed primary under any load without
 * changing what the scanners see.
 */
#include "health.h"

#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "evalsha.h"

/* common/lua/health.lua (embedded by scripts/embed-lua: it pastes in
 * lib/bucket.lua, which reads a shard in small keys bucket by bucket). */
extern const char lapse_lua_health[];

/* health.lua's reply, by name (the script's header says what each is). */
enum {
    H_PENDING,
    H_DUE,
    H_INFLIGHT,
    H_OLDEST_DUE,        /* score, or -1 */
    H_NOW,               /* Redis time, ms */
    H_HOLDER,            /* the lock's holder, or "" (the one string) */
    H_EARLIEST_INFLIGHT, /* deadline, or -1 */
    H_KEYS,
    H_LARGEST_IDS,
    H_LARGEST_BYTES,
    H_OVER_LISTPACK,
    H_OFFLINE,
    H_PARTS
};

int lapse_health_read(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard,
                      struct lapse_health *out, char *errstr, size_t size)
{
    return lapse_health_read_sized(r, cfg, shard, 1, out, errstr, size);
}

int lapse_health_read_sized(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard,
                            int key_bytes, struct lapse_health *out, char *errstr, size_t size)
{
    char z[LAPSE_KEY_MAX], f[LAPSE_KEY_MAX], l[LAPSE_KEY_MAX];
    lapse_key(z, sizeof z, cfg, LAPSE_KEY_DUE, shard);
    lapse_key(f, sizeof f, cfg, LAPSE_KEY_INFLIGHT, shard);
    lapse_key(l, sizeof l, cfg, LAPSE_KEY_LOCK, shard);
    char listpack[16];
    snprintf(listpack, sizeof listpack, "%d", LAPSE_HEALTH_LISTPACK);
    const char *argv[] = {"EVALSHA", lapse_scale_script_sha(lapse_lua_health),
                          "3",       z,
                          f,         l,
                          listpack,  key_bytes ? "1" : "0"};
    size_t lens[8];
    for (int k = 0; k < 8; k++)
        lens[k] = strlen(argv[k]);
    redisReply *rep = lapse_redis_command_argv(r, 8, argv, lens);
    if (lapse_scale_noscript(rep)) { /* this server does not know it yet */
        freeReplyObject(rep);
        argv[0] = "EVAL", lens[0] = 4;
        argv[1] = lapse_lua_health, lens[1] = strlen(lapse_lua_health);
        rep = lapse_redis_command_argv(r, 8, argv, lens);
    }
    if (!rep) {
        snprintf(errstr, size, "%s", lapse_redis_errstr(r));
        return -2;
    }
    int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == H_PARTS;
    for (size_t i = 0; ok && i < H_PARTS; i++)
        ok = rep->element[i]->type == (i == H_HOLDER ? REDIS_REPLY_STRING : REDIS_REPLY_INTEGER);
    if (ok) {
        redisReply *const *e = rep->element;
        long long now = e[H_NOW]->integer, oldest = e[H_OLDEST_DUE]->integer;
        long long earliest = e[H_EARLIEST_INFLIGHT]->integer;
        out->now_ms = now;
        out->pending = e[H_PENDING]->integer;
        out->due = e[H_DUE]->integer;
        out->inflight = e[H_INFLIGHT]->integer;
        out->oldest_due_ms = oldest >= 0 ? now - oldest : -1;
        out->oldest_inflight_ms = earliest >= 0 && earliest <= now ? now - earliest : -1;
        snprintf(out->holder, sizeof out->holder, "%s", e[H_HOLDER]->str);
        out->keys = e[H_KEYS]->integer;
        out->largest_ids = e[H_LARGEST_IDS]->integer;
        out->largest_bytes = e[H_LARGEST_BYTES]->integer;
        out->over_listpack = e[H_OVER_LISTPACK]->integer;
        out->offline = e[H_OFFLINE]->integer;
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
