/*
 * test_autoscale — the scaler's rules (tools/scale/autoscale.h) on made-up
 * readings: the windows (every reading, without a break, at one shard
 * count), hysteresis, the cooldown, min and max shards, one step at a
 * time, a change under way finished first, a sawtooth shorter than the
 * windows changing nothing; and the scale group of the config: its
 * defaults, the example documenting it, a flapping config refused.
 */
#include <stdlib.h>
#include <string.h>

#include "autoscale.h"
#include "autoscale_read.h"
#include "config.h"
#include "config_text.h"
#include "t.h"

/* The config the tests decide under: 500 ms readings, up 3 s, down 8 s,
 * cooldown 4 s, 2..8 shards; due/s per shard up 10, down 4. */
static struct lapse_config rules(void)
{
    struct lapse_config c;
    memset(&c, 0, sizeof c);
    c.scale_interval_ms = 500;
    c.scale_up_due_per_shard = 10;
    c.scale_up_pending_per_shard = 1000;
    c.scale_up_overdue_ms = 30000;
    c.scale_down_due_per_shard = 4;
    c.scale_down_pending_per_shard = 400;
    c.scale_down_memory_pct = 50;
    c.scale_down_cpu_pct = 50;
    c.scale_tolerance_pct = 10;
    c.scale_up_window_ms = 3000;
    c.scale_down_window_ms = 8000;
    c.scale_cooldown_ms = 4000;
    c.scale_min_shards = 2;
    c.scale_max_shards = 8;
    c.scale_drain_rate = 5000;
    return c;
}

/* A complete reading at `at` of `shards` stable shards with due/s `due`. */
static struct lapse_autoscale_reading at(int64_t at_ms, uint32_t shards, double due)
{
    struct lapse_autoscale_reading r;
    memset(&r, 0, sizeof r);
    r.at_ms = at_ms;
    r.shards = r.prev = shards;
    r.ok = 1;
    r.due_per_s = due;
    r.pending = 100;
    r.overdue_ms = -1;
    r.memory_pct = -1;
    r.cpu_pct = -1;
    r.busy = -1;
    r.lateness_p99_ms = -1;
    return r;
}

/* Readings every 500 ms from `from` (inclusive) to `to` (inclusive) at
 * due/s `due`, appended to h at *n. */
static void fill(struct lapse_autoscale_reading *h, size_t *n, int64_t from, int64_t to,
                 uint32_t shards, double due)
{
    for (int64_t t = from; t <= to; t += 500)
        h[(*n)++] = at(t, shards, due);
}

static struct lapse_autoscale_reading hist[256];

TEST(autoscale_splits_after_the_up_window)
{
    struct lapse_config c = rules();
    struct lapse_autoscale_decision d;
    size_t n = 0;
    fill(hist, &n, 0, 10000, 2, 2);      /* quiet, 2 shards */
    fill(hist, &n, 10500, 13000, 2, 15); /* hot 2.5 s */
    lapse_autoscale_decide(&c, hist, n, 0, 13000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_NONE);
    CHECK(strstr(d.reason, "of up_window_ms 3000") != NULL);
    fill(hist, &n, 13500, 13500, 2, 15); /* hot 3 s */
    lapse_autoscale_decide(&c, hist, n, 0, 13500, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_SPLIT);
    CHECK(d.from == 2 && d.to == 4);
    CHECK(strncmp(d.reason, "split 2 -> 4: due/s per shard 15.0 > up_due_per_shard 10 for 3.0 s",
                  60) == 0);
    CHECK(strstr(d.reason, "cooldown over") != NULL);
}

TEST(autoscale_a_break_starts_the_window_again)
{
    struct lapse_config c = rules();
    struct lapse_autoscale_decision d;
    size_t n = 0;
    fill(hist, &n, 0, 2500, 2, 15);
    hist[n - 2].due_per_s = 9; /* one reading at 2000 below the threshold */
    fill(hist, &n, 3000, 4000, 2, 15);
    lapse_autoscale_decide(&c, hist, n, -100000, 4000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_NONE); /* hot since 2500: 1.5 s */
    /* a reading that failed is a break too */
    n = 0;
    fill(hist, &n, 0, 4000, 2, 15);
    hist[3].ok = 0;
    lapse_autoscale_decide(&c, hist, n, -100000, 4000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_NONE);
    fill(hist, &n, 4500, 5000, 2, 15); /* 3.0 s since the failed one's successor */
    lapse_autoscale_decide(&c, hist, n, -100000, 5000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_SPLIT);
}

