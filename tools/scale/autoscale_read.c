/*
 * autoscale_read — see autoscale_read.h. Each call is tried once: a
 * reading that misses a shard or a node is marked not ok and counts for
 * neither window (autoscale.h), so a Redis outage never looks like a load
 * that fell.
 */
#include "autoscale_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "due.h"
#include "health.h"
#include "layout.h"
#include "memory.h"

int lapse_autoscale_cpu_init(struct lapse_autoscale_cpu *c, size_t nnodes)
{
    c->n = nnodes;
    c->sec = malloc(nnodes * sizeof *c->sec);
    c->at_ms = calloc(nnodes, sizeof *c->at_ms);
    if (!c->sec || !c->at_ms) {
        lapse_autoscale_cpu_free(c);
        return -1;
    }
    for (size_t i = 0; i < nnodes; i++)
        c->sec[i] = -1;
    return 0;
}

void lapse_autoscale_cpu_free(struct lapse_autoscale_cpu *c)
{
    free(c->sec);
    free(c->at_ms);
    memset(c, 0, sizeof *c);
}

double lapse_autoscale_cpu_parse(const char *info)
{
    static const char *const keys[] = {"used_cpu_sys:", "used_cpu_user:"};
    double sum = 0;
    int found = 0;
    for (int k = 0; k < 2; k++) {
        size_t len = strlen(keys[k]);
        for (const char *p = info; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
            if (strncmp(p, keys[k], len) == 0) {
                sum += strtod(p + len, NULL);
                found++;
                break;
            }
        }
    }
    return found ? sum : -1;
}

/* Node i's Redis CPU since the last reading, % of one core, or -1 (first
 * reading, a Cluster node: each primary would need its own counters, or
 * INFO denied). Updates c. */
static double node_cpu(lapse_redis *r, struct lapse_autoscale_cpu *c, size_t i, int64_t now_ms)
{
    if (!lapse_redis_one_server(r))
        return -1;
    redisReply *rep = lapse_redis_command(r, "INFO cpu");
    double sec = -1;
    if (rep && rep->type == REDIS_REPLY_STRING)
        sec = lapse_autoscale_cpu_parse(rep->str);
    if (rep)
        freeReplyObject(rep);
    double pct = -1;
    if (sec >= 0 && c->sec[i] >= 0 && now_ms > c->at_ms[i] && sec >= c->sec[i])
        pct = 100.0 * (sec - c->sec[i]) * 1000.0 / (double)(now_ms - c->at_ms[i]);
    c->sec[i] = sec;
    c->at_ms[i] = now_ms;
    return pct;
}

/* Says in r->why (the first problem only) what was not read. */
static void unread(struct lapse_autoscale_reading *r, const char *what, const char *err)
{
    if (r->ok)
        snprintf(r->why, sizeof r->why, "%.60s: %.180s", what, err);
    r->ok = 0;
}

/* The due-times and counters of every shard of l into due_next (IDs due
 * within the next minute), pending and the oldest served overdue of r. */
static void read_shards(const struct lapse_config *cfg, lapse_redis **nodes,
                        const struct lapse_layout *l, struct lapse_autoscale_reading *r)
{
    uint32_t span = lapse_layout_span(l);
    uint32_t *on = calloc(span, sizeof *on);
    struct lapse_scale_due *got = calloc(span, sizeof *got);
    if (!on || !got) {
        unread(r, "figures", "out of memory");
        free(on);
        free(got);
        return;
    }
    long long due = 0, pending = 0;
    char err[256], what[64];
    for (size_t n = 0; n < cfg->nnodes; n++) {
        size_t k = 0;
        for (uint32_t i = 0; i < span; i++)
            if (l->node_of[i] == n)
                on[k++] = i;
        if (k == 0)
            continue;
        memset(got, 0, k * sizeof *got);
        if (lapse_scale_due_read(nodes[n], cfg, on, k, got, err, sizeof err) != 0) {
            unread(r, lapse_redis_name(nodes[n]), err);
            continue;
        }
        for (size_t j = 0; j < k; j++) {
            snprintf(what, sizeof what, "shard %u", on[j]);
            if (!got[j].read)
                unread(r, what, got[j].error);
            else
                due += got[j].bucket[1]; /* next_1m */
            struct lapse_health h;
            if (lapse_health_read(nodes[n], cfg, on[j], &h, err, sizeof err) != 0) {
                unread(r, what, err);
                continue;
            }
            pending += h.pending;
            int64_t over = lapse_health_overdue_ms(&h);
            if (h.holder[0] && over > r->overdue_ms) /* (a shard nobody serves: no load) */
                r->overdue_ms = over;
        }
    }
    uint32_t per = l->shards ? l->shards : 1;
    r->due_per_s = (double)due / 60.0 / per;
    r->pending = (double)pending / per;
    free(on);
    free(got);
}

void lapse_autoscale_read(const struct lapse_config *cfg, lapse_redis **nodes,
                          struct lapse_autoscale_cpu *cpu, int64_t now_ms,
                          struct lapse_autoscale_reading *r)
{
    memset(r, 0, sizeof *r);
    r->at_ms = now_ms;
    r->ok = 1;
    r->overdue_ms = -1;
    r->memory_pct = -1;
    r->cpu_pct = -1;
    r->busy = -1;
    r->lateness_p99_ms = -1;
    struct lapse_layout l;
    char err[256];
    int rc = lapse_layout_load(nodes[0], cfg, &l, err, sizeof err);
    if (rc != 0) {
        unread(r, "layout",
               rc == 1 ? "the namespace is not initialised (lapse-scale init N)" : err);
        return;
    }
    r->shards = l.shards;
    r->prev = l.prev_shards;
    r->changing = lapse_layout_changing(&l);
    r->merging = l.state == LAPSE_LAYOUT_MERGING;
    read_shards(cfg, nodes, &l, r);
    lapse_layout_free(&l);

    struct lapse_scale_memory *m = NULL;
    size_t nm = lapse_scale_memory_read(cfg, nodes, &m);
    for (size_t i = 0; i < nm; i++) {
        if (!m[i].read) {
            unread(r, m[i].node, m[i].error);
            continue;
        }
        double pct = lapse_scale_memory_pct(&m[i].m);
        if (pct > r->memory_pct)
            r->memory_pct = pct;
    }
    free(m);
    for (size_t i = 0; i < cfg->nnodes && i < cpu->n; i++) {
        double pct = node_cpu(nodes[i], cpu, i, now_ms);
        if (pct > r->cpu_pct)
            r->cpu_pct = pct;
    }
}
