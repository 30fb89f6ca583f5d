/* Unit tests of producer/lib/slack.c: what a bounded-slack producer remembers. */
#include "t.h"

#include <stdio.h>

#include "hash.h"
#include "slack.h"

static uint64_t h(const char *id)
{
    return lapse_hash(id, strlen(id));
}

TEST(slack_covered_only_up_to_what_was_written)
{
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    CHECK(!lapse_slack_covered(s, h("dev-1"), "dev-1", 5, 1000, NULL));
    REQUIRE(lapse_slack_set(s, h("dev-1"), "dev-1", 5, 6000, 0, 0) == 0);
    CHECK(lapse_slack_covered(s, h("dev-1"), "dev-1", 5, 1000, NULL));
    CHECK(lapse_slack_covered(s, h("dev-1"), "dev-1", 5, 6000, NULL));
    CHECK(!lapse_slack_covered(s, h("dev-1"), "dev-1", 5, 6001, NULL)); /* would be early */
    CHECK(!lapse_slack_covered(s, h("dev-2"), "dev-2", 5, 1, NULL));
    lapse_slack_forget(s, h("dev-1"), "dev-1", 5);
    CHECK(!lapse_slack_covered(s, h("dev-1"), "dev-1", 5, 1, NULL));
    CHECK(lapse_slack_count(s) == 0);
    lapse_slack_free(s);
}

TEST(slack_set_replaces)
{
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    REQUIRE(lapse_slack_set(s, h("a"), "a", 1, 100, 0, 0) == 0);
    REQUIRE(lapse_slack_set(s, h("a"), "a", 1, 50, 0, 0) == 0);
    CHECK(!lapse_slack_covered(s, h("a"), "a", 1, 60, NULL));
    CHECK(lapse_slack_count(s) == 1);
    lapse_slack_free(s);
}

TEST(slack_marks_come_back_with_what_covers)
{
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    uint32_t mark = 99;
    REQUIRE(lapse_slack_set(s, h("a"), "a", 1, 100, 0, 7) == 0);
    CHECK(lapse_slack_covered(s, h("a"), "a", 1, 100, &mark) && mark == 7);
    mark = 99;
    CHECK(!lapse_slack_covered(s, h("a"), "a", 1, 101, &mark) && mark == 99); /* untouched */
    REQUIRE(lapse_slack_set(s, h("a"), "a", 1, 200, 0, 8) == 0);
    CHECK(lapse_slack_covered(s, h("a"), "a", 1, 150, &mark) && mark == 8);
    char id[100];
    memset(id, 'x', sizeof id); /* out of line */
    REQUIRE(lapse_slack_set(s, lapse_hash(id, sizeof id), id, sizeof id, 100, 0, 0xfffffffe) == 0);
    CHECK(lapse_slack_covered(s, lapse_hash(id, sizeof id), id, sizeof id, 1, &mark) &&
          mark == 0xfffffffe);
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
        REQUIRE(lapse_slack_set(s, lapse_hash(id, (size_t)n), id, (size_t)n, i, 0, 0) == 0);
    }
    CHECK(lapse_slack_count(s) == 5000);
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(id, sizeof id, "new-%d", i);
        REQUIRE(lapse_slack_set(s, lapse_hash(id, (size_t)n), id, (size_t)n, 20000, 10000, 0) == 0);
    }
    CHECK(lapse_slack_count(s) < 10000);
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(id, sizeof id, "new-%d", i);
        CHECK(lapse_slack_covered(s, lapse_hash(id, (size_t)n), id, (size_t)n, 20000, NULL));
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
        int n = snprintf(id, sizeof id,
                         i % 7 ? "dev-%d" : "a-long-device-identifier-of-more-than-36-bytes-%d", i);
        uint64_t h = lapse_hash(id, (size_t)n);
        if ((r >> 20) % 3 == 0) {
            lapse_slack_forget(s, h, id, (size_t)n);
            model[i] = 0;
        } else {
            int64_t d = 1000 + (int64_t)((r >> 40) % 1000);
            REQUIRE(lapse_slack_set(s, h, id, (size_t)n, d, 0, 0) == 0);
            model[i] = d;
        }
    }
    size_t live = 0;
    for (int i = 0; i < N; i++) {
        int n = snprintf(id, sizeof id,
                         i % 7 ? "dev-%d" : "a-long-device-identifier-of-more-than-36-bytes-%d", i);
        uint64_t h = lapse_hash(id, (size_t)n);
        if (model[i]) {
            live++;
            CHECK(lapse_slack_covered(s, h, id, (size_t)n, model[i], NULL));
            CHECK(!lapse_slack_covered(s, h, id, (size_t)n, model[i] + 1, NULL));
        } else
            CHECK(!lapse_slack_covered(s, h, id, (size_t)n, 1, NULL));
    }
    CHECK(lapse_slack_count(s) == live);
    lapse_slack_free(s);
}

