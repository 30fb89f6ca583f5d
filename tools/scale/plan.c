/*
 * plan — see plan.h. The model in one paragraph (docs/operating.md, "Sizing:
 * lapse-scale plan", gives each rule's reason):
 *
 *   Redis CPU = new IDs/s × new + signals/s × extend + resets/s × reset
 *             + fires/s × fire + claims/s × claim, where a busy shard's
 *             scanner claims at most claims_per_shard times a second and
 *             an idle one once per ID that falls due;
 *   memory    = IDs × (bytes per ID + payload + payload overhead);
 *   shards    = the least power of two that keeps IDs and fires per shard
 *             under their limits, and each shard under half of what a
 *             node may give (so shards only grow with the load);
 *   nodes     = the fewest whose busiest one (shards placed round-robin)
 *             stays under node_cores of Redis CPU and memory_share of its
 *             memory.
 */
#include "plan.h"
#include "plan_fit.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The defaults: lapse-scale plan --calibrate on the machine of
 * docs/benchmarks.md, "lapse-scale plan against measured Redis CPU: sets
 * that have lived (make bench-plan, 2026-11-29, evening)": 2 vCPUs, Redis
 * 7.0.15 with AOF everysec, 16-byte IDs, 30,000 writes a measurement at
 * sets of 100,000 and 800,000 IDs (small keys 20,000, flat); one zset: the
 * median of the three runs' calibrations, small keys: the third's. A change
 * here is a change there. */
static const struct lapse_plan_costs plan_defaults = {
    .form =
        {
            [LAPSE_PLAN_ONE_ZSET] = {.new_us = 2.57,
                                     .reset_us = 2.83,
                                     .extend_us = 2.34,
                                     .new_per_doubling = 0.18,
                                     .reset_per_doubling = 1.56,
                                     .extend_per_doubling = 1.45,
                                     .size_ids = 100000,
                                     .fire_us = 2.05,
                                     .claim_us = 240,
                                     .zadd_us = 2.16,
                                     .bytes_per_id = 128,
                                     .payload_extra = 79},
            [LAPSE_PLAN_SMALL_KEYS] = {.new_us = 6.59,
                                       .reset_us = 5.90,
                                       .extend_us = 4.93,
                                       .fire_us = 1.53,
                                       .claim_us = 248,
                                       .zadd_us = 2.05,
                                       .bytes_per_id = 35.8,
                                       .payload_extra = 92},
        },
    .source = LAPSE_PLAN_DEFAULTS,
    .origin = "defaults: docs/benchmarks.md, 2026-11-29, a 2-vCPU VM, Redis 7.0.15, AOF everysec",
    .id_bytes = 16,
    .calibration_ids = 30000,
    .maxmemory = 0,
};

/* Bytes per pending ID per byte of ID length: the bench's 11- and 16-byte
 * IDs at 1M (docs/benchmarks.md, "Small keys"): one zset 110.0 -> 125.8 B,
 * small keys 28.6 -> 33.9 B. */
static const double plan_bytes_per_id_byte[LAPSE_PLAN_FORMS] = {3.2, 1.1};

void lapse_plan_costs_default(struct lapse_plan_costs *c)
{
    *c = plan_defaults;
}

void lapse_plan_limits_default(struct lapse_plan_limits *l)
{
    *l = (struct lapse_plan_limits){
        .node_cores = 0.5,
        .node_memory = 16e9,
        .memory_share = 0.7,
        .ids_per_shard = 10e6,
        .fires_per_shard = 50000,
        .claims_per_shard = 300,
        .scanner_us = 2.0,
    };
}

static void plan_err(char *errstr, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void plan_err(char *errstr, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errstr, size, fmt, ap);
    va_end(ap);
}

