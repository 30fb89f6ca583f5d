/* Unit tests of common/prom.c and scanner/metrics.c: the Prometheus text a
 * scanner renders, without sockets. */
#include "t.h"

#include <stdlib.h>

#include "metrics.h"
#include "prom.h"

/* The value of the sample whose line starts with `prefix` (name{labels}). */
static const char *sample(const char *text, const char *prefix)
{
    static char v[64];
    const char *p = text;
    size_t n = strlen(prefix);
    while (p && *p) {
        if (strncmp(p, prefix, n) == 0 && p[n] == ' ') {
            size_t len = strcspn(p + n + 1, "\n");
            snprintf(v, sizeof v, "%.*s", (int)len, p + n + 1);
            return v;
        }
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return NULL;
}

TEST(prom_escape_label_values)
{
    char b[32];
    lapse_prom_escape(b, sizeof b, "a\"b\\c\nd");
    CHECK_STR(b, "a\\\"b\\\\c\\nd");
    lapse_prom_escape(b, 4, "abcdef");
    CHECK_STR(b, "abc");
    lapse_prom_escape(b, 3, "a\"b"); /* never half an escape */
    CHECK_STR(b, "a");
}

TEST(prom_histogram_is_cumulative)
{
    char buf[1024];
    struct lapse_prom o;
    const double bounds[3] = {0.001, 0.25, 2};
    const uint64_t counts[4] = {1, 2, 0, 3};
    lapse_prom_init(&o, buf, sizeof buf);
    lapse_prom_histogram(&o, "x_seconds", "ns=\"d\"", bounds, counts, 3, 1.5);
    REQUIRE(lapse_prom_end(&o) > 0);
    CHECK_STR(sample(buf, "x_seconds_bucket{ns=\"d\",le=\"0.001\"}"), "1");
    CHECK_STR(sample(buf, "x_seconds_bucket{ns=\"d\",le=\"0.25\"}"), "3");
    CHECK_STR(sample(buf, "x_seconds_bucket{ns=\"d\",le=\"2\"}"), "3");
    CHECK_STR(sample(buf, "x_seconds_bucket{ns=\"d\",le=\"+Inf\"}"), "6");
    CHECK_STR(sample(buf, "x_seconds_count{ns=\"d\"}"), "6");
    CHECK_STR(sample(buf, "x_seconds_sum{ns=\"d\"}"), "1.500000");
}

TEST(prom_overflow_is_reported)
{
    char buf[16];
    struct lapse_prom o;
    lapse_prom_init(&o, buf, sizeof buf);
    lapse_prom_printf(&o, "0123456789");
    CHECK(lapse_prom_end(&o) == 10);
    lapse_prom_printf(&o, "0123456789");
    CHECK(lapse_prom_end(&o) == -1);
    CHECK_STR(buf, "0123456789"); /* what fitted, no half line */
}

TEST(metrics_render_names_units_and_values)
{
    struct lapse_metrics *m = calloc(1, sizeof *m);
    REQUIRE(m);
    m->ns = "demo";
    m->shard = 3;
    atomic_store(&m->acked, 42);
    atomic_store(&m->redis_up, 1);
    atomic_store(&m->splitting, 1);
    atomic_store(&m->layout_epoch, 7);
    atomic_store(&m->oldest_overdue_ms, 1500);
    lapse_metrics_lateness(m, 0);    /* le 0.001 */
    lapse_metrics_lateness(m, 200);  /* le 0.25 */
    lapse_metrics_lateness(m, -5);   /* clamped to 0 */
    lapse_metrics_lateness(m, 10000000); /* above every bound */
    char buf[16384];
    int n = lapse_metrics_render(m, buf, sizeof buf);
    REQUIRE(n > 0 && (size_t)n == strlen(buf));
    const char *l = "{ns=\"demo\",shard=\"3\"}";
    char k[128];
#define S(name) (snprintf(k, sizeof k, "lapse_scanner_%s%s", name, l), sample(buf, k))
    CHECK_STR(S("events_acked_total"), "42");
    CHECK_STR(S("redis_up"), "1");
    CHECK_STR(S("splitting"), "1");
    CHECK_STR(S("layout_epoch"), "7");
    CHECK_STR(S("oldest_overdue_seconds"), "1.500");
    CHECK_STR(S("lateness_seconds_count"), "4");
    CHECK_STR(S("lateness_seconds_sum"), "10000.200000");
#undef S
    CHECK_STR(sample(buf, "lapse_scanner_lateness_seconds_bucket{ns=\"demo\",shard=\"3\",le=\"0.001\"}"), "2");
    CHECK_STR(sample(buf, "lapse_scanner_lateness_seconds_bucket{ns=\"demo\",shard=\"3\",le=\"0.25\"}"), "3");
    CHECK_STR(sample(buf, "lapse_scanner_lateness_seconds_bucket{ns=\"demo\",shard=\"3\",le=\"300\"}"), "3");
    CHECK_STR(sample(buf, "lapse_scanner_lateness_seconds_bucket{ns=\"demo\",shard=\"3\",le=\"+Inf\"}"), "4");
    CHECK(strstr(buf, "# TYPE lapse_scanner_lateness_seconds histogram\n"));
    CHECK(strstr(buf, "# TYPE lapse_scanner_events_acked_total counter\n"));
    CHECK(strstr(buf, "# TYPE lapse_scanner_redis_up gauge\n"));
    CHECK(!strstr(buf, "_ms")); /* base units only */
    CHECK(lapse_metrics_render(m, buf, 100) == -1);
    free(m);
}

TEST(metrics_ready_needs_redis)
{
    struct lapse_metrics *m = calloc(1, sizeof *m);
    REQUIRE(m);
    m->ns = "demo";
    char why[128] = "";
    CHECK(!lapse_metrics_ready(m, why, sizeof why)); /* layout not read yet */
    CHECK(why[0]);
    atomic_store(&m->attached, 1);
    CHECK(!lapse_metrics_ready(m, why, sizeof why));
    CHECK(strstr(why, "Redis"));
    atomic_store(&m->redis_up, 1);
    CHECK(lapse_metrics_ready(m, why, sizeof why)); /* standby is ready too */
    free(m);
}
