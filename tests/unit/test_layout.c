/*
 * test_layout — a layout change in terms of homes (layout.h): which IDs
 * move during a split, from where to where, and which shards give, receive
 * and pair up; nothing moves while stable. The routing of every moving
 * ID, the scanners' checks and lapse-scale's moves ask these.
 */
#include "layout.h"
#include "t.h"

TEST(layout_homes_of_a_split)
{
    struct lapse_layout l = {.shards = 8, .prev_shards = 4, .splitting = 1};
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
    struct lapse_layout l = {.shards = 8, .prev_shards = 8, .splitting = 0};
    for (uint64_t h = 0; h < 64; h++) {
        CHECK(!lapse_layout_moves(&l, h));
        CHECK(lapse_layout_old_home(&l, h) == (h & 7) && lapse_layout_new_home(&l, h) == (h & 7));
    }
    for (uint32_t s = 0; s < 8; s++)
        CHECK(!lapse_layout_gives(&l, s) && !lapse_layout_receives(&l, s));
    /* a split from one shard */
    struct lapse_layout one = {.shards = 2, .prev_shards = 1, .splitting = 1};
    CHECK(lapse_layout_moves(&one, 1) && !lapse_layout_moves(&one, 2));
    CHECK(lapse_layout_gives(&one, 0) && lapse_layout_receives(&one, 1));
    CHECK(lapse_layout_pair(&one, 0) == 1);
}
