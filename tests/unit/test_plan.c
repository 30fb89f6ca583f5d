/*
 * test_plan — lapse-scale plan's model (tools/scale/plan.c): more load
 * never plans less, shards are powers of two, each figure names the limit
 * that set it, the busiest node stays under the limits, and bad input is
 * refused; the options and a saved calibration read back, also one from
 * before the set-size fit; the fit recovers a known line from its points
 * and keeps it when a repeat in three is disturbed; the writes are charged
 * at the IDs the busiest node holds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan.h"
#include "plan_fit.h"
#include "t.h"

static struct lapse_plan_costs costs;
static struct lapse_plan_limits lim;

static void setup(void)
{
    lapse_plan_costs_default(&costs);
    lapse_plan_limits_default(&lim);
}

/* The writes' costs flat at every set size (the slopes at 0): for the
 * tests of what the figures add up to, not of the fit. */
static void flat(void)
{
    for (int f = 0; f < LAPSE_PLAN_FORMS; f++) {
        struct lapse_plan_form_costs *k = &costs.form[f];
        k->new_per_doubling = k->reset_per_doubling = k->extend_per_doubling = 0;
    }
}

static struct lapse_plan_load load(double ids, double signals, double fires)
{
    return (struct lapse_plan_load){
        .ids = ids, .signals = signals, .fires = fires, .news = -1, .id_bytes = 16};
}

static int make(const struct lapse_plan_load *l, struct lapse_plan *p)
{
    char err[256];
    return lapse_plan_make(&costs, l, &lim, p, err, sizeof err);
}

TEST(plan_small_load_one_of_each)
{
    setup();
    struct lapse_plan_load l = load(1000, 10, 1);
    struct lapse_plan p;
    REQUIRE(make(&l, &p) == 0);
    CHECK(p.shards == 1 && p.nodes == 1 && p.scanners == 1);
    CHECK_STR(lapse_plan_why_name(p.shards_why), "minimum");
    CHECK_STR(lapse_plan_why_name(p.nodes_why), "minimum");
    CHECK(p.cores > 0 && p.cores < 0.01);
    /* new IDs default to the fires: the population stays */
    CHECK(p.news == 1);
}

TEST(plan_figures_add_up)
{
    setup();
    struct lapse_plan_load l = load(1e6, 1000, 100);
    l.news = 50;
    struct lapse_plan p;
    REQUIRE(make(&l, &p) == 0);
    const struct lapse_plan_form_costs *k = &costs.form[LAPSE_PLAN_ONE_ZSET];
    /* the writes charged at the node's IDs, by the fit */
    CHECK(fabs(p.node_ids - 1e6) < 1e-6);
    CHECK(fabs(p.extend_us -
               lapse_plan_fit_at(k->extend_us, k->extend_per_doubling, k->size_ids, 1e6)) < 1e-9);
    CHECK(fabs(p.new_us - lapse_plan_fit_at(k->new_us, k->new_per_doubling, k->size_ids, 1e6)) <
          1e-9);
    CHECK(fabs(p.cores_signals - 1000 * p.extend_us / 1e6) < 1e-9);
    CHECK(p.cores_resets == 0);
    CHECK(fabs(p.cores_new - 50 * p.new_us / 1e6) < 1e-9);
    CHECK(fabs(p.cores_fires - 100 * k->fire_us / 1e6) < 1e-9);
    /* one shard, 100 fires/s: a claim each */
    CHECK(fabs(p.claims_per_s - 100) < 1e-9);
    CHECK(fabs(p.cores - (p.cores_signals + p.cores_new + p.cores_fires + p.cores_claims)) < 1e-12);
    l.resets = 200;
    struct lapse_plan r;
    REQUIRE(make(&l, &r) == 0);
    CHECK(fabs(r.cores_resets - 200 * r.reset_us / 1e6) < 1e-9);
    CHECK(fabs(r.cores - p.cores - r.cores_resets) < 1e-9);
    l.resets = 0;
    CHECK(fabs(p.bytes - 1e6 * k->bytes_per_id) < 1);
    /* a payload costs its bytes and the overhead */
    l.payload_bytes = 100;
    struct lapse_plan q;
    REQUIRE(make(&l, &q) == 0);
    CHECK(fabs(q.bytes - 1e6 * (k->bytes_per_id + 100 + k->payload_extra)) < 1);
}