double lapse_plan_bytes_per_id(const struct lapse_plan_costs *costs, int form, int id_bytes)
{
    double b = costs->form[form].bytes_per_id +
               (double)(id_bytes - costs->id_bytes) * plan_bytes_per_id_byte[form];
    return b > id_bytes ? b : id_bytes; /* (an ID costs its own bytes at least) */
}

struct lapse_plan_form_costs lapse_plan_costs_at(const struct lapse_plan_costs *costs, int form,
                                                 double node_ids)
{
    struct lapse_plan_form_costs k = costs->form[form];
    k.new_us = lapse_plan_fit_at(k.new_us, k.new_per_doubling, k.size_ids, node_ids);
    k.reset_us = lapse_plan_fit_at(k.reset_us, k.reset_per_doubling, k.size_ids, node_ids);
    k.extend_us = lapse_plan_fit_at(k.extend_us, k.extend_per_doubling, k.size_ids, node_ids);
    return k;
}

/* The Redis CPU of the load with `shards` shards, into p's cores_*: the
 * writes charged at node_ids, the IDs the node holds (its shards' sets
 * together: what the writes' memory accesses spread over; fewer IDs a
 * node, cheaper writes). */
static void plan_cpu(const struct lapse_plan_costs *costs, const struct lapse_plan_load *load,
                     const struct lapse_plan_limits *lim, long shards, double node_ids,
                     struct lapse_plan *p)
{
    struct lapse_plan_form_costs k = lapse_plan_costs_at(costs, load->form, node_ids);
    const struct lapse_plan_form_costs *c = &k;
    p->node_ids = node_ids;
    p->new_us = c->new_us, p->reset_us = c->reset_us, p->extend_us = c->extend_us;
    p->news = load->news < 0 ? load->fires : load->news;
    p->cores_new = p->news * c->new_us / 1e6;
    p->cores_signals = load->signals * c->extend_us / 1e6;
    p->cores_resets = load->resets * c->reset_us / 1e6;
    p->cores_fires = load->fires * c->fire_us / 1e6;
    /* a quiet shard's scanner claims each ID as it falls due; a busy one
     * claims what fell due since its last claim, at most claims_per_shard
     * times a second (its loop's pace: a claim, the events to Kafka, an
     * ack) */
    double per_shard = load->fires / (double)shards;
    p->claims_per_s =
        (double)shards * (per_shard < lim->claims_per_shard ? per_shard : lim->claims_per_shard);
    p->cores_claims = p->claims_per_s * c->claim_us / 1e6;
    p->cores = p->cores_new + p->cores_signals + p->cores_resets + p->cores_fires + p->cores_claims;
}

static long pow2_at_least(double x)
{
    long s = 1;
    while ((double)s < x && s < LAPSE_PLAN_MAX_SHARDS * 2L)
        s *= 2;
    return s;
}

/* Whether the busiest node, with `shards` placed round-robin on `nodes`,
 * stays under the limits; its load into p. */
static int plan_fits(const struct lapse_plan_limits *lim, long shards, long nodes,
                     struct lapse_plan *p)
{
    long k = (shards + nodes - 1) / nodes;
    double share = (double)k / (double)shards;
    p->node_shards = k;
    p->node_cores = p->cores * share;
    p->node_bytes = p->bytes * share;
    return p->node_cores <= lim->node_cores + 1e-12 &&
           p->node_bytes <= lim->node_memory * lim->memory_share + 1e-3;
}