TEST(autoscale_cooldown_and_max)
{
    struct lapse_config c = rules();
    struct lapse_autoscale_decision d;
    size_t n = 0;
    fill(hist, &n, 0, 5000, 2, 15);
    lapse_autoscale_decide(&c, hist, n, 2000, 5000, &d); /* a change ended 3 s ago */
    CHECK(d.action == LAPSE_AUTOSCALE_NONE);
    CHECK(strstr(d.reason, "cooldown_ms 4000: 1.0 s left") != NULL);
    lapse_autoscale_decide(&c, hist, n, 1000, 5000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_SPLIT);
    n = 0;
    fill(hist, &n, 0, 5000, 8, 15);
    lapse_autoscale_decide(&c, hist, n, -100000, 5000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_NONE);
    CHECK(strstr(d.reason, "max_shards 8") != NULL);
}

TEST(autoscale_merges_after_the_down_window_not_below_min)
{
    struct lapse_config c = rules();
    struct lapse_autoscale_decision d;
    size_t n = 0;
    fill(hist, &n, 0, 7500, 4, 1);
    lapse_autoscale_decide(&c, hist, n, -100000, 7500, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_NONE);
    CHECK(strstr(d.reason, "of down_window_ms 8000") != NULL);
    fill(hist, &n, 8000, 8000, 4, 1);
    lapse_autoscale_decide(&c, hist, n, -100000, 8000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_MERGE);
    CHECK(d.from == 4 && d.to == 2);
    CHECK(strncmp(d.reason, "merge 4 -> 2: below every down threshold for 8.0 s", 50) == 0);
    /* between the thresholds: neither */
    n = 0;
    fill(hist, &n, 0, 9000, 4, 6);
    lapse_autoscale_decide(&c, hist, n, -100000, 9000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_NONE);
    CHECK(strstr(d.reason, "due/s per shard 6.0 > down_due_per_shard 4") != NULL);
    /* a busy node holds a merge back */
    n = 0;
    fill(hist, &n, 0, 9000, 4, 1);
    hist[n - 1].cpu_pct = 80;
    lapse_autoscale_decide(&c, hist, n, -100000, 9000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_NONE);
    CHECK(strstr(d.reason, "Redis CPU 80 % > down_cpu_pct 50") != NULL);
    /* at min_shards */
    n = 0;
    fill(hist, &n, 0, 9000, 2, 1);
    lapse_autoscale_decide(&c, hist, n, -100000, 9000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_NONE);
    CHECK(strstr(d.reason, "min_shards 2") != NULL);
}

TEST(autoscale_one_step_at_a_time)
{
    struct lapse_config c = rules();
    struct lapse_autoscale_decision d;
    size_t n = 0;
    fill(hist, &n, 0, 5000, 2, 15);
    hist[n - 1].shards = 4; /* the split began: 2 -> 4 under way */
    hist[n - 1].changing = 1;
    lapse_autoscale_decide(&c, hist, n, -100000, 5000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_FINISH);
    CHECK(d.from == 2 && d.to == 4);
    CHECK(strstr(d.reason, "split 2 -> 4 under way") != NULL);
    /* finished: the readings at 2 shards count for nothing at 4 */
    fill(hist, &n, 5500, 6000, 4, 15);
    lapse_autoscale_decide(&c, hist, n, -100000, 6000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_NONE);
    CHECK(strstr(d.reason, "for 0.5 s of up_window_ms") != NULL);
}

TEST(autoscale_after_a_merge_no_split)
{
    /* the hysteresis rule: at the down threshold, twice the load per shard
     * is still below the up threshold */
    struct lapse_config c = rules();
    struct lapse_autoscale_reading r = at(0, 2, 2.0 * c.scale_down_due_per_shard);
    r.pending = 2.0 * c.scale_down_pending_per_shard;
    CHECK(!lapse_autoscale_hot(&c, &r));
}

/* The scanners' figures: busy 80 / 30 %, lateness p99 1000 ms. */
static struct lapse_config scanner_rules(void)
{
    struct lapse_config c = rules();
    c.scale_up_busy_pct = 80;
    c.scale_down_busy_pct = 30;
    c.scale_up_lateness_ms = 1000;
    return c;
}