TEST(plan_shards_power_of_two_and_named)
{
    setup();
    struct lapse_plan p;
    struct lapse_plan_load l = load(25e6, 0, 0); /* 2.5 shards of IDs: 4 */
    REQUIRE(make(&l, &p) == 0);
    CHECK(p.shards == 4);
    CHECK_STR(lapse_plan_why_name(p.shards_why), "ids_per_shard");
    l = load(1e6, 0, 120000); /* 2.4 shards of fires: 4 */
    REQUIRE(make(&l, &p) == 0);
    CHECK(p.shards >= 4);
    CHECK(p.fires_per_shard <= lim.fires_per_shard);
    for (double ids = 1; ids < 1e10; ids *= 3.7) {
        for (double f = 0; f < 1e6; f = f * 5 + 1000) {
            l = load(ids, ids / 100, f);
            REQUIRE(make(&l, &p) == 0);
            CHECK(p.shards >= 1 && (p.shards & (p.shards - 1)) == 0);
            CHECK(p.shards >= p.nodes);
            CHECK(p.ids_per_shard <= lim.ids_per_shard);
            CHECK(p.fires_per_shard <= lim.fires_per_shard);
            /* the busiest node keeps to the limits */
            CHECK(p.node_cores <= lim.node_cores + 1e-9);
            CHECK(p.node_bytes <= lim.node_memory * lim.memory_share + 1);
            CHECK(strcmp(lapse_plan_why_name(p.shards_why), "?") != 0);
            CHECK(strcmp(lapse_plan_why_name(p.nodes_why), "?") != 0);
        }
    }
}

TEST(plan_nodes_by_cpu_and_memory)
{
    setup();
    flat();
    struct lapse_plan p;
    /* signals for 1.9 cores of Redis, 0.5 a node: 4 nodes of 2 shards */
    struct lapse_plan_load l = load(1e6, 1.9e6 / costs.form[LAPSE_PLAN_ONE_ZSET].extend_us, 0);
    REQUIRE(make(&l, &p) == 0);
    CHECK(p.nodes >= 4);
    CHECK_STR(lapse_plan_why_name(p.nodes_why), "redis_cpu");
    CHECK(p.shards >= p.nodes);
    /* 400M IDs at 126 B: 50 GB; 11.2 GB a node */
    l = load(400e6, 0, 0);
    REQUIRE(make(&l, &p) == 0);
    CHECK_STR(lapse_plan_why_name(p.nodes_why), "memory");
    CHECK(p.nodes >= 5);
    CHECK(p.node_bytes <= 16e9 * 0.7);
    /* small keys: a quarter of the memory, fewer nodes */
    l.form = LAPSE_PLAN_SMALL_KEYS;
    struct lapse_plan q;
    REQUIRE(make(&l, &q) == 0);
    CHECK(q.bytes < p.bytes / 3);
    CHECK(q.nodes < p.nodes);
}

TEST(plan_monotonic)
{
    setup();
    struct lapse_plan a, b;
    double prev_cores = 0, prev_bytes = 0;
    long prev_shards = 0, prev_nodes = 0;
    for (double x = 1000; x < 5e7; x *= 1.3) {
        struct lapse_plan_load l = load(x * 10, x, x / 20);
        REQUIRE(make(&l, &a) == 0);
        CHECK(a.cores >= prev_cores);
        CHECK(a.bytes >= prev_bytes);
        CHECK(a.shards >= prev_shards);
        CHECK(a.nodes >= prev_nodes);
        prev_cores = a.cores, prev_bytes = a.bytes;
        prev_shards = a.shards, prev_nodes = a.nodes;
    }
    /* each rate alone: more of it, never less of anything */
    struct lapse_plan_load base = load(5e6, 20000, 500);
    REQUIRE(make(&base, &a) == 0);
    for (int k = 0; k < 5; k++) {
        struct lapse_plan_load l = base;
        if (k == 0)
            l.ids *= 4;
        else if (k == 1)
            l.signals *= 4;
        else if (k == 2)
            l.fires *= 4;
        else if (k == 3)
            l.resets = 5000;
        else
            l.payload_bytes = 200;
        REQUIRE(make(&l, &b) == 0);
        CHECK(b.cores >= a.cores && b.bytes >= a.bytes);
        CHECK(b.shards >= a.shards && b.nodes >= a.nodes);
    }
}

