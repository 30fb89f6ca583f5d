/*
 * test_script — the fences' one decoder (lapse_script_fence, common/script.c):
 * "STALE <epoch>" and "FENCED lock not held" as the scripts answer them
 * (tests 0380 and the split tests see them from Redis); anything else,
 * "ERR FENCED" included (what Redis makes of a one-word error), is no
 * fence. And take.lua's reply, checked whole before any part is read
 * (lapse_take_check, lapse_take_twin), as both of its readers use it.
 */
#include "script.h"
#include "t.h"

#include <hiredis/hiredis.h>
#include <string.h>

static redisReply err_reply(const char *s)
{
    redisReply r = {0};
    r.type = REDIS_REPLY_ERROR;
    r.str = (char *)s;
    r.len = strlen(s);
    return r;
}

TEST(script_fence_forms)
{
    long long epoch = -1;
    redisReply r = err_reply("STALE 12");
    CHECK(lapse_script_fence(&r, &epoch) == LAPSE_FENCE_STALE && epoch == 12);
    r = err_reply("STALE");
    CHECK(lapse_script_fence(&r, &epoch) == LAPSE_FENCE_STALE && epoch == 0);
    CHECK(lapse_script_fence(&r, NULL) == LAPSE_FENCE_STALE);
    r = err_reply("FENCED lock not held");
    CHECK(lapse_script_fence(&r, &epoch) == LAPSE_FENCE_LOCK);
    r = err_reply("FENCED");
    CHECK(lapse_script_fence(&r, NULL) == LAPSE_FENCE_LOCK);
    const char *none[] = {"ERR FENCED", "STALEMATE", "FENCEDX", "TRYAGAIN shard keys moving", ""};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        r = err_reply(none[i]);
        CHECK(lapse_script_fence(&r, &epoch) == LAPSE_FENCE_NONE);
    }
    redisReply n = {0};
    n.type = REDIS_REPLY_INTEGER;
    n.integer = -1; /* the old lock fence, a plain answer now */
    CHECK(lapse_script_fence(&n, NULL) == LAPSE_FENCE_NONE);
    CHECK(lapse_script_fence(NULL, NULL) == LAPSE_FENCE_NONE);
}

/* a take.lua reply for two IDs: "a" absent, "t" taken with payload "pl",
 * repeat "60000:3" and a watch record */
struct take_fixture {
    redisReply r, parts[1 + 2 * LAPSE_TAKE_PARTS];
    redisReply *el[1 + 2 * LAPSE_TAKE_PARTS];
};

static void set_str(redisReply *e, const char *s)
{
    e->type = REDIS_REPLY_STRING, e->str = (char *)s, e->len = strlen(s);
}

static void take_fixture(struct take_fixture *f)
{
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < 1 + 2 * LAPSE_TAKE_PARTS; i++) {
        f->el[i] = &f->parts[i];
        f->parts[i].type = REDIS_REPLY_NIL;
    }
    f->r.type = REDIS_REPLY_ARRAY, f->r.elements = 1 + 2 * LAPSE_TAKE_PARTS, f->r.element = f->el;
    set_str(&f->parts[0], "1795000000000.75");
    redisReply *a = &f->parts[1], *t = &f->parts[1 + LAPSE_TAKE_PARTS];
    set_str(&a[LAPSE_TAKE_STATE], "a");
    a[LAPSE_TAKE_DEADLINE].type = REDIS_REPLY_INTEGER;
    set_str(&t[LAPSE_TAKE_STATE], "t");
    t[LAPSE_TAKE_DEADLINE].type = REDIS_REPLY_INTEGER,
    t[LAPSE_TAKE_DEADLINE].integer = 1795000001234;
    set_str(&t[LAPSE_TAKE_PAYLOAD], "pl");
    set_str(&t[LAPSE_TAKE_REPEAT], "60000:3");
    set_str(&t[LAPSE_TAKE_WATCH], "w");
}

TEST(script_take_reply)
{
    struct take_fixture f;
    take_fixture(&f);
    CHECK(lapse_take_check(&f.r, 2) == 0);
    CHECK(lapse_take_check(&f.r, 1) == -1); /* counts must agree */
    struct lapse_twin t;
    lapse_take_twin(&f.r, 0, &t);
    CHECK(t.state == LAPSE_TAKE_ABSENT && !t.has_payload && t.repeat_len == 0 && !t.has_watch);
    lapse_take_twin(&f.r, 1, &t);
    CHECK(t.state == LAPSE_TAKE_TAKEN && t.deadline == 1795000001234 && t.has_payload &&
          t.payload_len == 2 && memcmp(t.payload, "pl", 2) == 0 && t.repeat_len == 7 &&
          t.has_watch && t.watch_len == 1);
    CHECK(strcmp(lapse_take_lease(&f.r)->str, "1795000000000.75") == 0);
    /* every malformed part is refused, never read */
    set_str(&f.parts[1 + LAPSE_TAKE_STATE], "x");
    CHECK(lapse_take_check(&f.r, 2) == -1);
    take_fixture(&f);
    f.parts[1 + LAPSE_TAKE_STATE].type = REDIS_REPLY_NIL;
    CHECK(lapse_take_check(&f.r, 2) == -1);
    take_fixture(&f);
    f.parts[1 + LAPSE_TAKE_PARTS + LAPSE_TAKE_DEADLINE].type = REDIS_REPLY_STRING;
    f.parts[1 + LAPSE_TAKE_PARTS + LAPSE_TAKE_DEADLINE].str = (char *)"1";
    CHECK(lapse_take_check(&f.r, 2) == -1);
    take_fixture(&f);
    f.parts[1 + LAPSE_TAKE_PARTS + LAPSE_TAKE_WATCH].type = REDIS_REPLY_INTEGER;
    CHECK(lapse_take_check(&f.r, 2) == -1);
    take_fixture(&f);
    f.parts[0].type = REDIS_REPLY_INTEGER;
    CHECK(lapse_take_check(&f.r, 2) == -1);
}
