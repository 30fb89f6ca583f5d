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