TEST(plan_given_shards)
{
    setup();
    struct lapse_plan p;
    struct lapse_plan_load l = load(1e6, 1000, 10);
    l.shards = 16;
    REQUIRE(make(&l, &p) == 0);
    CHECK(p.shards == 16 && p.nodes == 1);
    CHECK_STR(lapse_plan_why_name(p.shards_why), "given");
    /* one shard cannot carry 2 cores of Redis: refused, not stretched */
    l = load(1e6, 1e6, 0);
    l.shards = 1;
    char err[256] = "";
    CHECK(lapse_plan_make(&costs, &l, &lim, &p, err, sizeof err) == -1);
    CHECK(strstr(err, "more shards") != NULL);
}

TEST(plan_bad_input_refused)
{
    setup();
    struct lapse_plan p;
    char err[256];
    struct lapse_plan_load l = load(0, 0, 0);
    CHECK(lapse_plan_make(&costs, &l, &lim, &p, err, sizeof err) == -1);
    l = load(10, -1, 0);
    CHECK(lapse_plan_make(&costs, &l, &lim, &p, err, sizeof err) == -1);
    l = load(10, 0, NAN);
    CHECK(lapse_plan_make(&costs, &l, &lim, &p, err, sizeof err) == -1);
    l = load(10, 0, 0);
    l.shards = 3;
    CHECK(lapse_plan_make(&costs, &l, &lim, &p, err, sizeof err) == -1);
    CHECK(strstr(err, "power of two") != NULL);
    l.shards = 0;
    l.form = 7;
    CHECK(lapse_plan_make(&costs, &l, &lim, &p, err, sizeof err) == -1);
    /* more than the largest layout */
    l = load(1e15, 0, 0);
    CHECK(lapse_plan_make(&costs, &l, &lim, &p, err, sizeof err) == -1);
}

TEST(plan_options)
{
    struct lapse_plan_args a;
    char err[256];
    lapse_plan_args_init(&a);
    CHECK(lapse_plan_args_check(&a, err, sizeof err) == -1); /* no --ids */
    CHECK(strstr(err, "--ids") != NULL);
    CHECK(lapse_plan_opt(&a, 'I', "10M", err, sizeof err) == 0 && a.load.ids == 10e6);
    CHECK(lapse_plan_opt(&a, 'S', "2.5k", err, sizeof err) == 0 && a.load.signals == 2500);
    CHECK(lapse_plan_opt(&a, 'R', "7", err, sizeof err) == 0 && a.load.resets == 7);
    CHECK(lapse_plan_opt(&a, 'F', "0", err, sizeof err) == 0 && a.load.fires == 0);
    CHECK(lapse_plan_opt(&a, 'H', "64", err, sizeof err) == 0 && a.load.shards == 64);
    CHECK(lapse_plan_opt(&a, 'G', "16G", err, sizeof err) == 0 && a.node_memory == 16e9);
    CHECK(lapse_plan_args_check(&a, err, sizeof err) == 0);
    CHECK(lapse_plan_opt(&a, 'I', "abc", err, sizeof err) == -1);
    CHECK(strstr(err, "--ids") != NULL);
    CHECK(lapse_plan_opt(&a, 'I', "0", err, sizeof err) == -1);
    CHECK(lapse_plan_opt(&a, 'S', "-5", err, sizeof err) == -1);
    CHECK(lapse_plan_opt(&a, 'F', "10X", err, sizeof err) == -1);
    CHECK(lapse_plan_opt(&a, 'H', "48", err, sizeof err) == -1);
    CHECK(lapse_plan_opt(&a, 'P', "1.5", err, sizeof err) == -1);
    CHECK(lapse_plan_opt(&a, 'B', "600", err, sizeof err) == -1);
    CHECK(lapse_plan_opt(&a, 'C', NULL, err, sizeof err) == 0);
    CHECK(lapse_plan_opt(&a, 'K', "x.json", err, sizeof err) == 0);
    CHECK(lapse_plan_args_check(&a, err, sizeof err) == -1); /* --calibrate and --costs */
}

