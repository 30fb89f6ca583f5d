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
    const int64_t bounds[3] = {1, 250, 2000}; /* ms */
    atomic_uint_fast64_t counts[4] = {1, 2, 0, 3}, sum = 1500;
    struct lapse_prom_hist h = {bounds, 3, 1000, counts, &sum};
    lapse_prom_init(&o, buf, sizeof buf);
    lapse_prom_histogram(&o, "x_seconds", "X.", "ns=\"d\"", &h);
    REQUIRE(lapse_prom_end(&o) > 0);
    CHECK_STR(sample(buf, "x_seconds_bucket{ns=\"d\",le=\"0.001\"}"), "1");
    CHECK_STR(sample(buf, "x_seconds_bucket{ns=\"d\",le=\"0.25\"}"), "3");
    CHECK_STR(sample(buf, "x_seconds_bucket{ns=\"d\",le=\"2\"}"), "3");
    CHECK_STR(sample(buf, "x_seconds_bucket{ns=\"d\",le=\"+Inf\"}"), "6");
    CHECK_STR(sample(buf, "x_seconds_count{ns=\"d\"}"), "6");
    CHECK_STR(sample(buf, "x_seconds_sum{ns=\"d\"}"), "1.500000");
    CHECK(strstr(buf, "# HELP x_seconds X.\n# TYPE x_seconds histogram\n") == buf);
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
    atomic_store(&m->busy_us, 2500123);
    lapse_metrics_lateness(m, 0);        /* le 0.001 */
    lapse_metrics_lateness(m, 200);      /* le 0.25 */
    lapse_metrics_lateness(m, -5);       /* clamped to 0 */
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
    CHECK_STR(S("busy_seconds_total"), "2.500123");
    CHECK(strstr(buf, "# TYPE lapse_scanner_busy_seconds_total counter\n"));
    CHECK_STR(S("lateness_seconds_count"), "4");
    CHECK_STR(S("lateness_seconds_sum"), "10000.200000");
#undef S
    CHECK_STR(
        sample(buf, "lapse_scanner_lateness_seconds_bucket{ns=\"demo\",shard=\"3\",le=\"0.001\"}"),
        "2");
    CHECK_STR(
        sample(buf, "lapse_scanner_lateness_seconds_bucket{ns=\"demo\",shard=\"3\",le=\"0.25\"}"),
        "3");
    CHECK_STR(
        sample(buf, "lapse_scanner_lateness_seconds_bucket{ns=\"demo\",shard=\"3\",le=\"300\"}"),
        "3");
    CHECK_STR(
        sample(buf, "lapse_scanner_lateness_seconds_bucket{ns=\"demo\",shard=\"3\",le=\"+Inf\"}"),
        "4");
    CHECK(strstr(buf, "# TYPE lapse_scanner_lateness_seconds histogram\n"));
    CHECK(strstr(buf, "# TYPE lapse_scanner_events_acked_total counter\n"));
    CHECK(strstr(buf, "# TYPE lapse_scanner_redis_up gauge\n"));
    CHECK(!strstr(buf, "_ms")); /* base units only */
    CHECK(lapse_metrics_render(m, buf, 100) == -1);
    free(m);
}

