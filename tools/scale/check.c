/*
 * check — see check.h. The counters are tools/scale/health.c's: "overdue"
 * counts both a due ID nobody claimed and one in flight whose deadline
 * passed long ago (Kafka down: it is claimed again and again, so its
 * score is a lease in the future, yet it is late all the same).
 */
#include "check.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "layout.h"
#include "memory.h"
#include "replicas.h"
#include "status.h"

struct verdict {
    json_t *problems; /* [{shard, problem, message}] */
    int unreachable;  /* a node could not be asked */
    int as_json;
    int wait_replicas; /* redis.wait_replicas */
};

static void problem(struct verdict *v, long shard, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One problem: a line on stdout (text) and an entry of .problems. */
static void problem(struct verdict *v, long shard, const char *kind, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!v->as_json)
        printf("%s\n", msg);
    json_t *o = json_pack("{s:s, s:s}", "problem", kind, "message", msg);
    if (o && shard >= 0)
        json_object_set_new(o, "shard", json_integer(shard));
    json_array_append_new(v->problems, o);
}

/* Each primary's maxmemory-policy and memory: an evicting policy loses
 * deadlines silently, and one past max_memory_pct % of its maxmemory is
 * close to refusing writes. Adds the readings to `out`. */
static void check_memory(struct verdict *v, const struct lapse_config *cfg, lapse_redis **nodes,
                         int max_memory_pct, json_t *out)
{
    struct lapse_scale_memory *mem = NULL;
    size_t n = lapse_scale_memory_read(cfg, nodes, &mem);
    for (size_t i = 0; i < n; i++) {
        const struct lapse_scale_memory *e = &mem[i];
        json_array_append_new(out, lapse_scale_memory_json(e));
        if (!e->read) /* (unreachable: the shards' checks say so) */
            continue;
        if (lapse_redis_policy_evicts(e->m.policy))
            problem(v, -1, "evicting",
                    "redis %s (primary %s): maxmemory-policy is %s: Redis may evict lapse's keys "
                    "and lose deadlines (CONFIG SET maxmemory-policy noeviction)",
                    e->node, e->primary, e->m.policy);
        double pct = lapse_scale_memory_pct(&e->m);
        if (pct > max_memory_pct)
            problem(v, -1, "memory",
                    "redis %s (primary %s): used memory is %.0f%% of maxmemory (%lld of %lld "
                    "bytes; max %d%%)",
                    e->node, e->primary, pct, e->m.used, e->m.max, max_memory_pct);
    }
    free(mem);
}

/* A primary with fewer replicas than redis.wait_replicas: its writes
 * cannot be confirmed (replicas.h). */
static void check_replicas(void *ctx, const char *node, const char *primary, long replicas)
{
    struct verdict *v = ctx;
    if (replicas >= 0 && replicas < v->wait_replicas)
        problem(v, -1, "replicas_missing",
                "node %s: primary %s has %ld replicas, redis.wait_replicas = %d: writes there "
                "cannot be confirmed (producers report them failed)",
                node, primary, replicas, v->wait_replicas);
}

int lapse_scale_check(const struct lapse_config *cfg, lapse_redis **nodes, int64_t max_overdue_ms,
                      int max_memory_pct, int as_json)
{
    struct verdict v = {
        .problems = json_array(), .as_json = as_json, .wait_replicas = cfg->redis_wait_replicas};
    json_t *info = json_array();
    char err[512];
    double max_s = (double)max_overdue_ms / 1000;
    struct lapse_layout l = {0};
    int rc = lapse_layout_load(nodes[0], cfg, &l, err, sizeof err);
    if (rc == 1) {
        problem(&v, -1, "not_initialised", "namespace %s: not initialised (lapse-scale init N)",
                cfg->ns);
    } else if (rc < 0) {
        v.unreachable = lapse_redis_ensure(nodes[0]) < 0;
        problem(&v, -1, v.unreachable ? "unreachable" : "layout", "layout: %s", err);
    } else {
        struct lapse_layout next;
        if (lapse_layout_read(nodes[0], cfg, "layout:next", &next, err, sizeof err) == 0) {
            problem(&v, -1, "interrupted",
                    "namespace %s: a %s to epoch %" PRId64 " is under way or was "
                    "interrupted: writers and scanners are paused until it ends (if no "
                    "lapse-scale %s runs now, run it again)",
                    cfg->ns, lapse_scale_pending_cmd(&next), next.epoch,
                    lapse_scale_pending_cmd(&next));
            lapse_layout_free(&next);
        }
        for (uint32_t i = 0; i < lapse_layout_span(&l); i++) {
            lapse_redis *r = nodes[l.node_of[i]];
            struct lapse_health h;
            if (lapse_health_read(r, cfg, i, &h, err, sizeof err) < 0) {
                /* (a node that failed is not tried again for each of its
                 * shards: its back-off answers at once) */
                int down = lapse_redis_ensure(r) < 0;
                v.unreachable |= down;
                problem(&v, i, down ? "unreachable" : "redis", "shard %u: %s%s", i,
                        down ? "unreachable: " : "", err);
                continue;
            }
            int64_t overdue = lapse_health_overdue_ms(&h);
            if (!h.holder[0])
                problem(&v, i, "no_scanner", "shard %u: scanner none (no active scanner)", i);
            /* (tenths below 100 s: "1.4 s overdue (max 1)", not "1 s") */
            if (overdue > max_overdue_ms && overdue < 100000)
                problem(&v, i, "overdue", "shard %u: oldest due ID is %.1f s overdue (max %g)", i,
                        (double)overdue / 1000, max_s);
            else if (overdue > max_overdue_ms)
                problem(&v, i, "overdue",
                        "shard %u: oldest due ID is %" PRId64 " s overdue (max %g)", i,
                        overdue / 1000, max_s);
            json_array_append_new(
                info, json_pack("{s:i, s:s, s:s?, s:o, s:I, s:I}", "shard", (int)i, "node",
                                lapse_redis_name(r), "scanner", h.holder[0] ? h.holder : NULL,
                                "overdue_ms", overdue >= 0 ? json_integer(overdue) : json_null(),
                                "due", (json_int_t)h.due, "inflight", (json_int_t)h.inflight));
        }
    }
    json_t *memory = json_array();
    if (!v.unreachable)
        check_memory(&v, cfg, nodes, max_memory_pct, memory);
    if (rc == 0)
        (void)lapse_scale_replicas_each(cfg, nodes, check_replicas, &v);
    size_t nproblems = json_array_size(v.problems);
    int status = v.unreachable ? LAPSE_CHECK_UNREACHABLE
                 : nproblems   ? LAPSE_CHECK_PROBLEM
                               : LAPSE_CHECK_OK;
    if (as_json) {
        json_t *o = json_pack("{s:s, s:b, s:i, s:f, s:i, s:O, s:O}", "ns", cfg->ns, "ok",
                              status == LAPSE_CHECK_OK, "status", status, "max_overdue_s", max_s,
                              "shards", (int)l.shards, "problems", v.problems, "shard_info", info);
        if (o) {
            json_object_set_new(o, "max_memory_pct", json_integer(max_memory_pct));
            json_object_set(o, "memory", memory);
        }
        lapse_scale_print_json(o);
        json_decref(o);
    } else if (status == LAPSE_CHECK_OK) {
        printf("ok: namespace %s, %u shards, each with an active scanner, nothing overdue beyond "
               "%g s\n",
               cfg->ns, l.shards, max_s);
    }
    json_decref(v.problems);
    json_decref(info);
    json_decref(memory);
    lapse_layout_free(&l);
    return status;
}