/* IDs around and far past the inline size (40 bytes) up to the 512-byte
 * maximum: stored out of line, compared in full, freed when forgotten. */
TEST(slack_long_ids)
{
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    static const size_t lens[] = {1, 39, 40, 41, 100, 511, 512};
    enum { NL = sizeof lens / sizeof lens[0] };
    char id[NL][512];
    for (size_t k = 0; k < NL; k++) {
        memset(id[k], 'x', lens[k]);
        id[k][lens[k] - 1] = (char)('a' + k); /* the last byte tells them apart */
        REQUIRE(lapse_slack_set(s, lapse_hash(id[k], lens[k]), id[k], lens[k], 100 + (int64_t)k, 0,
                                0) == 0);
    }
    CHECK(lapse_slack_count(s) == NL);
    for (size_t k = 0; k < NL; k++) {
        uint64_t hk = lapse_hash(id[k], lens[k]);
        CHECK(lapse_slack_covered(s, hk, id[k], lens[k], 100 + (int64_t)k, NULL));
        CHECK(!lapse_slack_covered(s, hk, id[k], lens[k], 101 + (int64_t)k, NULL));
        /* same length and hash, last byte differs: not this ID */
        char other[512];
        memcpy(other, id[k], lens[k]);
        other[lens[k] - 1] = 'z';
        CHECK(!lapse_slack_covered(s, hk, other, lens[k], 0, NULL));
    }
    for (size_t k = 0; k < NL; k += 2)
        lapse_slack_forget(s, lapse_hash(id[k], lens[k]), id[k], lens[k]);
    for (size_t k = 0; k < NL; k++)
        CHECK(lapse_slack_covered(s, lapse_hash(id[k], lens[k]), id[k], lens[k], 0, NULL) ==
              (k % 2 == 1));
    CHECK(lapse_slack_count(s) == NL / 2);
    lapse_slack_free(s); /* frees the long ones still held (ASan checks) */
}

/* A hash is only a hint: two IDs forced to the same hash (even 0, which is
 * what an empty slot is made of) stay two IDs. */
