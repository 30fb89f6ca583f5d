/*
 * test_degrade — a primary short of replicas (producer/lib/degrade.c): one
 * retry window per primary, shared by every batch; after it, writes fail
 * at once except for a probe now and then (a back-off); a WAIT that sees
 * enough replicas ends it; another primary, or the same address on another
 * node, is not touched. A node that does not answer has the same window;
 * once it answers, its entries go, also one of an address a failover
 * replaced (but not a cluster's other primaries). The clock is passed in:
 * no I/O.
 */
#include <stdlib.h>

#include "clock.h"
#include "producer_priv.h"
#include "t.h"

TEST(degrade_window_then_fail_fast)
{
    struct lapse_config cfg = {0};
    cfg.redis_retry_timeout_ms = 3000;
    cfg.redis_wait_replicas = 1;
    struct lapse_producer p = {0};
    p.cfg = &cfg;
    char why[512];
    int64_t t0 = lapse_clock_mono_ms();

    CHECK(!degrade_any(&p));
    CHECK(degrade_gate(&p, 0, "10.0.0.1:6379", t0, why, sizeof why) == NULL);
    /* in the window: send again; the window is the primary's */
    CHECK(degrade_short(&p, 0, "10.0.0.1:6379", "WAIT: 0 of 1", t0) == 0);
    CHECK(degrade_any(&p));
    CHECK(degrade_short(&p, 0, "10.0.0.1:6379", "WAIT: 0 of 1", t0 + 2999) == 0);
    CHECK(degrade_gate(&p, 0, "10.0.0.1:6379", t0 + 2999, why, sizeof why) == NULL);
    /* the window closed: report, and fail at once until the probe */
    CHECK(degrade_short(&p, 0, "10.0.0.1:6379", "WAIT: 0 of 1", t0 + 3000) == 1);
    const char *r = degrade_gate(&p, 0, "10.0.0.1:6379", t0 + 3001, why, sizeof why);
    REQUIRE(r != NULL);
    CHECK(strstr(r, "primary 10.0.0.1:6379 has had fewer than 1 replicas for 3001 ms") == r);
    CHECK(strstr(r, "WAIT: 0 of 1") != NULL);
    /* the probe: within the first back-off step (125..250 ms) */
    CHECK(degrade_gate(&p, 0, "10.0.0.1:6379", t0 + 3000 + 250, why, sizeof why) == NULL);
    /* another primary, and the same address on another node: untouched */
    CHECK(degrade_gate(&p, 0, "10.0.0.2:6379", t0 + 3001, why, sizeof why) == NULL);
    CHECK(degrade_gate(&p, 1, "10.0.0.1:6379", t0 + 3001, why, sizeof why) == NULL);
    /* the probe falls short: fail at once again, the next probe later */
    CHECK(degrade_short(&p, 0, "10.0.0.1:6379", "WAIT: 0 of 1", t0 + 3250) == 1);
    CHECK(degrade_gate(&p, 0, "10.0.0.1:6379", t0 + 3251, why, sizeof why) != NULL);
    /* it confirms again: writes go out, no window left */
    degrade_ok(&p, 0, "10.0.0.1:6379");
    CHECK(!degrade_any(&p));
    CHECK(degrade_gate(&p, 0, "10.0.0.1:6379", t0 + 3251, why, sizeof why) == NULL);
    char addr[300];
    CHECK(lapse_producer_unconfirmed(&p, 0, addr, sizeof addr) == 0);
    CHECK(degrade_short(&p, 0, "10.0.0.1:6379", "WAIT: 0 of 1", t0 + 4000) == 0); /* a new window */
    REQUIRE(lapse_producer_unconfirmed(&p, 0, addr, sizeof addr) == 1);
    CHECK_STR(addr, "10.0.0.1:6379");
    degrade_free(&p);
}

