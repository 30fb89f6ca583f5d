/*
 * due — see due.h.
 *
 * How the counts stay right: a bucket is ZCOUNT over its score range minus
 * the IDs in flight whose score falls in that range. A claim takes one-shot
 * IDs out of the sorted set into a record (common/lua/claim.lua): they are
 * counted from the record, in their own column, and are in no range. A
 * repeating ID in flight, and an ID under an older kind of lease ("<ms>.5",
 * "<ms>.75" for a producer's take during a split), stays in the set with a
 * lease for its score, which is not its deadline, so it comes out of the
 * range its lease lands in. Which IDs are in flight is decided by one
 * function of the script, due_inflight.
 *
 * The script only reads (TIME, HKEYS, HGET, ZMSCORE, ZCOUNT): it may run against a busy
 * primary at any time without changing what the scanners see.
 */
#include "due.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "layout.h"
#include "status.h"

const int64_t lapse_scale_due_edge_ms[LAPSE_SCALE_DUE_BUCKETS - 1] = {
    0, 60 * 1000, 10 * 60 * 1000, 60 * 60 * 1000, 24 * 60 * 60 * 1000,
};
const char *const lapse_scale_due_name[LAPSE_SCALE_DUE_BUCKETS] = {
    "overdue", "next_1m", "next_10m", "next_1h", "next_1d", "later",
};
/* the column headers of the text table, bucket for bucket */
static const char *const due_header[LAPSE_SCALE_DUE_BUCKETS] = {
    "overdue", "1 min", "10 min", "1 h", "1 day", "later",
};

/*
 * KEYS[1] the shard's zset, KEYS[2] its in-flight records (NS:f:I);
 * ARGV the buckets' upper edges as ms from now. Returns { now, inflight,
 * bucket1, ..., bucketN } (N = #ARGV + 1).
 *
 * due_inflight: how many IDs are in flight, and how many of those hold a
 * place in zset z, per bucket (by their score), as lapse-scale status
 * counts them (common/health.c): the IDs of a claim's record (lease
 * "<ms>.25", common/lua/lib/inflight.lua) not written since — out of the
 * set, or a repeating one still on the lease (that one is in the set, in
 * its lease's bucket) — and the IDs holding an older kind of lease (".5",
 * ".75", one ZCOUNT per lease) that has a record. A field that is not a
 * lease is skipped.
 */
static const char due_lua[] =
    "local function due_inflight(z, f, edges)\n"
    "    local total, held = 0, {}\n"
    "    for b = 1, #edges + 1 do held[b] = 0 end\n"
    "    for _, l in ipairs(redis.call('HKEYS', f)) do\n"
    "        local s = string.find(l, '.', 1, true) and tonumber(l)\n"
    "        local b = 1\n"
    "        while s and b <= #edges and s > edges[b] do b = b + 1 end\n"
    "        if s and string.sub(l, -3) == '.25' then\n"
    "            local groups, flat = cmsgpack.unpack(redis.call('HGET', f, l))\n"
    "            local ids = {}\n"
    "            for g = 1, #groups, 2 do\n"
    "                for _, id in ipairs(groups[g + 1]) do ids[#ids + 1] = id end\n"
    "            end\n"
    "            for i = 1, #flat, 2 do ids[#ids + 1] = flat[i] end\n"
    "            for k = 1, #ids, 1000 do\n"
    "                local cur = redis.call('ZMSCORE', z, unpack(ids, k, math.min(k + 999, #ids)))\n"
    "                for j = 1, #cur do\n"
    "                    if not cur[j] then total = total + 1\n"
    "                    elseif cur[j] == l then total, held[b] = total + 1, held[b] + 1 end\n"
    "                end\n"
    "            end\n"
    "        elseif s then\n"
    "            local n = redis.call('ZCOUNT', z, l, l)\n"
    "            total, held[b] = total + n, held[b] + n\n"
    "        end\n"
    "    end\n"
    "    return total, held\n"
    "end\n"
    "local z, f = KEYS[1], KEYS[2]\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local edges = {}\n"
    "for i = 1, #ARGV do edges[i] = now + tonumber(ARGV[i]) end\n"
    "local inflight, held = due_inflight(z, f, edges)\n"
    "local out, lo = { now, inflight }, '-inf'\n"
    "for b = 1, #edges + 1 do\n"
    "    local hi = edges[b] and string.format('%d', edges[b]) or '+inf'\n"
    "    out[#out + 1] = redis.call('ZCOUNT', z, lo, hi) - held[b]\n"
    "    lo = '(' .. hi\n"
    "end\n"
    "return out\n";

