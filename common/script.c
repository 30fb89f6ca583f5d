#include "script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

extern const char lapse_lua_apply[], lapse_lua_claim[], lapse_lua_ack[], lapse_lua_acquire[],
    lapse_lua_release[], lapse_lua_take[], lapse_lua_seed[], lapse_lua_drop[], lapse_lua_sleep[],
    lapse_lua_moved[], lapse_lua_forget[];

const char *lapse_script_source(enum lapse_script s)
{
    static const char *const src[LAPSE_SCRIPT_COUNT] = {
        [LAPSE_SCRIPT_APPLY] = lapse_lua_apply,     [LAPSE_SCRIPT_CLAIM] = lapse_lua_claim,
        [LAPSE_SCRIPT_ACK] = lapse_lua_ack,         [LAPSE_SCRIPT_ACQUIRE] = lapse_lua_acquire,
        [LAPSE_SCRIPT_RELEASE] = lapse_lua_release, [LAPSE_SCRIPT_TAKE] = lapse_lua_take,
        [LAPSE_SCRIPT_SEED] = lapse_lua_seed,       [LAPSE_SCRIPT_DROP] = lapse_lua_drop,
        [LAPSE_SCRIPT_SLEEP] = lapse_lua_sleep,     [LAPSE_SCRIPT_MOVED] = lapse_lua_moved,
        [LAPSE_SCRIPT_FORGET] = lapse_lua_forget,
    };
    return src[s];
}

enum lapse_fence lapse_script_fence(const struct redisReply *r, long long *epoch)
{
    if (!r || r->type != REDIS_REPLY_ERROR)
        return LAPSE_FENCE_NONE;
    if (strncmp(r->str, "FENCED", 6) == 0 && (r->str[6] == ' ' || r->str[6] == '\0'))
        return LAPSE_FENCE_LOCK;
    if (strncmp(r->str, "STALE", 5) != 0 || (r->str[5] != ' ' && r->str[5] != '\0'))
        return LAPSE_FENCE_NONE;
    if (epoch)
        *epoch = r->str[5] ? strtoll(r->str + 6, NULL, 10) : 0;
    return LAPSE_FENCE_STALE;
}

int lapse_take_head(const char **v, size_t *l, int n, const char *epoch, const char *lease_ms)
{
    v[n] = epoch, l[n++] = strlen(epoch);
    v[n] = lease_ms, l[n++] = strlen(lease_ms);
    return n;
}

int lapse_seed_twin(const char **v, size_t *l, int n, const struct lapse_twin *t, char num[32])
{
    v[n] = t->id, l[n++] = t->id_len;
    l[n] = (size_t)snprintf(num, 32, "%lld", t->deadline), v[n++] = num;
    v[n] = t->has_payload ? "1" : "0", l[n++] = 1;
    v[n] = t->has_payload ? t->payload : "", l[n++] = t->has_payload ? t->payload_len : 0;
    v[n] = t->repeat, l[n++] = t->repeat_len;
    return n;
}

int lapse_drop_taken(const char **v, size_t *l, int n, const char *id, size_t id_len,
                     const char *lease, size_t lease_len)
{
    v[n] = id, l[n++] = id_len;
    v[n] = lease, l[n++] = lease_len;
    return n;
}