TEST(autoscale_scanner_figures_hot)
{
    struct lapse_config c = scanner_rules();
    struct lapse_autoscale_decision d;
    size_t n = 0;
    fill(hist, &n, 0, 3000, 2, 2); /* Redis figures alone: quiet */
    for (size_t i = 0; i < n; i++)
        hist[i].busy = 0.9;
    lapse_autoscale_decide(&c, hist, n, -100000, 3000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_SPLIT);
    CHECK(strncmp(d.reason, "split 2 -> 4: scanner busy 90 % > up_busy_pct 80 for 3.0 s", 58) == 0);
    CHECK(strstr(d.reason, "scanner busy 90 % (up 80, down 30)") != NULL);
    /* lateness: a p99 above up_lateness_ms, or above the histogram's last bound */
    n = 0;
    fill(hist, &n, 0, 3000, 2, 2);
    for (size_t i = 0; i < n; i++)
        hist[i].lateness_p99_ms = i % 2 ? 5000 : INT64_MAX;
    lapse_autoscale_decide(&c, hist, n, -100000, 3000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_SPLIT);
    CHECK(strstr(d.reason, "lateness p99 above the last bucket > up_lateness_ms 1000") != NULL);
    struct lapse_autoscale_reading r = at(0, 2, 2);
    r.lateness_p99_ms = 1000; /* at the threshold: not above */
    CHECK(!lapse_autoscale_hot(&c, &r));
    r.lateness_p99_ms = 5000;
    CHECK(lapse_autoscale_hot(&c, &r));
    c.scale_up_lateness_ms = 0; /* 0: not a reason */
    CHECK(!lapse_autoscale_hot(&c, &r));
    r = at(0, 2, 2);
    r.busy = 0.99;
    c.scale_up_busy_pct = 0;
    CHECK(!lapse_autoscale_hot(&c, &r));
}

TEST(autoscale_scanner_figures_cold_and_unknown)
{
    struct lapse_config c = scanner_rules();
    struct lapse_autoscale_reading r = at(0, 4, 1);
    /* unknown (no scanner_hosts, no scanner answered, no event): neither
     * heats nor holds back */
    CHECK(lapse_autoscale_cold(&c, &r));
    struct lapse_autoscale_reading q = at(0, 4, 2);
    CHECK(!lapse_autoscale_hot(&c, &q));
    r.busy = 0.3, r.lateness_p99_ms = 500; /* at both down limits */
    CHECK(lapse_autoscale_cold(&c, &r));
    r.busy = 0.4;
    CHECK(!lapse_autoscale_cold(&c, &r) && !lapse_autoscale_hot(&c, &r));
    r.busy = 0.1, r.lateness_p99_ms = 1000; /* above up_lateness_ms / 2 */
    CHECK(!lapse_autoscale_cold(&c, &r) && !lapse_autoscale_hot(&c, &r));
    /* the reason names what holds the merge back */
    struct lapse_autoscale_decision d;
    size_t n = 0;
    fill(hist, &n, 0, 9000, 4, 1);
    hist[n - 1].busy = 0.45;
    hist[n - 1].lateness_p99_ms = 600;
    lapse_autoscale_decide(&c, hist, n, -100000, 9000, &d);
    CHECK(d.action == LAPSE_AUTOSCALE_NONE);
    CHECK(strstr(d.reason, "scanner busy 45 % > down_busy_pct 30; lateness p99 600 ms > "
                           "up_lateness_ms / 2") != NULL);
    /* a scanner not read is said in the figures */
    hist[n - 1].scanners_read = 3;
    hist[n - 1].scanners_unread = 1;
    lapse_autoscale_decide(&c, hist, n, -100000, 9000, &d);
    CHECK(strstr(d.reason, "(1 of 4 scanners not read)") != NULL);
    /* after a merge at the down limit, twice the work is not hot */
    r = at(0, 2, 1);
    r.busy = 2.0 * c.scale_down_busy_pct / 100;
    CHECK(!lapse_autoscale_hot(&c, &r));
}

TEST(autoscale_sawtooth_changes_nothing)
{
    /* hot 2 s, cold 2 s, for a minute: shorter than either window */
    struct lapse_config c = rules();
    static struct lapse_autoscale_reading h[256];
    size_t n = 0;
    int changes = 0;
    int64_t last = 0;
    for (int64_t t = 0; t <= 60000; t += 500) {
        size_t keep = lapse_autoscale_keep_from(&c, h, n, t);
        memmove(h, h + keep, (n - keep) * sizeof *h);
        n -= keep;
        h[n++] = at(t, 4, (t / 2000) % 2 ? 15 : 1);
        struct lapse_autoscale_decision d;
        lapse_autoscale_decide(&c, h, n, last, t, &d);
        if (d.action != LAPSE_AUTOSCALE_NONE)
            changes++;
    }
    CHECK(changes == 0);
}

TEST(autoscale_cpu_parse)
{
    CHECK(lapse_autoscale_cpu_parse("# CPU\r\nused_cpu_sys:1.50\r\nused_cpu_user:2.25\r\n") ==
          3.75);
    CHECK(lapse_autoscale_cpu_parse("# CPU\r\n") == -1);
}