TEST(plan_costs_round_trip)
{
    setup();
    struct lapse_plan_load l = load(1e6, 100, 10);
    struct lapse_plan p;
    REQUIRE(make(&l, &p) == 0);
    costs.form[LAPSE_PLAN_SMALL_KEYS].fire_us = 4.25;
    json_t *o = lapse_plan_json(&costs, &l, &lim, &p);
    REQUIRE(o != NULL);
    CHECK(json_integer_value(json_object_get(o, "shards")) == p.shards);
    CHECK_STR(json_string_value(json_object_get(o, "shards_set_by")), "minimum");
    /* every documented group is there, whole (docs/protocol.md) */
    CHECK(json_number_value(json_object_get(json_object_get(o, "load"), "resets_per_s")) == 0);
    CHECK(json_integer_value(json_object_get(json_object_get(o, "load"), "id_bytes")) == 16);
    CHECK_STR(json_string_value(json_object_get(json_object_get(o, "load"), "form")), "one_zset");
    CHECK(json_number_value(json_object_get(json_object_get(o, "redis_cpu"), "claims_per_s")) ==
          10);
    CHECK(json_object_size(json_object_get(o, "redis_cpu")) == 7);
    CHECK(json_object_size(json_object_get(o, "per_node")) == 4);
    CHECK(json_object_size(json_object_get(o, "limits")) == 7);
    CHECK(json_object_size(json_object_get(o, "memory")) == 3);
    char path[] = "/tmp/test_plan.XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    REQUIRE(json_dump_file(o, path, 0) == 0);
    json_decref(o);
    struct lapse_plan_costs back;
    char err[256];
    CHECK(lapse_plan_costs_read(path, &back, err, sizeof err) == 0);
    CHECK(back.source == LAPSE_PLAN_FILE && back.id_bytes == 16);
    CHECK(fabs(back.form[LAPSE_PLAN_SMALL_KEYS].fire_us - 4.25) < 1e-9);
    CHECK(fabs(back.form[LAPSE_PLAN_ONE_ZSET].bytes_per_id -
               costs.form[LAPSE_PLAN_ONE_ZSET].bytes_per_id) < 1e-6);
    /* a file that is not a calibration */
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("{\"costs\": {\"id_bytes\": 16}}", f);
    fclose(f);
    CHECK(lapse_plan_costs_read(path, &back, err, sizeof err) == -1);
    CHECK(strstr(err, "one_zset") != NULL);
    unlink(path);
    CHECK(lapse_plan_costs_read(path, &back, err, sizeof err) == -1);
}

TEST(plan_text_names_the_limits)
{
    setup();
    struct lapse_plan_load l = load(30e6, 0, 0);
    struct lapse_plan p;
    REQUIRE(make(&l, &p) == 0);
    char *s = lapse_plan_text(&costs, &l, &lim, &p);
    REQUIRE(s != NULL);
    CHECK(strstr(s, "shards     4, set by IDs per shard") != NULL);
    CHECK(strstr(s, "costs: defaults") != NULL);
    free(s);
}

/* ---------------------------------------------------------------- the set-size fit */

TEST(plan_fit_recovers_a_log)
{
    /* cost = 2.5 + 0.4 log2(ids / 30,000), three repeats at each of two
     * sizes and the sizes between them that the calibration's new IDs
     * see */
    double ids[] = {45000, 75000, 105000, 1015000, 1045000, 1075000, 30000, 1000000};
    double us[8];
    for (int i = 0; i < 8; i++)
        us[i] = 2.5 + 0.4 * log2(ids[i] / 30000);
    struct lapse_plan_fit f;
    REQUIRE(lapse_plan_fit(ids, us, 8, 30000, &f) == 0);
    CHECK(fabs(f.us - 2.5) < 1e-9);
    CHECK(fabs(f.per_doubling - 0.4) < 1e-9);
    CHECK(f.spread_pct < 1e-6);
    CHECK(fabs(lapse_plan_fit_at(f.us, f.per_doubling, 30000, 120000) - 3.3) < 1e-9);
    /* one repeat in three taken twice as long by another process: the
     * medians hold the fit, the spread says it */
    us[1] *= 2, us[4] *= 2;
    REQUIRE(lapse_plan_fit(ids, us, 8, 30000, &f) == 0);
    CHECK(fabs(f.us - 2.5) < 0.15);
    CHECK(fabs(f.per_doubling - 0.4) < 0.05);
    CHECK(f.spread_pct > 90);
}