TEST(slack_equal_hash_is_not_equal_id)
{
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    static const uint64_t hashes[] = {0, 1, 0x9e3779b97f4a7c15ULL, ~0ULL};
    for (size_t k = 0; k < sizeof hashes / sizeof hashes[0]; k++) {
        uint64_t hk = hashes[k];
        REQUIRE(lapse_slack_set(s, hk, "dev-a", 5, 1000, 0, 0) == 0);
        CHECK(lapse_slack_covered(s, hk, "dev-a", 5, 1000, NULL));
        CHECK(!lapse_slack_covered(s, hk, "dev-b", 5, 1, NULL));  /* same length */
        CHECK(!lapse_slack_covered(s, hk, "dev-", 4, 1, NULL));   /* a prefix */
        CHECK(!lapse_slack_covered(s, hk, "dev-ab", 6, 1, NULL)); /* longer */
        REQUIRE(lapse_slack_set(s, hk, "dev-b", 5, 2000, 0, 0) == 0);
        CHECK(lapse_slack_covered(s, hk, "dev-b", 5, 2000, NULL));
        CHECK(!lapse_slack_covered(s, hk, "dev-a", 5, 1001, NULL)); /* a kept its own */
        lapse_slack_forget(s, hk, "dev-a", 5);
        CHECK(!lapse_slack_covered(s, hk, "dev-a", 5, 1, NULL));
        CHECK(lapse_slack_covered(s, hk, "dev-b", 5, 2000, NULL));
        lapse_slack_forget(s, hk, "dev-b", 5);
        CHECK(lapse_slack_count(s) == 0);
    }
    /* a real hash of 0 next to the same ID under another hash */
    REQUIRE(lapse_slack_set(s, 0, "z", 1, 5, 0, 0) == 0);
    CHECK(!lapse_slack_covered(s, 1, "zz", 2, 1, NULL));
    CHECK(lapse_slack_covered(s, 0, "z", 1, 5, NULL));
    lapse_slack_free(s);
}

/* One long probe run that wraps around the end of the array (all hashes
 * forced to the last slots), then forgets from its middle: the backward
 * shift must keep every other ID reachable and leave no ghost. */
TEST(slack_forget_in_probe_runs)
{
    enum { N = 150 }; /* below the first growth of a new table */
    char id[N][16];
    uint64_t hs[N];
    for (int pass = 0; pass < 3; pass++) {
        lapse_slack *s = lapse_slack_new();
        REQUIRE(s);
        for (int i = 0; i < N; i++) {
            snprintf(id[i], sizeof id[i], "run-%d", i);
            /* homes: a few near the end of a 256-slot array, so the run wraps */
            hs[i] = ((uint64_t)i << 32) | (uint64_t)(250 + i % 6);
            REQUIRE(lapse_slack_set(s, hs[i], id[i], strlen(id[i]), 10 + i, 0, 0) == 0);
        }
        int gone[N] = {0};
        for (int i = pass; i < N; i += 3 + pass) {
            lapse_slack_forget(s, hs[i], id[i], strlen(id[i]));
            gone[i] = 1;
        }
        lapse_slack_forget(s, hs[1], "not-there", 9); /* a miss changes nothing */
        size_t live = 0;
        for (int i = 0; i < N; i++) {
            live += !gone[i];
            CHECK(lapse_slack_covered(s, hs[i], id[i], strlen(id[i]), gone[i] ? 0 : 10 + i, NULL) ==
                  !gone[i]);
        }
        CHECK(lapse_slack_count(s) == live);
        /* and set again: they come back and the others stay */
        for (int i = 0; i < N; i++)
            if (gone[i])
                REQUIRE(lapse_slack_set(s, hs[i], id[i], strlen(id[i]), 7, 0, 0) == 0);
        for (int i = 0; i < N; i++)
            CHECK(lapse_slack_covered(s, hs[i], id[i], strlen(id[i]), gone[i] ? 7 : 10 + i, NULL));
        CHECK(lapse_slack_count(s) == N);
        lapse_slack_free(s);
    }
}

/* 200k IDs grow the table many times; once they expire, 200k new ones
 * sweep them instead of growing further, and each survives intact. */