/* Fills d from a reply of due_lua; 0, or -1 with d->error. */
static int due_decode(const redisReply *rep, struct lapse_scale_due *d)
{
    int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 + LAPSE_SCALE_DUE_BUCKETS;
    for (size_t i = 0; ok && i < rep->elements; i++)
        ok = rep->element[i]->type == REDIS_REPLY_INTEGER;
    if (!ok) {
        snprintf(d->error, sizeof d->error, "unexpected reply to the due-times script%s%.200s",
                 rep->type == REDIS_REPLY_ERROR ? ": " : "",
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "");
        return -1;
    }
    d->now_ms = rep->element[0]->integer;
    d->inflight = rep->element[1]->integer;
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
        d->bucket[b] = rep->element[2 + b]->integer;
    d->read = 1;
    return 0;
}

int lapse_scale_due_read(lapse_redis *r, const struct lapse_config *cfg, const uint32_t *shard,
                         size_t nshards, struct lapse_scale_due *out, char *errstr, size_t size)
{
    char edges[LAPSE_SCALE_DUE_BUCKETS - 1][24];
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS - 1; b++)
        snprintf(edges[b], sizeof edges[b], "%lld", (long long)lapse_scale_due_edge_ms[b]);
    if (lapse_redis_ensure(r) < 0) {
        snprintf(errstr, size, "%s", lapse_redis_errstr(r));
        return -2;
    }
    for (size_t k = 0; k < nshards; k++) {
        char z[LAPSE_KEY_MAX], f[LAPSE_KEY_MAX];
        lapse_key(z, sizeof z, cfg, LAPSE_KEY_DUE, shard[k]);
        lapse_key(f, sizeof f, cfg, LAPSE_KEY_INFLIGHT, shard[k]);
        const char *argv[5 + LAPSE_SCALE_DUE_BUCKETS - 1] = {"EVAL", due_lua, "2", z, f};
        size_t lens[5 + LAPSE_SCALE_DUE_BUCKETS - 1];
        int argc = 5;
        for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS - 1; b++)
            argv[argc++] = edges[b];
        for (int i = 0; i < argc; i++)
            lens[i] = strlen(argv[i]);
        if (lapse_redis_append_slot(r, lapse_shard_slot(cfg->ns, shard[k]), argc, argv, lens) < 0) {
            snprintf(errstr, size, "%s", lapse_redis_errstr(r));
            return -2;
        }
    }
    for (size_t k = 0; k < nshards; k++) {
        redisReply *rep;
        memset(&out[k], 0, sizeof out[k]);
        if (lapse_redis_get_reply(r, &rep) < 0) {
            snprintf(errstr, size, "%s", lapse_redis_errstr(r));
            return -2;
        }
        due_decode(rep, &out[k]);
        freeReplyObject(rep);
    }
    return 0;
}

/* Every node's shards, each node's read in one pipeline; a node that gives
 * no reply is tried again, with backoff.h's waits, for up to
 * redis.retry_timeout_ms (a failover, a cluster moving a slot). The
 * shards of a node that never answered get read 0 and the reason. */
static void due_read_all(const struct lapse_config *cfg, lapse_redis **nodes,
                         const struct lapse_layout *l, struct lapse_scale_due *d)
{
    uint32_t *on = malloc(l->shards * sizeof *on);
    struct lapse_scale_due *got = malloc(l->shards * sizeof *got);
    if (!on || !got) {
        for (uint32_t i = 0; i < l->shards; i++)
            snprintf(d[i].error, sizeof d[i].error, "out of memory");
        free(on);
        free(got);
        return;
    }
    struct lapse_backoff backoff;
    lapse_backoff_init(&backoff, 10, 500);
    int64_t give_up = lapse_clock_mono_ms() + cfg->redis_retry_timeout_ms;
    size_t nnodes = lapse_redis_is_cluster(nodes[0]) ? 1 : cfg->nnodes;
    for (size_t n = 0; n < nnodes; n++) {
        size_t k = 0;
        for (uint32_t i = 0; i < l->shards; i++)
            if (l->node_of[i] == n)
                on[k++] = i;
        if (k == 0)
            continue;
        lapse_redis *r = nodes[n];
        char err[256];
        int rc;
        while ((rc = lapse_scale_due_read(r, cfg, on, k, got, err, sizeof err)) == -2 &&
               !lapse_redis_refused(r) && lapse_clock_mono_ms() < give_up)
            lapse_clock_sleep_ms(lapse_backoff_next(&backoff));
        for (size_t j = 0; j < k; j++) {
            if (rc == 0)
                d[on[j]] = got[j];
            else
                snprintf(d[on[j]].error, sizeof d[on[j]].error, "%s", err);
        }
    }
    free(on);
    free(got);
}

/* Where shard i is, as status names it: the node, or on a cluster
 * "slot@primary". */