TEST(plan_fit_flat_and_refused)
{
    struct lapse_plan_fit f;
    /* one size: flat, at the median */
    double ids1[] = {25000, 35000, 45000}, us1[] = {10, 14, 11};
    REQUIRE(lapse_plan_fit(ids1, us1, 3, 20000, &f) == 0);
    CHECK(f.per_doubling == 0 && f.us == 11);
    CHECK(fabs(f.spread_pct - 300.0 / 11) < 1e-9);
    /* a falling fit is noise: flat */
    double ids2[] = {30000, 1000000}, us2[] = {3, 2};
    REQUIRE(lapse_plan_fit(ids2, us2, 2, 30000, &f) == 0);
    CHECK(f.per_doubling == 0 && f.us == 2.5);
    /* no extrapolating below the smallest set, nor with no slope */
    CHECK(lapse_plan_fit_at(2, 0.5, 30000, 1000) == 2);
    CHECK(lapse_plan_fit_at(2, 0, 30000, 1e9) == 2);
    /* refused: no points, a point of no cost, no reference */
    CHECK(lapse_plan_fit(ids2, us2, 0, 30000, &f) == -1);
    us2[0] = 0;
    CHECK(lapse_plan_fit(ids2, us2, 2, 30000, &f) == -1);
    us2[0] = 3;
    CHECK(lapse_plan_fit(ids2, us2, 2, 0, &f) == -1);
}

TEST(plan_writes_charged_at_the_node)
{
    setup();
    struct lapse_plan_form_costs *k = &costs.form[LAPSE_PLAN_ONE_ZSET];
    k->size_ids = 30000, k->new_us = 2, k->reset_us = 3, k->extend_us = 1;
    k->new_per_doubling = 0.5, k->reset_per_doubling = 0.25, k->extend_per_doubling = 0.125;
    /* 1M IDs on 4 shards, one node: the writes at the node's 1M IDs */
    struct lapse_plan_load l = load(1e6, 1000, 0);
    l.resets = 1000, l.news = 1000, l.shards = 4;
    struct lapse_plan p;
    REQUIRE(make(&l, &p) == 0);
    REQUIRE(p.nodes == 1);
    double d = log2(1e6 / 30000);
    CHECK(fabs(p.node_ids - 1e6) < 1e-6);
    CHECK(fabs(p.new_us - (2 + 0.5 * d)) < 1e-9);
    CHECK(fabs(p.reset_us - (3 + 0.25 * d)) < 1e-9);
    CHECK(fabs(p.extend_us - (1 + 0.125 * d)) < 1e-9);
    CHECK(fabs(p.cores_signals - 1000 * p.extend_us / 1e6) < 1e-12);
    /* a load over several nodes: the busiest node's IDs */
    l = load(1e9, 2e6, 0);
    REQUIRE(make(&l, &p) == 0);
    REQUIRE(p.nodes > 1);
    CHECK(fabs(p.node_ids - 1e9 * (double)p.node_shards / (double)p.shards) < 1);
    CHECK(fabs(p.extend_us - (1 + 0.125 * log2(p.node_ids / 30000))) < 1e-9);
    /* the text says where the writes were charged and how they grow */
    char *s = lapse_plan_text(&costs, &l, &lim, &p);
    REQUIRE(s != NULL);
    CHECK(strstr(s, "IDs a node: new ID") != NULL);
    CHECK(strstr(s, "each doubling past 30,000 IDs") != NULL);
    free(s);
}