TEST(slack_many_ids_grow_then_sweep)
{
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    enum { N = 200000 };
    char id[64];
    for (int i = 0; i < N; i++) {
        int n = snprintf(id, sizeof id,
                         i % 5 ? "dev-%d" : "device-with-a-long-name-past-the-inline-part-%d", i);
        REQUIRE(lapse_slack_set(s, lapse_hash(id, (size_t)n), id, (size_t)n, 1000 + i % 100, 0,
                                0) == 0);
    }
    CHECK(lapse_slack_count(s) == N);
    for (int i = 0; i < N; i++) {
        int n = snprintf(id, sizeof id,
                         i % 5 ? "dev-%d" : "device-with-a-long-name-past-the-inline-part-%d", i);
        CHECK(
            lapse_slack_covered(s, lapse_hash(id, (size_t)n), id, (size_t)n, 1000 + i % 100, NULL));
    }
    /* now = 5000: every old deadline (< 1100) has passed */
    for (int i = 0; i < N; i++) {
        int n = snprintf(id, sizeof id, "new-%d", i);
        REQUIRE(lapse_slack_set(s, lapse_hash(id, (size_t)n), id, (size_t)n, 9000, 5000, 0) == 0);
    }
    CHECK(lapse_slack_count(s) >= N);
    CHECK(lapse_slack_count(s) < 2 * (size_t)N); /* some old ones were swept */
    for (int i = 0; i < N; i++) {
        int n = snprintf(id, sizeof id, "new-%d", i);
        CHECK(lapse_slack_covered(s, lapse_hash(id, (size_t)n), id, (size_t)n, 9000, NULL));
    }
    /* the expired ones that remain are still exact, not stale bytes */
    size_t old_left = 0;
    for (int i = 0; i < N; i++) {
        int n = snprintf(id, sizeof id,
                         i % 5 ? "dev-%d" : "device-with-a-long-name-past-the-inline-part-%d", i);
        old_left +=
            (size_t)lapse_slack_covered(s, lapse_hash(id, (size_t)n), id, (size_t)n, 0, NULL);
    }
    CHECK(lapse_slack_count(s) == N + old_left);
    lapse_slack_free(s);
}

/*
 * Differential: a few thousand random sets, forgets and lookups against a
 * plain array. Hashes come from a small set so that runs collide, and "now"
 * moves on so that sweeps happen. An entry whose deadline fell below some
 * set's "now" may have been swept: the model then allows present (with the
 * right deadline) or absent, and a set makes it certain again.
 */
TEST(slack_random_against_model)
{
    enum { NID = 600, STEPS = 6000 };
    static struct {
        int64_t deadline;
        int state; /* 0 absent, 1 present, 2 present or swept */
    } m[NID];
    lapse_slack *s = lapse_slack_new();
    REQUIRE(s);
    uint64_t r = 12345;
    int64_t now = 0;
    char id[80];
    for (int step = 0; step < STEPS; step++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        int i = (int)((r >> 33) % NID);
        int n = snprintf(id, sizeof id,
                         i % 4 ? "m-%d" : "model-id-long-enough-to-be-kept-outside-the-slot-%d", i);
        uint64_t hi = lapse_hash(id, (size_t)n) % 97; /* few hashes: collisions */
        int op = (int)((r >> 20) % 8);
        if (op < 4) {
            now += (int64_t)((r >> 45) % 3);
            int64_t d = now + (int64_t)((r >> 50) % 200) - 20;
            REQUIRE(lapse_slack_set(s, hi, id, (size_t)n, d, now, 0) == 0);
            for (int k = 0; k < NID; k++)
                if (m[k].state && m[k].deadline < now)
                    m[k].state = 2;
            m[i].deadline = d;
            m[i].state = 1;
        } else if (op < 6) {
            lapse_slack_forget(s, hi, id, (size_t)n);
            m[i].state = 0;
        } else {
            int64_t at = now + (int64_t)((r >> 50) % 200) - 40;
            int got = lapse_slack_covered(s, hi, id, (size_t)n, at, NULL);
            if (m[i].state == 1)
                CHECK(got == (m[i].deadline >= at));
            else if (m[i].state == 2)
                CHECK(!got || m[i].deadline >= at);
            else
                CHECK(!got);
        }
    }
    size_t sure = 0, maybe = 0;
    for (int k = 0; k < NID; k++) {
        sure += m[k].state == 1;
        maybe += m[k].state == 2;
    }
    CHECK(lapse_slack_count(s) >= sure && lapse_slack_count(s) <= sure + maybe);
    lapse_slack_free(s);
}