TEST(autoscale_config_defaults_and_refusals)
{
    struct lapse_config c;
    REQUIRE(load_text(&c, MIN) == 0);
    CHECK(c.scale_interval_ms == 10000 && c.scale_up_window_ms == 60000);
    CHECK(c.scale_down_window_ms == 600000 && c.scale_cooldown_ms == 300000);
    CHECK(c.scale_up_due_per_shard == 5000 && c.scale_down_due_per_shard == 2000);
    CHECK(c.scale_min_shards == 1 && c.scale_max_shards == 64);
    CHECK(c.scale_start_cmd == NULL && c.scale_stop_cmd == NULL);
    CHECK_STR(c.scale_metrics_bind, "127.0.0.1");
    CHECK(c.scale_up_busy_pct == 80 && c.scale_down_busy_pct == 30);
    CHECK(c.scale_up_lateness_ms == 1000);
    CHECK(c.nscale_scanner_hosts == 0 && c.scale_scanner_hosts == NULL);
    lapse_config_free(&c);
    REQUIRE(lapse_config_load(&c, "lapse.conf.example", msg, sizeof msg) == 0);
    CHECK(c.scale_up_due_per_shard == 5000 && c.scale_drain_rate == 5000);
    CHECK(c.scale_up_busy_pct == 80 && c.scale_down_busy_pct == 30);
    CHECK(c.scale_up_lateness_ms == 1000 && c.nscale_scanner_hosts == 0);
    lapse_config_free(&c);
    expect_err(MIN "scale = {\n up_busy_pct = 80;\n down_busy_pct = 40;\n};\n",
               "FILE:6: scale.down_busy_pct: 40 is more than up_busy_pct / 2 * (1 - "
               "tolerance_pct / 100) = 36: after a merge each shard carries twice the load, "
               "which would call for a split again (raise up_busy_pct or lower down_busy_pct)");
    REQUIRE(load_text(&c, MIN "scale = { scanner_hosts = ( \"127.0.0.1\", \"::1\", "
                              "\"scan-1.example\" ); };\n") == 0);
    REQUIRE(c.nscale_scanner_hosts == 3);
    CHECK_STR(c.scale_scanner_hosts[0], "127.0.0.1");
    CHECK_STR(c.scale_scanner_hosts[1], "::1");
    CHECK_STR(c.scale_scanner_hosts[2], "scan-1.example");
    lapse_config_free(&c);
    expect_err(MIN "scale = { scanner_hosts = ( \"10.0.0.1:9100\" ); };\n",
               "FILE:4: scale.scanner_hosts[0]: expected a host name or address, without a port");
    expect_err(MIN "scale = { scanner_hosts = \"10.0.0.1\"; };\n",
               "FILE:4: scale.scanner_hosts: expected a list ( \"host\", ... )");
    expect_err(MIN "scale = {\n up_due_per_shard = 1000;\n down_due_per_shard = 460;\n};\n",
               "FILE:6: scale.down_due_per_shard: 460 is more than up_due_per_shard / 2 * (1 - "
               "tolerance_pct / 100) = 450: after a merge each shard carries twice the load, "
               "which would call for a split again (raise up_due_per_shard or lower "
               "down_due_per_shard)");
    expect_err(MIN "scale = { min_shards = 8; max_shards = 4; };\n",
               "FILE:4: scale.min_shards: 8 is more than max_shards 4");
    expect_err(MIN "scale = { max_shards = 12; };\n",
               "FILE:4: scale.max_shards: 12 is not a power of two between 1 and 4096");
    expect_err(MIN "scale = { interval_ms = 10; };\n",
               "FILE:4: scale.interval_ms: must be 100..3600000 (got 10)");
    /* an up threshold of 0 is no reason to split: its down one is free */
    REQUIRE(load_text(&c, MIN "scale = { up_pending_per_shard = 0; };\n") == 0);
    lapse_config_free(&c);
}

TEST(autoscale_example_documents_every_key)
{
    static const char *const names[] = {
        "interval_ms",     "up_due_per_shard",   "up_pending_per_shard",
        "up_overdue_ms",   "down_due_per_shard", "down_pending_per_shard",
        "down_memory_pct", "down_cpu_pct",       "tolerance_pct",
        "up_window_ms",    "down_window_ms",     "cooldown_ms",
        "min_shards",      "max_shards",         "start_cmd",
        "stop_cmd",        "drain_rate",         "scale",
        "up_busy_pct",     "down_busy_pct",      "up_lateness_ms",
        "scanner_hosts",
    };
    FILE *f = fopen("lapse.conf.example", "r");
    REQUIRE(f != NULL);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s =", names[i]);
        if (strstr(text, key) == NULL)
            fprintf(stderr, "    not in example: %s\n", names[i]);
        CHECK(strstr(text, key) != NULL);
    }
}
