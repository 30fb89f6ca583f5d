/* cluster — see cluster.h. */
#include "cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lapse_cluster_map_free(struct lapse_cluster_map *m)
{
    free(m->primaries);
    m->primaries = NULL;
    m->nprimaries = 0;
}

/* The index of addr among m's primaries, added if new; -1 if full. */
static int cluster_primary(struct lapse_cluster_map *m, const char *addr)
{
    for (size_t i = 0; i < m->nprimaries; i++)
        if (strcmp(m->primaries[i], addr) == 0)
            return (int)i;
    if (m->nprimaries == LAPSE_CLUSTER_PRIMARIES_MAX)
        return -1;
    snprintf(m->primaries[m->nprimaries], LAPSE_CLUSTER_ADDR_MAX, "%s", addr);
    return (int)m->nprimaries++;
}

/* "host:port" of a node entry of CLUSTER SLOTS ([host, port, id, ...]);
 * 0 or -1 if malformed. */
static int cluster_node_addr(const redisReply *n, const char *seed_host, char *addr, size_t size)
{
    if (n->type != REDIS_REPLY_ARRAY || n->elements < 2 ||
        n->element[0]->type != REDIS_REPLY_STRING || n->element[1]->type != REDIS_REPLY_INTEGER ||
        n->element[1]->integer <= 0 || n->element[1]->integer > 65535)
        return -1;
    const char *host = n->element[0]->len ? n->element[0]->str : seed_host;
    int w = snprintf(addr, size, strchr(host, ':') ? "[%s]:%lld" : "%s:%lld", host,
                     n->element[1]->integer);
    return w > 0 && (size_t)w < size ? 0 : -1;
}

int lapse_cluster_map_parse(struct lapse_cluster_map *m, const redisReply *reply,
                            const char *seed_host, char *errstr, size_t size)
{
    lapse_cluster_map_free(m);
    memset(m->owner, 0xff, sizeof m->owner);
    m->uncovered = LAPSE_SLOTS;
    if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(errstr, size, "CLUSTER SLOTS: %.200s", reply->str);
        return -1;
    }
    if (reply->type != REDIS_REPLY_ARRAY) {
        snprintf(errstr, size, "CLUSTER SLOTS: unexpected reply");
        return -1;
    }
    m->primaries = malloc(LAPSE_CLUSTER_PRIMARIES_MAX * sizeof *m->primaries);
    if (!m->primaries) {
        snprintf(errstr, size, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *e = reply->element[i];
        char addr[LAPSE_CLUSTER_ADDR_MAX];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER || e->element[0]->integer < 0 ||
            e->element[1]->integer >= LAPSE_SLOTS ||
            e->element[0]->integer > e->element[1]->integer ||
            cluster_node_addr(e->element[2], seed_host, addr, sizeof addr) < 0) {
            snprintf(errstr, size, "CLUSTER SLOTS: malformed entry %zu", i);
            goto fail;
        }
        int p = cluster_primary(m, addr);
        if (p < 0) {
            snprintf(errstr, size, "CLUSTER SLOTS: more than %d primaries",
                     LAPSE_CLUSTER_PRIMARIES_MAX);
            goto fail;
        }
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++) {
            if (m->owner[s] == LAPSE_CLUSTER_UNOWNED)
                m->uncovered--;
            m->owner[s] = (uint16_t)p;
        }
    }
    return 0;
fail:
    lapse_cluster_map_free(m);
    memset(m->owner, 0xff, sizeof m->owner);
    m->uncovered = LAPSE_SLOTS;
    return -1;
}

const char *lapse_cluster_owner(const struct lapse_cluster_map *m, uint16_t slot)
{
    uint16_t p = slot < LAPSE_SLOTS ? m->owner[slot] : LAPSE_CLUSTER_UNOWNED;
    return p == LAPSE_CLUSTER_UNOWNED ? NULL : m->primaries[p];
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK 3999 :6381": the slot and target. */
static int cluster_target(const char *rest, const char *seed_host, uint16_t *slot, char *addr,
                          size_t size)
{
    char *end;
    long s = strtol(rest, &end, 10);
    if (end == rest || *end != ' ' || s < 0 || s >= LAPSE_SLOTS)
        return -1;
    const char *target = end + 1;
    const char *colon = strrchr(target, ':');
    if (!colon || !colon[1] || strchr(target, ' '))
        return -1;
    int w = colon == target ? snprintf(addr, size, "%s%s", seed_host, target)
                            : snprintf(addr, size, "%s", target);
    if (w <= 0 || (size_t)w >= size)
        return -1;
    *slot = (uint16_t)s;
    return 0;
}

enum lapse_redirect lapse_cluster_redirect(const char *err, const char *seed_host, uint16_t *slot,
                                           char *addr, size_t size)
{
    if (strncmp(err, "MOVED ", 6) == 0)
        return cluster_target(err + 6, seed_host, slot, addr, size) == 0 ? LAPSE_REDIRECT_MOVED
                                                                         : LAPSE_REDIRECT_NONE;
    if (strncmp(err, "ASK ", 4) == 0)
        return cluster_target(err + 4, seed_host, slot, addr, size) == 0 ? LAPSE_REDIRECT_ASK
                                                                         : LAPSE_REDIRECT_NONE;
    if (strncmp(err, "TRYAGAIN", 8) == 0 || strncmp(err, "CLUSTERDOWN", 11) == 0)
        return LAPSE_REDIRECT_RETRY;
    return LAPSE_REDIRECT_NONE;
}