TEST(degrade_node_down)
{
    struct lapse_config cfg = {0};
    cfg.redis_retry_timeout_ms = 2000;
    struct lapse_producer p = {0};
    p.cfg = &cfg;
    char why[512];
    int64_t t0 = lapse_clock_mono_ms();
    const char *refused = "redis 10.0.0.1:6379: connect: Connection refused";

    CHECK(degrade_down(&p, 1, "10.0.0.1:6379", refused, t0) == 0);
    CHECK(degrade_any(&p));
    CHECK(degrade_gate(&p, 1, "10.0.0.1:6379", t0 + 1999, why, sizeof why) == NULL);
    CHECK(degrade_down(&p, 1, "10.0.0.1:6379", refused, t0 + 2000) == 1);
    const char *r = degrade_gate(&p, 1, "10.0.0.1:6379", t0 + 2001, why, sizeof why);
    REQUIRE(r != NULL);
    CHECK(strstr(r, "primary 10.0.0.1:6379 has not answered for 2001 ms: ") == r);
    CHECK(strstr(r, refused) != NULL);
    /* a node down is no primary short of replicas */
    char addr[300];
    CHECK(lapse_producer_unconfirmed(&p, 0, addr, sizeof addr) == 0);
    /* another node is not held */
    CHECK(degrade_gate(&p, 0, "10.0.0.2:6379", t0 + 2001, why, sizeof why) == NULL);
    /* node 1 answers from another address (a failover): the old entry goes */
    degrade_ok(&p, 1, "10.0.0.4:6379");
    CHECK(!degrade_any(&p));
    CHECK(degrade_gate(&p, 1, "10.0.0.1:6379", t0 + 2101, why, sizeof why) == NULL);
    /* a cluster's primaries are judged one by one: one that answered says
     * nothing of another */
    p.several_servers = 1;
    CHECK(degrade_down(&p, 0, "10.0.0.5:6379", refused, t0) == 0);
    CHECK(degrade_down(&p, 0, "10.0.0.6:6379", refused, t0) == 0);
    degrade_ok(&p, 0, "10.0.0.5:6379");
    CHECK(degrade_any(&p));
    CHECK(degrade_down(&p, 0, "10.0.0.6:6379", refused, t0 + 2000) == 1);
    CHECK(degrade_gate(&p, 0, "10.0.0.6:6379", t0 + 2001, why, sizeof why) != NULL);
    degrade_free(&p);
}

/* A probe of a primary that answers but cannot confirm is known as such
 * (the producer asks it for its replicas first); one found short without a
 * write backs off like a probe whose WAIT fell short. A node that does not
 * answer is probed by its writes. */
TEST(degrade_probe_without_write)
{
    struct lapse_config cfg = {0};
    cfg.redis_retry_timeout_ms = 3000;
    cfg.redis_wait_replicas = 1;
    struct lapse_producer p = {0};
    p.cfg = &cfg;
    char why[512];
    int64_t t0 = lapse_clock_mono_ms();

    CHECK(!degrade_probing(&p, 0, "10.0.0.1:6379", t0));
    CHECK(degrade_short(&p, 0, "10.0.0.1:6379", "WAIT: 0 of 1", t0) == 0);
    CHECK(!degrade_probing(&p, 0, "10.0.0.1:6379", t0 + 100)); /* in the window: plain retries */
    CHECK(degrade_short(&p, 0, "10.0.0.1:6379", "WAIT: 0 of 1", t0 + 3000) == 1);
    CHECK(!degrade_probing(&p, 0, "10.0.0.1:6379", t0 + 3001));
    CHECK(degrade_probing(&p, 0, "10.0.0.1:6379", t0 + 3250)); /* the first step: 125..250 ms */
    /* found short without a write: fail at once again, the next probe later */
    degrade_probe_short(&p, 0, "10.0.0.1:6379", t0 + 3250);
    CHECK(!degrade_probing(&p, 0, "10.0.0.1:6379", t0 + 3251));
    CHECK(degrade_gate(&p, 0, "10.0.0.1:6379", t0 + 3251, why, sizeof why) != NULL);
    CHECK(degrade_probing(&p, 0, "10.0.0.1:6379", t0 + 3250 + 500)); /* the second: 250..500 */
    CHECK(degrade_gate(&p, 0, "10.0.0.1:6379", t0 + 3250 + 500, why, sizeof why) == NULL);
    /* a node that does not answer: its probe is its writes */
    CHECK(degrade_down(&p, 1, "10.0.0.2:6379", "connect: refused", t0) == 0);
    CHECK(degrade_down(&p, 1, "10.0.0.2:6379", "connect: refused", t0 + 3000) == 1);
    CHECK(!degrade_probing(&p, 1, "10.0.0.2:6379", t0 + 3250));
    CHECK(degrade_gate(&p, 1, "10.0.0.2:6379", t0 + 3250, why, sizeof why) == NULL);
    degrade_free(&p);
}