TEST(plan_costs_file_without_the_fit_loads_flat)
{
    setup();
    /* a costs file as --calibrate --json wrote it before the fit */
    char path[] = "/tmp/test_plan_old.XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w");
    REQUIRE(f != NULL);
    const char *form = "{\"new_us\": 3.95, \"reset_us\": 3.16, \"extend_us\": 1.51, "
                       "\"fire_us\": 1.46, \"claim_us\": 274, \"zadd_us\": 3.71, "
                       "\"bytes_per_id\": 126, \"payload_extra_bytes\": 93}";
    fprintf(f,
            "{\"costs\": {\"source\": \"calibrated\", \"origin\": \"old\", \"id_bytes\": 16, "
            "\"calibration_ids\": 100000, \"maxmemory\": 0, \"one_zset\": %s, \"small_keys\": "
            "%s}}",
            form, form);
    fclose(f);
    struct lapse_plan_costs back;
    char err[256];
    REQUIRE(lapse_plan_costs_read(path, &back, err, sizeof err) == 0);
    unlink(path);
    const struct lapse_plan_form_costs *k = &back.form[LAPSE_PLAN_ONE_ZSET];
    CHECK(k->new_per_doubling == 0 && k->size_ids == 0 && k->extend_spread_pct == 0);
    /* flat: the same per-op costs whatever the node holds */
    struct lapse_plan_form_costs at = lapse_plan_costs_at(&back, LAPSE_PLAN_ONE_ZSET, 1e8);
    CHECK(at.new_us == 3.95 && at.reset_us == 3.16 && at.extend_us == 1.51);
    costs = back;
    struct lapse_plan_load l = load(1e7, 1000, 100);
    struct lapse_plan p;
    REQUIRE(make(&l, &p) == 0);
    CHECK(fabs(p.cores_signals - 1000 * 1.51 / 1e6) < 1e-12);
    /* a fit field present but not a number: refused, named */
    f = fopen(path, "w");
    REQUIRE(f != NULL);
    fprintf(f, "{\"id_bytes\": 16, \"one_zset\": %s, \"small_keys\": %s}", form, form);
    fclose(f);
    REQUIRE(lapse_plan_costs_read(path, &back, err, sizeof err) ==
            0); /* (the costs object alone) */
    f = fopen(path, "w");
    REQUIRE(f != NULL);
    fprintf(f,
            "{\"id_bytes\": 16, \"one_zset\": {\"new_us\": 1, \"reset_us\": 1, \"extend_us\": 1, "
            "\"fire_us\": 1, \"claim_us\": 1, \"zadd_us\": 1, \"bytes_per_id\": 100, "
            "\"payload_extra_bytes\": 1, \"new_us_per_doubling\": \"x\"}, \"small_keys\": %s}",
            form);
    fclose(f);
    CHECK(lapse_plan_costs_read(path, &back, err, sizeof err) == -1);
    CHECK(strstr(err, "new_us_per_doubling") != NULL);
    unlink(path);
}

TEST(plan_given_nodes)
{
    setup();
    flat();
    /* 1M IDs, 600k signals/s on 4 shards: more than one node may give;
     * --nodes 1 answers for the one node all the same, over the limit */
    struct lapse_plan_load l = load(1e6, 600000, 0);
    l.shards = 4;
    struct lapse_plan free_, one;
    REQUIRE(make(&l, &free_) == 0);
    REQUIRE(free_.nodes > 1);
    l.nodes = 1;
    REQUIRE(make(&l, &one) == 0);
    CHECK(one.nodes == 1 && one.node_shards == 4);
    CHECK_STR(lapse_plan_why_name(one.nodes_why), "given");
    CHECK(one.node_cores > lim.node_cores);
    CHECK(fabs(one.node_ids - 1e6) < 1e-6);
    /* without --shards, or above them: refused */
    char err[256];
    l.shards = 0;
    CHECK(lapse_plan_make(&costs, &l, &lim, &one, err, sizeof err) == -1);
    l.shards = 4, l.nodes = 8;
    CHECK(lapse_plan_make(&costs, &l, &lim, &one, err, sizeof err) == -1);
    struct lapse_plan_args a;
    lapse_plan_args_init(&a);
    CHECK(lapse_plan_opt(&a, 'I', "1M", err, sizeof err) == 0);
    CHECK(lapse_plan_opt(&a, 'E', "3", err, sizeof err) == 0 && a.load.nodes == 3);
    CHECK(lapse_plan_opt(&a, 'E', "0", err, sizeof err) == -1);
    CHECK(lapse_plan_args_check(&a, err, sizeof err) == -1); /* no --shards */
    CHECK(lapse_plan_opt(&a, 'H', "2", err, sizeof err) == 0);
    CHECK(lapse_plan_args_check(&a, err, sizeof err) == -1); /* 3 nodes, 2 shards */
    CHECK(lapse_plan_opt(&a, 'H', "4", err, sizeof err) == 0);
    CHECK(lapse_plan_args_check(&a, err, sizeof err) == 0);
}