int lapse_plan_make(const struct lapse_plan_costs *costs, const struct lapse_plan_load *load,
                    const struct lapse_plan_limits *lim, struct lapse_plan *out, char *errstr,
                    size_t size)
{
    if (!(load->ids >= 1) || !(load->signals >= 0) || !(load->resets >= 0) || !(load->fires >= 0) ||
        isnan(load->news) || load->payload_bytes < 0 || load->id_bytes < 1 || load->form < 0 ||
        load->form >= LAPSE_PLAN_FORMS) {
        plan_err(errstr, size,
                 "the load needs at least 1 ID, rates of 0 or more, IDs of 1 byte "
                 "or more");
        return -1;
    }
    if (load->shards != 0 && (load->shards < 1 || load->shards > LAPSE_PLAN_MAX_SHARDS ||
                              (load->shards & (load->shards - 1)) != 0)) {
        plan_err(errstr, size, "shards: %ld is not a power of two (1..%d)", load->shards,
                 LAPSE_PLAN_MAX_SHARDS);
        return -1;
    }
    if (load->nodes != 0 && (load->shards < 1 || load->nodes < 1 || load->nodes > load->shards)) {
        plan_err(errstr, size, "nodes: %ld needs --shards, at least as many", load->nodes);
        return -1;
    }
    if (!(lim->node_cores > 0) || !(lim->node_memory > 0) || !(lim->memory_share > 0) ||
        !(lim->ids_per_shard >= 1) || !(lim->fires_per_shard > 0) || !(lim->claims_per_shard > 0)) {
        plan_err(errstr, size, "the limits must be positive");
        return -1;
    }
    const struct lapse_plan_form_costs *c = &costs->form[load->form];
    struct lapse_plan p = {0};
    p.bytes = load->ids *
              (lapse_plan_bytes_per_id(costs, load->form, load->id_bytes) +
               (load->payload_bytes > 0 ? (double)load->payload_bytes + c->payload_extra : 0));

    /* the shards the IDs and the fires need */
    double by_ids = ceil(load->ids / lim->ids_per_shard);
    double by_fires = ceil(load->fires / lim->fires_per_shard);
    long s0 = pow2_at_least(by_ids > by_fires ? by_ids : by_fires);
    int s0_why = s0 == 1              ? LAPSE_PLAN_BY_MINIMUM
                 : by_ids >= by_fires ? LAPSE_PLAN_BY_IDS_PER_SHARD
                                      : LAPSE_PLAN_BY_FIRES_PER_SHARD;
    if (load->shards)
        s0 = load->shards, s0_why = LAPSE_PLAN_BY_GIVEN;
    if (s0 > LAPSE_PLAN_MAX_SHARDS) {
        plan_err(errstr, size, "the load needs more than %d shards", LAPSE_PLAN_MAX_SHARDS);
        return -1;
    }

    /* a shard takes at most half of what a node may give (CPU, memory),
     * so that whole shards placed round-robin fill the nodes evenly enough
     * and a node never waits on one shard alone */
    double node_bytes = lim->node_memory * lim->memory_share;
    /* (the IDs a node may hold at most: the writes' cost for this rule,
     * before the nodes are known; the nodes' own below) */
    double node_ids_max = fmin(load->ids, node_bytes / (p.bytes / load->ids));
    plan_cpu(costs, load, lim, s0, fmax(node_ids_max, load->ids / (double)s0), &p);
    long s = s0;
    int s_why = s0_why;
    while (!load->shards && s < LAPSE_PLAN_MAX_SHARDS &&
           (p.cores / (double)s > lim->node_cores / 2 || p.bytes / (double)s > node_bytes / 2)) {
        s *= 2, s_why = LAPSE_PLAN_BY_NODES;
        plan_cpu(costs, load, lim, s, fmax(node_ids_max, load->ids / (double)s), &p);
    }

    /* the fewest nodes whose busiest one fits, its writes charged at the
     * IDs it holds (more nodes, fewer each: the first that fits is the
     * fewest) */
    for (long n = load->nodes ? load->nodes : 1; n <= s && n <= LAPSE_PLAN_MAX_NODES; n++) {
        long k = (s + n - 1) / n;
        plan_cpu(costs, load, lim, s, load->ids * (double)k / (double)s, &p);
        if (!plan_fits(lim, s, n, &p) && !load->nodes)
            continue;
        double by_cpu = ceil(p.cores / lim->node_cores - 1e-9);
        double by_mem = ceil(p.bytes / node_bytes - 1e-9);
        long n0 = (long)fmax(1, fmax(by_cpu, by_mem));
        p.shards = s;
        p.shards_why = s_why;
        p.nodes = n;
        p.nodes_why = load->nodes        ? LAPSE_PLAN_BY_GIVEN
                      : n > n0           ? LAPSE_PLAN_BY_BALANCE
                      : n == 1           ? LAPSE_PLAN_BY_MINIMUM
                      : by_cpu >= by_mem ? LAPSE_PLAN_BY_CPU
                                         : LAPSE_PLAN_BY_MEMORY;
        p.scanners = s;
        p.scanner_cores = load->fires * lim->scanner_us / 1e6;
        p.ids_per_shard = load->ids / (double)s;
        p.fires_per_shard = load->fires / (double)s;
        *out = p;
        return 0;
    }
    if (load->shards)
        plan_err(errstr, size,
                 "no number of Redis nodes carries this load on %ld shards (a shard needs more "
                 "than a node may give: use more shards)",
                 load->shards);
    else
        plan_err(errstr, size, "no layout of up to %d shards and %d nodes carries this load",
                 LAPSE_PLAN_MAX_SHARDS, LAPSE_PLAN_MAX_NODES);
    return -1;
}

