/*
 * test_backoff — the retry waits: each within [step/2, step] of a step that
 * doubles to the cap and starts over after a success, and spread out, so a
 * retry cannot stay in step with a periodic fault.
 */
#include "backoff.h"
#include "t.h"

TEST(backoff_steps)
{
    struct lapse_backoff b;
    lapse_backoff_init(&b, 10, 500);
    int steps[] = {10, 20, 40, 80, 160, 320, 500, 500, 500};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int w = lapse_backoff_next(&b);
        CHECK(w >= steps[i] / 2 && w <= steps[i]);
    }
    lapse_backoff_reset(&b);
    int w = lapse_backoff_next(&b);
    CHECK(w >= 5 && w <= 10);
}

/* At the cap, 1000 waits take many different values across the whole
 * range: a fixed wait (the cause of retries that a fault every 75 ms
 * defeated each time) would give one. */
TEST(backoff_jitter)
{
    struct lapse_backoff b;
    lapse_backoff_init(&b, 200, 200);
    int seen[201] = {0}, distinct = 0, lo = 1000, hi = 0;
    for (int i = 0; i < 1000; i++) {
        int w = lapse_backoff_next(&b);
        REQUIRE(w >= 100 && w <= 200);
        distinct += !seen[w]++;
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
    }
    CHECK(distinct > 80);
    CHECK(lo < 110 && hi > 190);
}

/* Two clients started together draw different waits. */
TEST(backoff_seeds_differ)
{
    struct lapse_backoff a, b;
    lapse_backoff_init(&a, 1000, 1000);
    lapse_backoff_init(&b, 1000, 1000);
    int same = 0;
    for (int i = 0; i < 20; i++)
        same += lapse_backoff_next(&a) == lapse_backoff_next(&b);
    CHECK(same < 5);
}

TEST(backoff_bounds)
{
    struct lapse_backoff b;
    lapse_backoff_init(&b, 0, 0); /* clamped to 1 ms */
    CHECK(lapse_backoff_next(&b) >= 0 && lapse_backoff_next(&b) <= 1);
    lapse_backoff_init(&b, 1, 1 << 30); /* no overflow at a huge cap */
    for (int i = 0; i < 100; i++)
        REQUIRE(lapse_backoff_next(&b) >= 0);
}