static void due_where(const struct lapse_config *cfg, lapse_redis *r, uint32_t i, char *out,
                      size_t size)
{
    if (!lapse_redis_is_cluster(r)) {
        snprintf(out, size, "%s", lapse_redis_name(r));
        return;
    }
    uint16_t slot = lapse_shard_slot(cfg->ns, i);
    const char *owner = lapse_redis_slot_owner(r, slot);
    snprintf(out, size, "%u@%s", slot, owner ? owner : "-");
}

/* Adds d's counts to object o; returns o. */
static json_t *due_json(json_t *o, const struct lapse_scale_due *d, long long pending)
{
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
        json_object_set_new(o, lapse_scale_due_name[b], json_integer(d->bucket[b]));
    json_object_set_new(o, "inflight", json_integer(d->inflight));
    json_object_set_new(o, "pending", json_integer(pending));
    return o;
}

static void due_row(const char *name, const char *where, const struct lapse_scale_due *d,
                    long long pending)
{
    printf("%-6s %-22s", name, where);
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
        printf(" %10lld", d->bucket[b]);
    printf(" %9lld %10lld\n", d->inflight, pending);
}

int lapse_scale_due(const struct lapse_config *cfg, lapse_redis **nodes, int as_json)
{
    struct lapse_layout l;
    if (lapse_scale_layout(cfg, nodes, &l) < 0)
        return 1;
    struct lapse_scale_due *d = calloc(l.shards, sizeof *d);
    if (!d) {
        fprintf(stderr, "lapse-scale: out of memory\n");
        lapse_layout_free(&l);
        return 1;
    }
    due_read_all(cfg, nodes, &l, d);

    const char *state = l.splitting ? "splitting" : "stable";
    struct lapse_scale_due total = {0};
    int unread = 0;
    json_t *shards = json_array();
    if (!as_json) {
        printf("namespace %s: %u shards, state %s, epoch %lld", cfg->ns, l.shards, state,
               (long long)l.epoch);
        if (l.splitting)
            printf(" (splitting %u -> %u)", l.prev_shards, l.shards);
        printf("\npending deadlines by when they fall due, on each shard's Redis clock\n");
        printf("\n%-6s %-22s", "shard", "node");
        for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
            printf(" %10s", due_header[b]);
        printf(" %9s %10s\n", "inflight", "pending");
    }
    for (uint32_t i = 0; i < l.shards; i++) {
        lapse_redis *r = nodes[l.node_of[i]];
        char where[LAPSE_NODE_NAME_MAX + 16], name[16];
        due_where(cfg, r, i, where, sizeof where);
        snprintf(name, sizeof name, "%u", i);
        if (!d[i].read) {
            fprintf(stderr, "lapse-scale: shard %u: %s\n", i, d[i].error);
            unread++;
            json_array_append_new(shards, json_pack("{s:i, s:s, s:s}", "shard", (int)i, "node",
                                                    where, "error", d[i].error));
            if (!as_json)
                printf("%-6u %-22s %10s\n", i, where, "(unread)");
            continue;
        }
        long long pending = d[i].inflight;
        for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++) {
            pending += d[i].bucket[b];
            total.bucket[b] += d[i].bucket[b];
        }
        total.inflight += d[i].inflight;
        json_array_append_new(shards, due_json(json_pack("{s:i, s:s, s:I}", "shard", (int)i,
                                                         "node", where, "now_ms",
                                                         (json_int_t)d[i].now_ms),
                                               &d[i], pending));
        if (!as_json)
            due_row(name, where, &d[i], pending);
    }
    long long pending = total.inflight;
    for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS; b++)
        pending += total.bucket[b];
    if (as_json) {
        json_t *edges = json_array();
        for (int b = 0; b < LAPSE_SCALE_DUE_BUCKETS - 1; b++)
            json_array_append_new(edges, json_integer(lapse_scale_due_edge_ms[b]));
        json_t *tot = due_json(json_object(), &total, pending);
        json_object_set_new(tot, "unread_shards", json_integer(unread));
        json_t *o = json_pack("{s:s, s:i, s:i, s:s, s:I, s:o, s:o, s:o}", "ns", cfg->ns, "shards",
                              (int)l.shards, "prev_shards", (int)l.prev_shards, "state", state,
                              "epoch", (json_int_t)l.epoch, "edges_ms", edges, "shard_info", shards,
                              "total", tot);
        char *s = json_dumps(o, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        json_decref(shards);
        due_row("total", unread ? "(shards unread)" : "", &total, pending);
        printf("\noverdue: due now, not yet claimed; 1 min: due within the next minute; 10 min,\n"
               "1 h, 1 day: after the column before, within that; inflight: being dispatched\n"
               "(in no other column)\n");
        if (l.splitting)
            printf("split: an ID not moved yet is counted in the old shard that holds it\n");
    }
    free(d);
    lapse_layout_free(&l);
    return unread ? 1 : 0;
}