const char *lapse_plan_form_name(int form)
{
    return form == LAPSE_PLAN_SMALL_KEYS ? "small_keys" : "one_zset";
}

const char *lapse_plan_why_name(int why)
{
    static const char *const names[] = {
        [LAPSE_PLAN_BY_MINIMUM] = "minimum",
        [LAPSE_PLAN_BY_GIVEN] = "given",
        [LAPSE_PLAN_BY_IDS_PER_SHARD] = "ids_per_shard",
        [LAPSE_PLAN_BY_FIRES_PER_SHARD] = "fires_per_shard",
        [LAPSE_PLAN_BY_NODES] = "shard_share",
        [LAPSE_PLAN_BY_CPU] = "redis_cpu",
        [LAPSE_PLAN_BY_MEMORY] = "memory",
        [LAPSE_PLAN_BY_BALANCE] = "balance",
    };
    return why >= 0 && why < (int)(sizeof names / sizeof names[0]) ? names[why] : "?";
}

static const char *plan_source_name(int source)
{
    return source == LAPSE_PLAN_CALIBRATED ? "calibrated"
           : source == LAPSE_PLAN_FILE     ? "file"
                                           : "defaults";
}

/* ---------------------------------------------------------------- JSON */

/* a figure rounded to 4 significant digits (JSON for scripts, not noise) */
static json_t *num(double v)
{
    if (v == 0 || !isfinite(v))
        return json_real(0);
    double mag = pow(10, 3 - floor(log10(fabs(v))));
    return json_real(round(v * mag) / mag);
}

/* The costs' names in --json, in their order; the first NCOSTS_REQUIRED
 * every costs file has, the rest came with the set-size fit (files from
 * before it lack them: 0, flat). */
static const char *const cost_names[] = {"new_us",
                                         "reset_us",
                                         "extend_us",
                                         "fire_us",
                                         "claim_us",
                                         "zadd_us",
                                         "bytes_per_id",
                                         "payload_extra_bytes",
                                         "new_us_per_doubling",
                                         "reset_us_per_doubling",
                                         "extend_us_per_doubling",
                                         "size_ids",
                                         "new_spread_pct",
                                         "reset_spread_pct",
                                         "extend_spread_pct"};
#define NCOSTS (sizeof cost_names / sizeof cost_names[0])
#define NCOSTS_REQUIRED 8

static double *cost_field(struct lapse_plan_form_costs *c, size_t i)
{
    double *f[NCOSTS] = {&c->new_us,
                         &c->reset_us,
                         &c->extend_us,
                         &c->fire_us,
                         &c->claim_us,
                         &c->zadd_us,
                         &c->bytes_per_id,
                         &c->payload_extra,
                         &c->new_per_doubling,
                         &c->reset_per_doubling,
                         &c->extend_per_doubling,
                         &c->size_ids,
                         &c->new_spread_pct,
                         &c->reset_spread_pct,
                         &c->extend_spread_pct};
    return f[i];
}

