/*
 * test_reaper — the ingress's reaper: every item put is destroyed exactly
 * once, in the order put, on the reaper's thread; a drain returns only
 * once nothing is left, also while the thread is in the middle of a
 * hand-over; and when the thread is far behind, the owner destroys the
 * items itself instead of holding more than LAPSE_REAPER_BACKLOG. Each
 * test ends by SIGALRM within 60 s (a lost wake-up hangs).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "reaper.h"
#include "t.h"

#define ITEMS 300000

static unsigned char destroyed[ITEMS];
static atomic_size_t ndestroyed, on_owner, out_of_order;
static pthread_t owner;
static size_t last = SIZE_MAX;
static atomic_int held;    /* set: the thread stops at item 0 until it is cleared */
static atomic_int stopped; /* the thread is stopped at item 0 */

static void destroy_item(void *item)
{
    size_t i = (size_t)(uintptr_t)item - 1;
    stopped = i == 0 && held;
    while (i == 0 && held) {
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
    }
    destroyed[i]++;
    if (pthread_equal(pthread_self(), owner))
        on_owner++;
    else if (last != SIZE_MAX && i < last)
        out_of_order++; /* the thread's own items come in the order put */
    if (!pthread_equal(pthread_self(), owner))
        last = i;
    ndestroyed++;
}

static void *item_of(size_t i)
{
    return (void *)(uintptr_t)(i + 1);
}

TEST(reaper_destroys_each_once_in_order)
{
    alarm(60);
    owner = pthread_self();
    lapse_reaper *r = lapse_reaper_new(destroy_item);
    REQUIRE(r);
    for (size_t i = 0; i < 100000; i++) {
        lapse_reaper_put(r, item_of(i));
        if (i % 700 == 699)
            lapse_reaper_hand(r);
    }
    lapse_reaper_drain(r); /* hands the last 100000 % 700 too */
    CHECK(ndestroyed == 100000);
    size_t twice = 0, never = 0;
    for (size_t i = 0; i < 100000; i++) {
        twice += destroyed[i] > 1;
        never += destroyed[i] == 0;
    }
    CHECK(twice == 0 && never == 0);
    CHECK(on_owner == 0);
    CHECK(out_of_order == 0);
    lapse_reaper_put(r, item_of(100000)); /* put, never handed: free destroys it */
    lapse_reaper_free(r);
    CHECK(destroyed[100000] == 1);
    lapse_reaper_free(NULL);
}

/* The thread held at its first item: once LAPSE_REAPER_BACKLOG items wait,
 * the owner destroys the next hand-overs itself; released, the thread
 * destroys its backlog, and nothing is destroyed twice. */
TEST(reaper_far_behind_owner_destroys)
{
    alarm(60);
    owner = pthread_self();
    held = 1;
    lapse_reaper *r = lapse_reaper_new(destroy_item);
    REQUIRE(r);
    size_t hands = 0;
    for (size_t i = 0; i < ITEMS; i++) {
        lapse_reaper_put(r, item_of(i));
        if (i % 1000 == 999) {
            lapse_reaper_hand(r);
            hands++;
        }
    }
    /* the thread took item 0 and waits: the backlog held what fit, the
     * owner destroyed the rest, each hand-over whole */
    CHECK(on_owner >= ITEMS - LAPSE_REAPER_BACKLOG);
    CHECK(on_owner % 1000 == 0);
    CHECK(destroyed[0] == 0);
    held = 0;
    lapse_reaper_drain(r);
    CHECK(ndestroyed == ITEMS);
    size_t bad = 0;
    for (size_t i = 0; i < ITEMS; i++)
        bad += destroyed[i] != 1;
    CHECK(bad == 0);
    CHECK(hands == ITEMS / 1000);
    lapse_reaper_free(r);
}

static void *release_later(void *arg)
{
    (void)arg;
    struct timespec ms50 = {0, 50 * 1000000L};
    nanosleep(&ms50, NULL);
    held = 0;
    return NULL;
}

/* The thread holds a whole hand-over (nothing handed, all of it in its
 * hands, stopped at item 0): the drain waits for those too. */
TEST(reaper_drain_waits_for_the_thread)
{
    alarm(60);
    owner = pthread_self();
    held = 1;
    lapse_reaper *r = lapse_reaper_new(destroy_item);
    REQUIRE(r);
    for (size_t i = 0; i < 100; i++)
        lapse_reaper_put(r, item_of(i));
    lapse_reaper_hand(r);
    while (!stopped) /* the thread took the whole hand-over */
        sched_yield();
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, release_later, NULL) == 0);
    lapse_reaper_drain(r);
    CHECK(ndestroyed == 100);
    CHECK(on_owner == 0);
    pthread_join(t, NULL);
    lapse_reaper_free(r);
}
