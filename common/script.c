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

void lapse_apply_read(const struct redisReply *r, const char **moved, size_t *nmoved,
                      long long *now)
{
    *moved = "", *nmoved = 0, *now = -1;
    if (r->type != REDIS_REPLY_ARRAY)
        return;
    if (r->elements > LAPSE_APPLY_MOVED &&
        r->element[LAPSE_APPLY_MOVED]->type == REDIS_REPLY_STRING)
        *moved = r->element[LAPSE_APPLY_MOVED]->str, *nmoved = r->element[LAPSE_APPLY_MOVED]->len;
    if (r->elements > LAPSE_APPLY_NOW && r->element[LAPSE_APPLY_NOW]->type == REDIS_REPLY_STRING)
        *now = strtoll(r->element[LAPSE_APPLY_NOW]->str, NULL, 10);
}

/* a part that is a string or nil (Lua's false) */
static int take_str_or_nil(const redisReply *e)
{
    return e->type == REDIS_REPLY_STRING || e->type == REDIS_REPLY_NIL;
}

int lapse_take_check(const struct redisReply *r, size_t count)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 + LAPSE_TAKE_PARTS * count ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return -1;
    for (size_t k = 0; k < count; k++) {
        redisReply *const *e = r->element + 1 + LAPSE_TAKE_PARTS * k;
        const redisReply *st = e[LAPSE_TAKE_STATE];
        if (st->type != REDIS_REPLY_STRING || st->len != 1 ||
            (st->str[0] != LAPSE_TAKE_TAKEN && st->str[0] != LAPSE_TAKE_BUSY &&
             st->str[0] != LAPSE_TAKE_ABSENT) ||
            e[LAPSE_TAKE_DEADLINE]->type != REDIS_REPLY_INTEGER ||
            !take_str_or_nil(e[LAPSE_TAKE_PAYLOAD]) || !take_str_or_nil(e[LAPSE_TAKE_REPEAT]) ||
            !take_str_or_nil(e[LAPSE_TAKE_WATCH]))
            return -1;
    }
    return 0;
}

const struct redisReply *lapse_take_lease(const struct redisReply *r)
{
    return r->element[0];
}

void lapse_take_twin(const struct redisReply *r, size_t k, struct lapse_twin *t)
{
    redisReply *const *e = r->element + 1 + LAPSE_TAKE_PARTS * k;
    const redisReply *pl = e[LAPSE_TAKE_PAYLOAD], *rep = e[LAPSE_TAKE_REPEAT],
                     *w = e[LAPSE_TAKE_WATCH];
    t->state = e[LAPSE_TAKE_STATE]->str[0];
    t->deadline = e[LAPSE_TAKE_DEADLINE]->integer;
    t->has_payload = pl->type == REDIS_REPLY_STRING;
    t->payload = t->has_payload ? pl->str : "", t->payload_len = t->has_payload ? pl->len : 0;
    int has = rep->type == REDIS_REPLY_STRING;
    t->repeat = has ? rep->str : "", t->repeat_len = has ? rep->len : 0;
    t->has_watch = w->type == REDIS_REPLY_STRING;
    t->watch = t->has_watch ? w->str : "", t->watch_len = t->has_watch ? w->len : 0;
}