static json_t *costs_json(const struct lapse_plan_costs *costs)
{
    json_t *o =
        json_pack("{s:s, s:s, s:i, s:I, s:I}", "source", plan_source_name(costs->source), "origin",
                  costs->origin, "id_bytes", costs->id_bytes, "calibration_ids",
                  (json_int_t)costs->calibration_ids, "maxmemory", (json_int_t)costs->maxmemory);
    for (int f = 0; o && f < LAPSE_PLAN_FORMS; f++) {
        struct lapse_plan_form_costs c = costs->form[f];
        json_t *e = json_object();
        for (size_t i = 0; e && i < NCOSTS; i++)
            json_object_set_new(e, cost_names[i], num(*cost_field(&c, i)));
        json_object_set_new(o, lapse_plan_form_name(f), e);
    }
    return o;
}

json_t *lapse_plan_json(const struct lapse_plan_costs *costs, const struct lapse_plan_load *load,
                        const struct lapse_plan_limits *lim, const struct lapse_plan *p)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "load",
                        json_pack("{s:o, s:o, s:o, s:o, s:o, s:s, s:I, s:i}", "ids", num(load->ids),
                                  "signals_per_s", num(load->signals), "resets_per_s",
                                  num(load->resets), "fires_per_s", num(load->fires), "new_per_s",
                                  num(p->news), "form", lapse_plan_form_name(load->form),
                                  "payload_bytes", (json_int_t)load->payload_bytes, "id_bytes",
                                  load->id_bytes));
    json_object_set_new(o, "redis_cpu",
                        json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "cores", num(p->cores),
                                  "signals", num(p->cores_signals), "resets", num(p->cores_resets),
                                  "new", num(p->cores_new), "fires", num(p->cores_fires), "claims",
                                  num(p->cores_claims), "claims_per_s", num(p->claims_per_s)));
    /* the per-op costs charged, the writes at ids_per_shard (the costs
     * object holds them at the size measured, and how they grow) */
    const struct lapse_plan_form_costs *k = &costs->form[load->form];
    json_object_set_new(o, "per_op_us",
                        json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "node_ids", num(p->node_ids),
                                  "new", num(p->new_us), "reset", num(p->reset_us), "extend",
                                  num(p->extend_us), "fire", num(k->fire_us), "claim",
                                  num(k->claim_us)));
    json_object_set_new(o, "memory",
                        json_pack("{s:o, s:o, s:o}", "bytes", num(p->bytes), "gb",
                                  num(p->bytes / 1e9), "bytes_per_id", num(p->bytes / load->ids)));
    json_object_set_new(o, "shards", json_integer(p->shards));
    json_object_set_new(o, "shards_set_by", json_string(lapse_plan_why_name(p->shards_why)));
    json_object_set_new(o, "ids_per_shard", num(p->ids_per_shard));
    json_object_set_new(o, "fires_per_shard", num(p->fires_per_shard));
    json_object_set_new(o, "scanners", json_integer(p->scanners));
    json_object_set_new(o, "scanner_cores", num(p->scanner_cores));
    json_object_set_new(o, "nodes", json_integer(p->nodes));
    json_object_set_new(o, "nodes_set_by", json_string(lapse_plan_why_name(p->nodes_why)));
    json_object_set_new(o, "per_node",
                        json_pack("{s:I, s:o, s:o, s:o}", "shards", (json_int_t)p->node_shards,
                                  "redis_cores", num(p->node_cores), "memory_bytes",
                                  num(p->node_bytes), "memory_gb", num(p->node_bytes / 1e9)));
    json_object_set_new(o, "limits",
                        json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "node_cores",
                                  num(lim->node_cores), "node_memory_bytes", num(lim->node_memory),
                                  "memory_share", num(lim->memory_share), "ids_per_shard",
                                  num(lim->ids_per_shard), "fires_per_shard",
                                  num(lim->fires_per_shard), "claims_per_shard",
                                  num(lim->claims_per_shard), "scanner_us", num(lim->scanner_us)));
    json_object_set_new(o, "costs", costs_json(costs));
    return o;
}

