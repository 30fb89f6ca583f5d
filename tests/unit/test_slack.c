/* Unit tests of producer/slack.c: what a bounded-slack producer remembers. */
#include "t.h"

#include <stdio.h>

#include "hash.h"
#include "slack.h"

static uint64_t h(const char *id) { return lapse_hash(id, strlen(id)); }

TEST(slack_covered_only_up_to_what_was_written)
{
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    CHECK(!lapse_slack_covered(s, h("dev-1"), "dev-1", 5, 1000));
    REQUIRE(lapse_slack_set(s, h("dev-1"), "dev-1", 5, 6000, 0) == 0);
    CHECK(lapse_slack_covered(s, h("dev-1"), "dev-1", 5, 1000));
    CHECK(lapse_slack_covered(s, h("dev-1"), "dev-1", 5, 6000));
    CHECK(!lapse_slack_covered(s, h("dev-1"), "dev-1", 5, 6001)); /* would be early */
    CHECK(!lapse_slack_covered(s, h("dev-2"), "dev-2", 5, 1));
    lapse_slack_forget(s, h("dev-1"), "dev-1", 5);
    CHECK(!lapse_slack_covered(s, h("dev-1"), "dev-1", 5, 1));
    CHECK(lapse_slack_count(s) == 0);
    lapse_slack_free(s);
}

TEST(slack_set_replaces)
{
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    REQUIRE(lapse_slack_set(s, h("a"), "a", 1, 100, 0) == 0);
    REQUIRE(lapse_slack_set(s, h("a"), "a", 1, 50, 0) == 0);
    CHECK(!lapse_slack_covered(s, h("a"), "a", 1, 60));
    CHECK(lapse_slack_count(s) == 1);
    lapse_slack_free(s);
}

TEST(slack_grows_and_sweeps_expired)
{
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    char id[32];
    /* 5000 IDs with deadlines 0..4999, then 5000 more at "now" 10000: every
     * old one has expired and must be swept rather than kept. */
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(id, sizeof id, "old-%d", i);
        REQUIRE(lapse_slack_set(s, lapse_hash(id, (size_t)n), id, (size_t)n, i, 0) == 0);
    }
    CHECK(lapse_slack_count(s) == 5000);
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(id, sizeof id, "new-%d", i);
        REQUIRE(lapse_slack_set(s, lapse_hash(id, (size_t)n), id, (size_t)n, 20000, 10000) == 0);
    }
    CHECK(lapse_slack_count(s) < 10000);
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(id, sizeof id, "new-%d", i);
        CHECK(lapse_slack_covered(s, lapse_hash(id, (size_t)n), id, (size_t)n, 20000));
    }
    lapse_slack_free(s);
}

/* Forgetting entries in the middle of probe runs (a table kept small, many
 * IDs, some long enough to live outside the slot) must not hide the others:
 * a model array says what must be covered after each step. */
TEST(slack_forget_keeps_the_rest_findable)
{
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    enum { N = 3000 };
    static int64_t model[N]; /* 0: not remembered */
    char id[96];
    uint64_t r = 42;
    for (int step = 0; step < 20000; step++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        int i = (int)((r >> 33) % N);
        int n = snprintf(id, sizeof id, i % 7 ? "dev-%d" : "a-long-device-identifier-of-more-than-36-bytes-%d", i);
        uint64_t h = lapse_hash(id, (size_t)n);
        if ((r >> 20) % 3 == 0) {
            lapse_slack_forget(s, h, id, (size_t)n);
            model[i] = 0;
        } else {
            int64_t d = 1000 + (int64_t)((r >> 40) % 1000);
            REQUIRE(lapse_slack_set(s, h, id, (size_t)n, d, 0) == 0);
            model[i] = d;
        }
    }
    size_t live = 0;
    for (int i = 0; i < N; i++) {
        int n = snprintf(id, sizeof id, i % 7 ? "dev-%d" : "a-long-device-identifier-of-more-than-36-bytes-%d", i);
        uint64_t h = lapse_hash(id, (size_t)n);
        if (model[i]) {
            live++;
            CHECK(lapse_slack_covered(s, h, id, (size_t)n, model[i]));
            CHECK(!lapse_slack_covered(s, h, id, (size_t)n, model[i] + 1));
        } else
            CHECK(!lapse_slack_covered(s, h, id, (size_t)n, 1));
    }
    CHECK(lapse_slack_count(s) == live);
    lapse_slack_free(s);
}
