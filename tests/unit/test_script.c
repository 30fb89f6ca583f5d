/*
 * test_script — the fences' one decoder (lapse_script_fence, common/script.c):
 * "STALE <epoch>" and "FENCED lock not held" as the scripts answer them
 * (tests 0380 and the split tests see them from Redis); anything else,
 * "ERR FENCED" included (what Redis makes of a one-word error), is no
 * fence.
 */
#include "script.h"
#include "t.h"

#include <hiredis/hiredis.h>

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