/* ---------------------------------------------------------------- text */

/* 1234567.8 -> "1,234,568" */
static const char *grouped(double v, char *buf, size_t size)
{
    char digits[64];
    snprintf(digits, sizeof digits, "%.0f", v);
    size_t n = strlen(digits), o = 0;
    for (size_t i = 0; i < n && o + 2 < size; i++) {
        if (i > 0 && (n - i) % 3 == 0 && digits[i - 1] != '-')
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static const char *why_text(int why)
{
    switch (why) {
    case LAPSE_PLAN_BY_GIVEN:
        return "what was given (--shards, --nodes)";
    case LAPSE_PLAN_BY_IDS_PER_SHARD:
        return "IDs per shard";
    case LAPSE_PLAN_BY_FIRES_PER_SHARD:
        return "fires/s per shard (one scanner each)";
    case LAPSE_PLAN_BY_NODES:
        return "a shard's share of a node (at most half its CPU and memory limits)";
    case LAPSE_PLAN_BY_CPU:
        return "Redis CPU per node";
    case LAPSE_PLAN_BY_MEMORY:
        return "memory per node";
    case LAPSE_PLAN_BY_BALANCE:
        return "the busiest node (the shards do not divide evenly over fewer)";
    default:
        return "the least there can be";
    }
}

char *lapse_plan_text(const struct lapse_plan_costs *costs, const struct lapse_plan_load *load,
                      const struct lapse_plan_limits *lim, const struct lapse_plan *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    char a[32], b[32], c[32], d[32];
    const struct lapse_plan_form_costs *k = &costs->form[load->form];
    char e[32];
    fprintf(f, "plan for %s IDs, %s signals/s (extends), %s resets/s, %s fires/s, %s new IDs/s%s\n",
            grouped(load->ids, a, sizeof a), grouped(load->signals, b, sizeof b),
            grouped(load->resets, e, sizeof e), grouped(load->fires, c, sizeof c),
            grouped(p->news, d, sizeof d), load->news < 0 ? " (= fires)" : "");
    fprintf(f, "  %s, %d-byte IDs, ", load->form ? "small keys" : "one sorted set a shard",
            load->id_bytes);
    if (load->payload_bytes)
        fprintf(f, "a %ld-byte payload each\n", load->payload_bytes);
    else
        fprintf(f, "no payload\n");
    fprintf(f, "costs: %s\n", costs->origin);
    fprintf(f,
            "  Redis CPU per op at %s IDs a node: new ID %.2f µs, reset %.2f, extend %.2f, "
            "fired ID %.2f (+%.1f a claim); ZADD %.2f\n",
            grouped(p->node_ids, a, sizeof a), p->new_us, p->reset_us, p->extend_us, k->fire_us,
            k->claim_us, k->zadd_us);
    if (k->new_per_doubling > 0 || k->reset_per_doubling > 0 || k->extend_per_doubling > 0)
        fprintf(f, "  writes grow with the set: +%.2f, +%.2f, +%.2f µs each doubling past %s IDs\n",
                k->new_per_doubling, k->reset_per_doubling, k->extend_per_doubling,
                grouped(k->size_ids, a, sizeof a));
    if (k->new_spread_pct > 0 || k->reset_spread_pct > 0 || k->extend_spread_pct > 0)
        fprintf(f,
                "  the calibration's repeats fell within %.0f, %.0f, %.0f %% of these (new, "
                "reset, extend)\n",
                k->new_spread_pct, k->reset_spread_pct, k->extend_spread_pct);
    fprintf(f, "\n");
    fprintf(
        f,
        "redis cpu  %.3f cores: signals %.3f, resets %.3f, new IDs %.3f, fires %.3f, claims %.3f "
        "(%s a second)\n",
        p->cores, p->cores_signals, p->cores_resets, p->cores_new, p->cores_fires, p->cores_claims,
        grouped(p->claims_per_s, a, sizeof a));
    fprintf(f, "memory     %.2f GB (%.0f bytes an ID%s)\n", p->bytes / 1e9, p->bytes / load->ids,
            load->payload_bytes ? ", with its payload" : "");
    fprintf(f, "shards     %ld, set by %s (%s IDs and %s fires/s a shard; limits %s and %s)\n",
            p->shards, why_text(p->shards_why), grouped(p->ids_per_shard, a, sizeof a),
            grouped(p->fires_per_shard, b, sizeof b), grouped(lim->ids_per_shard, c, sizeof c),
            grouped(lim->fires_per_shard, d, sizeof d));
    fprintf(f,
            "scanners   %ld, one a shard (their own CPU about %.3f cores), a standby each "
            "for takeover\n",
            p->scanners, p->scanner_cores);
    fprintf(f, "nodes      %ld, set by %s\n", p->nodes, why_text(p->nodes_why));
    fprintf(f,
            "per node   at most %ld shards: %.3f cores of Redis CPU (limit %.2f), %.2f GB (limit "
            "%.0f%% of %.1f GB)\n",
            p->node_shards, p->node_cores, lim->node_cores, p->node_bytes / 1e9,
            lim->memory_share * 100, lim->node_memory / 1e9);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---------------------------------------------------------------- costs file */

int lapse_plan_costs_read(const char *path, struct lapse_plan_costs *c, char *errstr, size_t size)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        plan_err(errstr, size, "%s: %s", path, je.text);
        return -1;
    }
    json_t *o = json_object_get(root, "costs");
    if (!json_is_object(o))
        o = root; /* (the costs object alone) */
    int rc = -1;
    memset(c, 0, sizeof *c);
    c->source = LAPSE_PLAN_FILE;
    json_t *ib = json_object_get(o, "id_bytes");
    if (!json_is_integer(ib) || json_integer_value(ib) < 1 || json_integer_value(ib) > 512) {
        plan_err(errstr, size, "%s: costs.id_bytes: missing or not 1..512", path);
        goto out;
    }
    c->id_bytes = (int)json_integer_value(ib);
    json_t *v = json_object_get(o, "calibration_ids");
    c->calibration_ids = json_is_integer(v) ? (long)json_integer_value(v) : 0;
    v = json_object_get(o, "maxmemory");
    c->maxmemory = json_is_integer(v) ? (long long)json_integer_value(v) : 0;
    v = json_object_get(o, "origin");
    snprintf(c->origin, sizeof c->origin, "%s: %s", path,
             json_is_string(v) ? json_string_value(v) : "(no origin)");
    for (int f = 0; f < LAPSE_PLAN_FORMS; f++) {
        json_t *e = json_object_get(o, lapse_plan_form_name(f));
        if (!json_is_object(e)) {
            plan_err(errstr, size, "%s: costs.%s: missing", path, lapse_plan_form_name(f));
            goto out;
        }
        for (size_t i = 0; i < NCOSTS; i++) {
            json_t *x = json_object_get(e, cost_names[i]);
            if (!x && i >= NCOSTS_REQUIRED)
                continue; /* (memset: 0) */
            double d = json_is_number(x) ? json_number_value(x) : -1;
            if (!(d >= 0) || !isfinite(d)) {
                plan_err(errstr, size, "%s: costs.%s.%s: missing or not a number >= 0", path,
                         lapse_plan_form_name(f), cost_names[i]);
                goto out;
            }
            *cost_field(&c->form[f], i) = d;
        }
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* ---------------------------------------------------------------- options */

void lapse_plan_args_init(struct lapse_plan_args *a)
{
    *a = (struct lapse_plan_args){
        .load = {.news = -1, .form = LAPSE_PLAN_ONE_ZSET, .id_bytes = 16},
    };
}

/* s as a number >= lo and <= hi, with an optional k, M, G or T (x 1000^n):
 * 0 and *out, or -1. */
static int plan_number(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno)
        return -1;
    const char *units = "kMGT";
    const char *u = *end ? strchr(units, *end) : NULL;
    if (*end && (!u || end[1] != '\0'))
        return -1;
    if (u)
        v *= pow(1000, (double)(u - units + 1));
    if (!isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int lapse_plan_opt(struct lapse_plan_args *a, int letter, const char *arg, char *errstr,
                   size_t size)
{
    static const struct {
        int letter;
        const char *name;
        double lo, hi;
        int whole;
    } o[] = {
        {'I', "ids", 1, 1e12, 0},
        {'S', "signals", 0, 1e9, 0},
        {'R', "resets", 0, 1e9, 0},
        {'F', "fires", 0, 1e9, 0},
        {'N', "new", 0, 1e9, 0},
        {'P', "payload", 0, 65536, 1},
        {'B', "id-bytes", 1, 512, 1},
        {'H', "shards", 1, 65536, 1},
        {'G', "node-memory", 1e6, 1e15, 0},
        {'E', "nodes", 1, LAPSE_PLAN_MAX_NODES, 1},
    };
    if (letter == 'C') {
        a->calibrate = 1;
        return 0;
    }
    if (letter == 'K') {
        a->costs = arg;
        return 0;
    }
    for (size_t i = 0; i < sizeof o / sizeof o[0]; i++) {
        if (o[i].letter != letter)
            continue;
        double v;
        if (plan_number(arg, o[i].lo, o[i].hi, &v) < 0 || (o[i].whole && v != floor(v))) {
            plan_err(errstr, size, "--%s: \"%s\" is not a %snumber from %g to %g%s", o[i].name, arg,
                     o[i].whole ? "whole " : "", o[i].lo, o[i].hi,
                     o[i].whole ? "" : " (k, M, G, T: thousands, millions, ...)");
            return -1;
        }
        if (letter == 'H' && ((long)v & ((long)v - 1)) != 0) {
            plan_err(errstr, size, "--shards: %s is not a power of two", arg);
            return -1;
        }
        switch (letter) {
        case 'I':
            a->load.ids = v, a->has_ids = 1;
            break;
        case 'S':
            a->load.signals = v;
            break;
        case 'R':
            a->load.resets = v;
            break;
        case 'F':
            a->load.fires = v;
            break;
        case 'N':
            a->load.news = v;
            break;
        case 'P':
            a->load.payload_bytes = (long)v;
            break;
        case 'B':
            a->load.id_bytes = (int)v;
            break;
        case 'H':
            a->load.shards = (long)v;
            break;
        case 'G':
            a->node_memory = v;
            break;
        case 'E':
            a->load.nodes = (long)v;
            break;
        }
        return 0;
    }
    plan_err(errstr, size, "no plan option -%c", letter);
    return -1;
}

int lapse_plan_args_check(const struct lapse_plan_args *a, char *errstr, size_t size)
{
    if (!a->has_ids) {
        plan_err(errstr, size, "--ids N is required (the IDs pending at once)");
        return -1;
    }
    if (a->calibrate && a->costs) {
        plan_err(errstr, size, "--calibrate and --costs do not go together");
        return -1;
    }
    if (a->load.nodes && (!a->load.shards || a->load.nodes > a->load.shards)) {
        plan_err(errstr, size, "--nodes N needs --shards, at least N (each node holds a shard)");
        return -1;
    }
    return 0;
}