TEST(metrics_render_redis_memory_once_read)
{
    struct lapse_metrics *m = calloc(1, sizeof *m);
    REQUIRE(m);
    m->ns = "demo";
    atomic_store(&m->memory_used, -1);
    atomic_store(&m->memory_max, -1);
    atomic_store(&m->evicting, -1);
    char buf[16384];
    REQUIRE(lapse_metrics_render(m, buf, sizeof buf) > 0);
    CHECK(!strstr(buf, "lapse_scanner_redis_memory")); /* not read: absent, not -1 */
    CHECK(!strstr(buf, "lapse_scanner_redis_evicting"));
    atomic_store(&m->memory_used, 3000000);
    atomic_store(&m->memory_max, 4000000);
    atomic_store(&m->evicting, 1);
    REQUIRE(lapse_metrics_render(m, buf, sizeof buf) > 0);
    CHECK_STR(sample(buf, "lapse_scanner_redis_memory_used_bytes{ns=\"demo\",shard=\"0\"}"),
              "3000000");
    CHECK_STR(sample(buf, "lapse_scanner_redis_memory_max_bytes{ns=\"demo\",shard=\"0\"}"),
              "4000000");
    CHECK_STR(sample(buf, "lapse_scanner_redis_evicting{ns=\"demo\",shard=\"0\"}"), "1");
    CHECK(strstr(buf, "# TYPE lapse_scanner_redis_evicting gauge\n"));
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

/* ---------------------------------------------------------------- ingress */

#include "ingress_metrics.h"

TEST(ingress_metrics_render_and_lag)
{
    struct lapse_ingress_metrics *m = lapse_ingress_metrics_new("demo");
    REQUIRE(m);
    atomic_store(&m->messages, 13);
    atomic_store(&m->redis_up, 1);
    lapse_ingress_metrics_reject(m, LAPSE_REJECT_NO_RULE);
    lapse_ingress_metrics_reject(m, LAPSE_REJECT_BAD_SIGNAL);
    lapse_ingress_metrics_reject(m, LAPSE_REJECT_NO_RULE);
    lapse_ingress_metrics_apply(m, 2);    /* le 0.003 */
    lapse_ingress_metrics_apply(m, 9000); /* le 10 */
    lapse_ingress_metrics_stage(m, LAPSE_STAGE_WAIT, 1500000000);
    lapse_ingress_metrics_stage(m, LAPSE_STAGE_WAIT, 250000);
    lapse_ingress_metrics_stage(m, LAPSE_STAGE_COUNT, 7); /* ignored */
    /* librdkafka's statistics: lag from consumer_lag, or from the consumed
     * position before any commit; the UA partition (-1), a partition no
     * longer fetched and one with nothing known are left out */
    const char *stats =
        "{\"name\":\"c\",\"topics\":{\"sig\\\"x\":{\"partitions\":{"
        "\"0\":{\"partition\":0,\"fetch_state\":\"active\",\"consumer_lag\":7,\"hi_offset\":9,"
        "\"ls_offset\":9,\"app_offset\":5},"
        "\"1\":{\"partition\":1,\"fetch_state\":\"active\",\"consumer_lag\":-1,\"hi_offset\":9,"
        "\"ls_offset\":9,\"app_offset\":4},"
        "\"2\":{\"partition\":2,\"fetch_state\":\"stopped\",\"consumer_lag\":3},"
        "\"3\":{\"partition\":3,\"fetch_state\":\"active\",\"consumer_lag\":-1,\"hi_offset\":-1,"
        "\"ls_offset\":-1,\"app_offset\":-1001},"
        "\"-1\":{\"partition\":-1,\"fetch_state\":\"none\",\"consumer_lag\":-1}}}}}";
    REQUIRE(lapse_ingress_metrics_stats(m, stats, strlen(stats)) == 0);
    CHECK(lapse_ingress_metrics_stats(m, "nope", 4) == -1); /* keeps the last table */
    char buf[16384];
    int n = lapse_ingress_metrics_render(m, buf, sizeof buf);
    REQUIRE(n > 0);
    CHECK_STR(sample(buf, "lapse_ingress_messages_total{ns=\"demo\"}"), "13");
    CHECK_STR(sample(buf, "lapse_ingress_rejected_total{ns=\"demo\",reason=\"no_rule\"}"), "2");
    CHECK_STR(sample(buf, "lapse_ingress_rejected_total{ns=\"demo\",reason=\"bad_signal\"}"), "1");
    CHECK_STR(sample(buf, "lapse_ingress_rejected_total{ns=\"demo\",reason=\"redis_refused\"}"),
              "0");
    CHECK_STR(
        sample(buf, "lapse_ingress_consumer_lag{ns=\"demo\",topic=\"sig\\\"x\",partition=\"0\"}"),
        "7");
    CHECK_STR(
        sample(buf, "lapse_ingress_consumer_lag{ns=\"demo\",topic=\"sig\\\"x\",partition=\"1\"}"),
        "5");
    CHECK(!strstr(buf, "partition=\"2\"") && !strstr(buf, "partition=\"3\"") &&
          !strstr(buf, "partition=\"-1\""));
    CHECK_STR(sample(buf, "lapse_ingress_batch_apply_seconds_bucket{ns=\"demo\",le=\"0.003\"}"),
              "1");
    CHECK_STR(sample(buf, "lapse_ingress_batch_apply_seconds_bucket{ns=\"demo\",le=\"10\"}"), "2");
    CHECK_STR(sample(buf, "lapse_ingress_batch_apply_seconds_sum{ns=\"demo\"}"), "9.002000");
    CHECK_STR(sample(buf, "lapse_ingress_stage_seconds_total{ns=\"demo\",stage=\"wait\"}"),
              "1.500250");
    CHECK_STR(sample(buf, "lapse_ingress_stage_seconds_total{ns=\"demo\",stage=\"fetch\"}"),
              "0.000000");
    CHECK(strstr(buf, "# TYPE lapse_ingress_stage_seconds_total counter\n"));
    CHECK(strstr(buf, "# TYPE lapse_ingress_consumer_lag gauge\n"));
    CHECK(lapse_ingress_metrics_render(m, buf, 200) == -1);
    char why[128];
    CHECK(!lapse_ingress_metrics_ready(m, why, sizeof why)); /* not consuming yet */
    atomic_store(&m->consuming, 1);
    CHECK(lapse_ingress_metrics_ready(m, why, sizeof why));
    atomic_store(&m->redis_up, 0);
    CHECK(!lapse_ingress_metrics_ready(m, why, sizeof why));
    CHECK(strstr(why, "Redis"));
    lapse_ingress_metrics_free(m);
}
