/* memory — see memory.h. */
#include "memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One primary: r's, or the primary of a cluster that owns `slot`. */
static void memory_one(const struct lapse_config *cfg, lapse_redis *r, uint16_t slot,
                       const char *primary, struct lapse_scale_memory *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->node, sizeof e->node, "%s", lapse_redis_name(r));
    e->read = lapse_redis_memory(r, slot, &e->m) == 0;
    if (!e->read)
        snprintf(e->error, sizeof e->error, "%s", lapse_redis_errstr(r));
    else if (!e->m.policy[0] && cfg->redis_policy_checked)
        snprintf(e->m.policy, sizeof e->m.policy, "%s", cfg->redis_policy_checked);
    if (!primary)
        primary = lapse_redis_addr(r)[0] ? lapse_redis_addr(r) : "-";
    snprintf(e->primary, sizeof e->primary, "%s", primary);
}

size_t lapse_scale_memory_read(const struct lapse_config *cfg, lapse_redis **nodes,
                               struct lapse_scale_memory **out)
{
    size_t n = 0, cap = cfg->nnodes;
    struct lapse_scale_memory *a = calloc(cap, sizeof *a);
    for (size_t i = 0; a && i < cfg->nnodes; i++) {
        lapse_redis *r = nodes[i];
        const struct lapse_cluster_map *m = lapse_redis_cluster_map(r);
        if (lapse_redis_one_server(r) || !m) {
            memory_one(cfg, r, 0, NULL, &a[n++]);
            continue;
        }
        size_t np = m->nprimaries;
        struct lapse_scale_memory *b = realloc(a, (cap + np) * sizeof *a);
        if (!b)
            break;
        a = b, cap += np;
        for (size_t p = 0; p < np; p++) {
            m = lapse_redis_cluster_map(r); /* (a failed call may have read it again) */
            if (!m || p >= m->nprimaries)
                break;
            int slot = -1;
            for (int s = 0; s < LAPSE_SLOTS && slot < 0; s++)
                if (m->owner[s] == p)
                    slot = s;
            char addr[LAPSE_CLUSTER_ADDR_MAX];
            snprintf(addr, sizeof addr, "%s", m->primaries[p]);
            if (slot >= 0)
                memory_one(cfg, r, (uint16_t)slot, addr, &a[n++]);
        }
    }
    *out = a;
    return a ? n : 0;
}

double lapse_scale_memory_pct(const struct lapse_redis_memory *m)
{
    return m->used >= 0 && m->max > 0 ? 100.0 * (double)m->used / (double)m->max : -1;
}

json_t *lapse_scale_memory_json(const struct lapse_scale_memory *e)
{
    json_t *o = json_pack("{s:s, s:s}", "node", e->node, "primary", e->primary);
    if (!o)
        return NULL;
    const struct lapse_redis_memory *m = &e->m;
    int known = e->read && m->policy[0];
    json_object_set_new(o, "used_memory",
                        e->read && m->used >= 0 ? json_integer(m->used) : json_null());
    json_object_set_new(o, "maxmemory",
                        e->read && m->max >= 0 ? json_integer(m->max) : json_null());
    json_object_set_new(o, "maxmemory_policy", known ? json_string(m->policy) : json_null());
    json_object_set_new(o, "evicting",
                        known ? json_boolean(lapse_redis_policy_evicts(m->policy)) : json_null());
    if (!e->read)
        json_object_set_new(o, "error", json_string(e->error));
    else if (!m->policy[0])
        json_object_set_new(o, "policy_unknown", json_string(m->why));
    return o;
}

/* bytes as "12.3 MB" (decimal units, as INFO's *_human are not) */
static void human(long long b, char *out, size_t size)
{
    if (b < 0)
        snprintf(out, size, "?");
    else if (b < 1000000)
        snprintf(out, size, "%.1f kB", (double)b / 1e3);
    else if (b < 1000000000)
        snprintf(out, size, "%.1f MB", (double)b / 1e6);
    else
        snprintf(out, size, "%.1f GB", (double)b / 1e9);
}

void lapse_scale_memory_print(const struct lapse_scale_memory *e, size_t n)
{
    printf("\n%-22s %-22s %10s %10s %6s  %s\n", "memory", "primary", "used", "maxmemory", "use",
           "policy");
    for (size_t i = 0; i < n; i++) {
        const struct lapse_redis_memory *m = &e[i].m;
        if (!e[i].read) {
            printf("%-22s %-22s %10s %10s %6s  unknown: %s\n", e[i].node, e[i].primary, "?", "?",
                   "-", e[i].error);
            continue;
        }
        char used[32], max[32], pct[16] = "-", policy[200];
        human(m->used, used, sizeof used);
        if (m->max == 0)
            snprintf(max, sizeof max, "none");
        else
            human(m->max, max, sizeof max);
        if (lapse_scale_memory_pct(m) >= 0)
            snprintf(pct, sizeof pct, "%.0f%%", lapse_scale_memory_pct(m));
        if (!m->policy[0])
            snprintf(policy, sizeof policy, "unknown: %s", m->why);
        else
            snprintf(policy, sizeof policy, "%s%s", m->policy,
                     lapse_redis_policy_evicts(m->policy) ? " (evicts: deadlines may be lost)"
                                                          : "");
        printf("%-22s %-22s %10s %10s %6s  %s\n", e[i].node, e[i].primary, used, max, pct, policy);
    }
}
