/*
 * test_layout — a layout change in terms of homes (layout.h): which IDs
 * move during a split or a merge, from where to where, and which shards
 * give, receive, pair up and retire; nothing moves while stable. The routing of every moving
 * ID, the scanners' checks and lapse-scale's moves ask these.
 */
#include <string.h>

#include "layout.h"
#include "t.h"

TEST(layout_homes_of_a_split)
{
    struct lapse_layout l = {.shards = 8, .prev_shards = 4, .state = LAPSE_LAYOUT_SPLITTING};
    for (uint64_t h = 0; h < 64; h++) {
        CHECK(lapse_layout_old_home(&l, h) == (h & 3));
        CHECK(lapse_layout_new_home(&l, h) == (h & 7));
        CHECK(lapse_layout_moves(&l, h) == ((h & 4) != 0));
        if (lapse_layout_moves(&l, h))
            CHECK(lapse_layout_pair(&l, lapse_layout_old_home(&l, h)) ==
                  lapse_layout_new_home(&l, h));
    }
    CHECK(lapse_layout_span(&l) == 8);
    for (uint32_t s = 0; s < 8; s++) {
        CHECK(lapse_layout_gives(&l, s) == (s < 4));
        CHECK(lapse_layout_receives(&l, s) == (s >= 4));
        CHECK(lapse_layout_pair(&l, lapse_layout_pair(&l, s)) == s);
    }
    CHECK(lapse_layout_pair(&l, 1) == 5 && lapse_layout_pair(&l, 6) == 2);
}

TEST(layout_homes_while_stable)
{
    struct lapse_layout l = {.shards = 8, .prev_shards = 8, .state = LAPSE_LAYOUT_STABLE};
    for (uint64_t h = 0; h < 64; h++) {
        CHECK(!lapse_layout_moves(&l, h));
        CHECK(lapse_layout_old_home(&l, h) == (h & 7) && lapse_layout_new_home(&l, h) == (h & 7));
    }
    for (uint32_t s = 0; s < 8; s++)
        CHECK(!lapse_layout_gives(&l, s) && !lapse_layout_receives(&l, s));
    /* a split from one shard */
    struct lapse_layout one = {.shards = 2, .prev_shards = 1, .state = LAPSE_LAYOUT_SPLITTING};
    CHECK(lapse_layout_moves(&one, 1) && !lapse_layout_moves(&one, 2));
    CHECK(lapse_layout_gives(&one, 0) && lapse_layout_receives(&one, 1));
    CHECK(lapse_layout_pair(&one, 0) == 1);
}

TEST(layout_homes_of_a_merge)
{
    struct lapse_layout l = {.shards = 4, .prev_shards = 8, .state = LAPSE_LAYOUT_MERGING};
    for (uint64_t h = 0; h < 64; h++) {
        CHECK(lapse_layout_old_home(&l, h) == (h & 7));
        CHECK(lapse_layout_new_home(&l, h) == (h & 3));
        /* every ID of a retiring shard moves, into its pair */
        CHECK(lapse_layout_moves(&l, h) == ((h & 4) != 0));
        if (lapse_layout_moves(&l, h))
            CHECK(lapse_layout_pair(&l, lapse_layout_old_home(&l, h)) ==
                  lapse_layout_new_home(&l, h));
    }
    CHECK(lapse_layout_span(&l) == 8);
    for (uint32_t s = 0; s < 8; s++) {
        CHECK(lapse_layout_gives(&l, s) == (s >= 4));
        CHECK(lapse_layout_receives(&l, s) == (s < 4));
        CHECK(lapse_layout_pair(&l, lapse_layout_pair(&l, s)) == s);
        CHECK(!lapse_layout_retired(&l, s));
    }
    CHECK(lapse_layout_pair(&l, 5) == 1 && lapse_layout_pair(&l, 2) == 6);
    /* down to one shard */
    struct lapse_layout one = {.shards = 1, .prev_shards = 2, .state = LAPSE_LAYOUT_MERGING};
    CHECK(lapse_layout_moves(&one, 1) && !lapse_layout_moves(&one, 2));
    CHECK(lapse_layout_gives(&one, 1) && lapse_layout_receives(&one, 0));
    CHECK(!lapse_layout_gives(&one, 0) && !lapse_layout_receives(&one, 1));
}

TEST(layout_retired_shards)
{
    /* merged 8 -> 4, then split back to 8 and merged to 2: 2..7 retired */
    struct lapse_layout l = {.shards = 4, .prev_shards = 4, .retired = 8};
    CHECK(!lapse_layout_retired(&l, 3) && lapse_layout_retired(&l, 4) &&
          lapse_layout_retired(&l, 7) && !lapse_layout_retired(&l, 8));
    l.shards = 8, l.prev_shards = 4, l.state = LAPSE_LAYOUT_SPLITTING;
    CHECK(!lapse_layout_retired(&l, 7));
    struct lapse_layout never = {.shards = 4, .prev_shards = 4};
    CHECK(!lapse_layout_retired(&never, 4));
    CHECK(strcmp(lapse_layout_state_name(LAPSE_LAYOUT_MERGING), "merging") == 0);
    CHECK(strcmp(lapse_layout_state_name(LAPSE_LAYOUT_STABLE), "stable") == 0);
}
