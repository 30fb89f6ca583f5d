/*
 * test_scrape — the scaler's reading of a scanner's /metrics
 * (tools/scale/autoscale_scrape.h): the parser on a page the scanner
 * renders (scanner/metrics.h) and on hand-written text (labels in another
 * order, other metrics between, +Inf), the busy fraction and the lateness
 * p99 between two pages, a restart, no event.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale_scrape.h"
#include "metrics.h"
#include "t.h"

TEST(scrape_parse_a_scanner_page)
{
    struct lapse_metrics *m = calloc(1, sizeof *m);
    REQUIRE(m);
    m->ns = "demo";
    m->shard = 5;
    atomic_store(&m->busy_us, 1250000);
    atomic_store(&m->lease_held, 1);
    for (int i = 0; i < 98; i++)
        lapse_metrics_lateness(m, 3);  /* le 0.005 */
    lapse_metrics_lateness(m, 200);    /* le 0.25 */
    lapse_metrics_lateness(m, 400000); /* +Inf */
    static char buf[16384];
    REQUIRE(lapse_metrics_render(m, buf, sizeof buf) > 0);
    struct lapse_scrape_page p;
    REQUIRE(lapse_scrape_parse(buf, &p) == 0);
    CHECK(p.busy_s == 1.25);
    CHECK(p.lease_held == 1);
    REQUIRE(p.nbuckets == LAPSE_LATENESS_BUCKETS + 1);
    CHECK(p.le[0] == 0.001 && isinf(p.le[p.nbuckets - 1]));
    CHECK(p.count[2] == 98 && p.count[p.nbuckets - 1] == 100);
    struct lapse_scrape_page zero;
    lapse_scrape_parse("lapse_scanner_busy_seconds_total 0\n", &zero);
    /* 100 events: the 99th is in le 0.25 */
    CHECK(lapse_scrape_p99(&zero, &p) == 250);
    free(m);
}

TEST(scrape_parse_labels_and_other_lines)
{
    const char *text = "# HELP lapse_scanner_busy_seconds_total Time the loop worked.\n"
                       "# TYPE lapse_scanner_busy_seconds_total counter\n"
                       "lapse_scanner_busy_seconds_total_other 99\n"
                       "lapse_scanner_busy_seconds_total{shard=\"1\",ns=\"a\\\"b\"} 2.5\n"
                       "lapse_scanner_lease_held{ns=\"x\",shard=\"1\"} 0\n"
                       "lapse_scanner_lateness_seconds_bucket{le=\"0.1\",ns=\"x,y\"} 10\n"
                       "lapse_scanner_lateness_seconds_bucket{ns=\"x\",le=\"+Inf\"} 12\n"
                       "lapse_scanner_lateness_seconds_bucket{ns=\"x\",le=\"1\"} 11\n"
                       "lapse_scanner_lateness_seconds_sum{ns=\"x\"} 3.2\n"
                       "lapse_scanner_lateness_seconds_count{ns=\"x\"} 12\n";
    struct lapse_scrape_page p;
    REQUIRE(lapse_scrape_parse(text, &p) == 0);
    CHECK(p.busy_s == 2.5);
    CHECK(p.lease_held == 0);
    REQUIRE(p.nbuckets == 3); /* sorted by le */
    CHECK(p.le[0] == 0.1 && p.le[1] == 1 && isinf(p.le[2]));
    CHECK(p.count[0] == 10 && p.count[1] == 11 && p.count[2] == 12);
    /* not a scanner's page */
    CHECK(lapse_scrape_parse("up 1\n", &p) == -1);
    CHECK(p.nbuckets == 0 && p.busy_s == -1);
    CHECK(lapse_scrape_parse("", &p) == -1);
}

TEST(scrape_busy_and_p99_between_pages)
{
    struct lapse_scrape_page a, b;
    lapse_scrape_parse("lapse_scanner_busy_seconds_total 10\n"
                       "lapse_scanner_lateness_seconds_bucket{le=\"0.01\"} 50\n"
                       "lapse_scanner_lateness_seconds_bucket{le=\"1\"} 60\n"
                       "lapse_scanner_lateness_seconds_bucket{le=\"+Inf\"} 60\n",
                       &a);
    lapse_scrape_parse("lapse_scanner_busy_seconds_total 18\n"
                       "lapse_scanner_lateness_seconds_bucket{le=\"0.01\"} 50\n"
                       "lapse_scanner_lateness_seconds_bucket{le=\"1\"} 160\n"
                       "lapse_scanner_lateness_seconds_bucket{le=\"+Inf\"} 160\n",
                       &b);
    CHECK(fabs(lapse_scrape_busy(&a, &b, 10000) - 0.8) < 1e-9);
    CHECK(lapse_scrape_busy(&a, &b, 0) == -1);
    CHECK(lapse_scrape_busy(&b, &a, 10000) == -1); /* gone back: a restart */
    CHECK(lapse_scrape_busy(&a, &b, 4000) == 1);   /* clamped */
    /* the 100 events of the interval were all in le 1 (those before are not counted) */
    CHECK(lapse_scrape_p99(&a, &b) == 1000);
    CHECK(lapse_scrape_p99(&b, &b) == -1); /* no event */
    /* a restart counts from zero: b's counts alone (160: 99 % is 159 -> le 1) */
    CHECK(lapse_scrape_p99(&b, &a) == 1000);
    struct lapse_scrape_page c;
    lapse_scrape_parse("lapse_scanner_busy_seconds_total 18\n"
                       "lapse_scanner_lateness_seconds_bucket{le=\"0.01\"} 50\n"
                       "lapse_scanner_lateness_seconds_bucket{le=\"1\"} 160\n"
                       "lapse_scanner_lateness_seconds_bucket{le=\"+Inf\"} 170\n",
                       &c);
    CHECK(lapse_scrape_p99(&b, &c) == INT64_MAX); /* the 10 events above the last bound */
}

TEST(scrape_get_refused)
{
    char err[256] = "";
    /* port 1 on loopback: nobody listens (refused at once) */
    char *body = lapse_scrape_get("127.0.0.1", 1, 500, err, sizeof err);
    CHECK(body == NULL);
    CHECK(strstr(err, "127.0.0.1:1: ") == err);
    free(body);
}
