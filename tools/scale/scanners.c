/*
 * scanners — see scanners.h.
 */
#include "scanners.h"

#include <stdio.h>
#include <stdlib.h>

char *lapse_scale_start_line(const struct lapse_config *cfg, lapse_redis **nodes,
                             const struct lapse_layout *l, uint32_t j, char *out, size_t size)
{
    snprintf(out, size, "lapse-scanner -c %s --shard %u   # on a host that reaches %s%s", cfg->path,
             j, cfg->nodes[l->node_of[j]].master ? "the primary of " : "",
             lapse_redis_name(nodes[l->node_of[j]]));
    return out;
}

char *lapse_scale_shard_list(const uint32_t *shard, size_t n, char *out, size_t size)
{
    size_t at = 0;
    if (size)
        out[0] = '\0';
    for (size_t i = 0; i < n && at < size;) {
        size_t k = i;
        while (k + 1 < n && shard[k + 1] == shard[k] + 1)
            k++;
        int w = k == i
                    ? snprintf(out + at, size - at, "%s%u", i ? ", " : "", shard[i])
                    : snprintf(out + at, size - at, "%s%u-%u", i ? ", " : "", shard[i], shard[k]);
        if (w < 0)
            break;
        at += (size_t)w;
        i = k + 1;
    }
    return out;
}

size_t lapse_scale_warn_unserved(const struct lapse_config *cfg, lapse_redis **nodes,
                                 const struct lapse_layout *l, const char *cmd)
{
    uint32_t *idle = malloc(lapse_layout_span(l) * sizeof *idle);
    if (!idle) {
        fprintf(stderr, "lapse-scale: %s: out of memory reading the shards' scanners\n", cmd);
        return 0;
    }
    size_t n = 0, unread = 0;
    for (uint32_t i = 0; i < lapse_layout_span(l); i++) {
        /* the lock alone (GET): health.lua reads every counter of the
         * shard, tens of ms on a large one (make bench-merge), where this
         * needs only its holder */
        char lock[LAPSE_KEY_MAX];
        lapse_key(lock, sizeof lock, cfg, LAPSE_KEY_LOCK, i);
        lapse_redis *r = nodes[l->node_of[i]];
        redisReply *rep = lapse_redis_command(r, "GET %s", lock);
        if (!rep || (rep->type != REDIS_REPLY_STRING && rep->type != REDIS_REPLY_NIL)) {
            fprintf(stderr,
                    "lapse-scale: %s: warning: shard %u: cannot tell whether a scanner "
                    "serves it: %s\n",
                    cmd, i,
                    rep && rep->type == REDIS_REPLY_ERROR ? rep->str : lapse_redis_errstr(r));
            unread++;
        } else if (rep->type == REDIS_REPLY_NIL || rep->len == 0) {
            idle[n++] = i;
        }
        if (rep)
            freeReplyObject(rep);
    }
    if (n) {
        char list[256], line[1024];
        fprintf(stderr,
                "lapse-scale: %s: warning: %s %s %s no active scanner (scanner none in "
                "status): %s deadlines do not fire until one runs; start %s:\n",
                cmd, n == 1 ? "shard" : "shards",
                lapse_scale_shard_list(idle, n, list, sizeof list), n == 1 ? "has" : "have",
                n == 1 ? "its" : "their", n == 1 ? "it" : "them");
        for (size_t k = 0; k < n; k++)
            fprintf(stderr, "  %s\n",
                    lapse_scale_start_line(cfg, nodes, l, idle[k], line, sizeof line));
        fprintf(stderr,
                "lapse-scale: %s: (lapse-scale check fails until every shard has a scanner; "
                "one started a moment ago may not hold its shard yet)\n",
                cmd);
    }
    free(idle);
    return n + unread;
}
