/*
 * status — see status.h. Reads that get no reply at all (a failover, a
 * cluster moving a slot: it lasts a moment) are tried again for up to
 * redis.retry_timeout_ms, so a status taken during either still answers.
 */
#include "status.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "health.h"
#include "inspect.h"
#include "memory.h"
#include "split.h"

/* A read that got no reply at all (a failover, a cluster moving the slot:
 * it lasts a moment) is tried again, after backoff.h's jittered waits, for
 * up to redis.retry_timeout_ms. */
struct retry {
    struct lapse_backoff backoff;
    int64_t start, give_up;    /* monotonic ms */
    int wait_s;                /* redis.retry_timeout_ms, in s */
    int said;                  /* the waiting line was written */
    lapse_scale_warn_fn *warn; /* where that line goes */
    void *warn_ctx;
};

void lapse_scale_warn_stderr(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "lapse-scale: %s\n", line);
}

int lapse_scale_print_json(const json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (s)
        printf("%s\n", s);
    free(s);
    return s ? 0 : -1;
}

void lapse_scale_warnf(lapse_scale_warn_fn *warn, void *ctx, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (warn)
        warn(ctx, line);
}

static void retry_init(struct retry *t, const struct lapse_config *cfg, lapse_scale_warn_fn *warn,
                       void *ctx)
{
    t->warn = warn;
    t->warn_ctx = ctx;
    lapse_backoff_init(&t->backoff, 10, 500);
    t->start = lapse_clock_mono_ms();
    t->give_up = t->start + cfg->redis_retry_timeout_ms;
    t->wait_s = (cfg->redis_retry_timeout_ms + 999) / 1000;
    t->said = 0;
}

/* 1 once it has waited for the next try; 0 when there is none (refused for
 * good, or out of time). A wait past its first second says so on stderr,
 * once, with how long it may last: a node that is down holds the answer
 * that long (a failover's moment stays silent). */
static int retry_again(struct retry *t, const lapse_redis *r)
{
    int64_t now = lapse_clock_mono_ms();
    if (lapse_redis_refused(r) || now >= t->give_up)
        return 0;
    if (!t->said && now - t->start >= 1000) {
        lapse_scale_warnf(t->warn, t->warn_ctx,
                          "waiting up to %d s (redis.retry_timeout_ms) for %s: %s", t->wait_s,
                          lapse_redis_name(r), lapse_redis_errstr(r));
        t->said = 1;
    }
    lapse_clock_sleep_ms(lapse_backoff_next(&t->backoff));
    return 1;
}

int lapse_scale_layout_read(const struct lapse_config *cfg, lapse_redis **nodes,
                            struct lapse_layout *l, lapse_scale_warn_fn *warn, void *ctx,
                            char *errstr, size_t size)
{
    struct retry t;
    int rc;
    retry_init(&t, cfg, warn, ctx);
    while ((rc = lapse_layout_load(nodes[0], cfg, l, errstr, size)) == -2 &&
           retry_again(&t, nodes[0]))
        ;
    if (rc == 1)
        snprintf(errstr, size, "namespace \"%s\" is not initialised: run lapse-scale -c %s init N",
                 cfg->ns, cfg->path);
    return rc == 0 ? 0 : -1;
}

int lapse_scale_layout(const struct lapse_config *cfg, lapse_redis **nodes, struct lapse_layout *l)
{
    char err[512];
    if (lapse_scale_layout_read(cfg, nodes, l, lapse_scale_warn_stderr, NULL, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "lapse-scale: %s\n", err);
    return -1;
}

/* Replicas online and the largest lag from an INFO replication reply;
 * online stays -1 when the reply is not one. */
static void replication_of(const redisReply *rep, long *online, long *lag)
{
    *online = *lag = -1;
    if (rep && rep->type == REDIS_REPLY_STRING) {
        *online = 0;
        for (const char *p = strstr(rep->str, "\nslave"); p; p = strstr(p + 1, "\nslave")) {
            const char *eol = strchr(p + 1, '\n'), *st = strstr(p, "state=online");
            const char *lg = strstr(p, "lag=");
            if (st && (!eol || st < eol))
                (*online)++;
            if (lg && (!eol || lg < eol) && atol(lg + 4) > *lag)
                *lag = atol(lg + 4);
        }
    }
}

/* The cluster's primaries, as node_status shows a node: each one's
 * address, replicas online and lag, and how many slots it serves. */
static void cluster_status(const struct lapse_config *cfg, lapse_redis *r, json_t *out, int as_json,
                           const struct retry *t)
{
    const struct lapse_cluster_map *m = lapse_redis_cluster_map(r);
    if (!m) {
        lapse_scale_warnf(t->warn, t->warn_ctx, "%s", lapse_redis_errstr(r));
        return;
    }
    for (size_t p = 0; p < m->nprimaries; p++) {
        int first = -1, slots = 0;
        for (int s = 0; s < LAPSE_SLOTS; s++)
            if (m->owner[s] == p && (slots++, first < 0))
                first = s;
        char addr[LAPSE_CLUSTER_ADDR_MAX];
        snprintf(addr, sizeof addr, "%s", m->primaries[p]);
        const char *argv[] = {"INFO", "replication"};
        size_t lens[] = {4, 11};
        redisReply *rep =
            first < 0 ? NULL : lapse_redis_command_slot(r, (uint16_t)first, 2, argv, lens);
        long online, lag;
        replication_of(rep, &online, &lag);
        if (rep)
            freeReplyObject(rep);
        m = lapse_redis_cluster_map(r); /* (a failed call may have read it again) */
        if (!m || p >= m->nprimaries)
            break;
        json_array_append_new(
            out, json_pack("{s:s, s:s, s:b, s:s, s:i, s:o, s:o}", "name", "cluster", "via",
                           "cluster", "tls", cfg->nodes[0].tls, "primary", addr, "slots", slots,
                           "replicas_online", online >= 0 ? json_integer(online) : json_null(),
                           "replica_lag_s", lag >= 0 ? json_integer(lag) : json_null()));
        if (as_json)
            continue;
        char via[64], reps[32] = "?", lags[32] = "-";
        snprintf(via, sizeof via, "cluster %d slots%s", slots, cfg->nodes[0].tls ? ", tls" : "");
        if (online >= 0)
            snprintf(reps, sizeof reps, "%ld", online);
        if (lag >= 0)
            snprintf(lags, sizeof lags, "%ld s", lag);
        printf("%-22s %-19s %-22s %8s %8s\n", "cluster", via, addr, reps, lags);
    }
}

/* How node r is doing: replicas online and the largest lag (s), from INFO
 * replication, or where the ACL forbids INFO (-@dangerous) the count alone
 * from WAIT (lag -1: unknown; it takes a second). Adds it to `out` and
 * prints a line. */
static void node_status(const struct lapse_config *cfg, size_t n, lapse_redis *r, json_t *out,
                        int as_json, const struct retry *t)
{
    const struct lapse_redis_node *nc = &cfg->nodes[n];
    long online, lag;
    if (!lapse_redis_one_server(r)) {
        cluster_status(cfg, r, out, as_json, t);
        return;
    }
    redisReply *rep = lapse_redis_command(r, "INFO replication");
    replication_of(rep, &online, &lag);
    if (rep && rep->type != REDIS_REPLY_STRING) {
        freeReplyObject(rep);
        /* replicas acknowledge once a second: a WAIT for more than can
         * be there answers, after that second, how many there are */
        rep = lapse_redis_command(r, "WAIT 1000 1100");
        if (rep && rep->type == REDIS_REPLY_INTEGER)
            online = (long)rep->integer;
    }
    if (rep)
        freeReplyObject(rep);
    char via[64];
    if (nc->master)
        snprintf(via, sizeof via, "sentinel (%zu)%s", nc->nsentinels, nc->tls ? ", tls" : "");
    else
        snprintf(via, sizeof via, "plain%s", nc->tls ? ", tls" : "");
    const char *primary = lapse_redis_addr(r)[0] ? lapse_redis_addr(r) : "-";
    json_array_append_new(
        out, json_pack("{s:s, s:s, s:b, s:s?, s:i, s:s, s:o, s:o}", "name", lapse_redis_name(r),
                       "via", nc->master ? "sentinel" : "plain", "tls", nc->tls, "master",
                       nc->master, "sentinels", (int)nc->nsentinels, "primary", primary,
                       "replicas_online", online >= 0 ? json_integer(online) : json_null(),
                       "replica_lag_s", lag >= 0 ? json_integer(lag) : json_null()));
    if (as_json)
        return;
    char reps[32] = "?", lags[32] = "-";
    if (online >= 0)
        snprintf(reps, sizeof reps, "%ld", online);
    if (lag >= 0)
        snprintf(lags, sizeof lags, "%ld s", lag);
    printf("%-22s %-19s %-22s %8s %8s\n", lapse_redis_name(r), via, primary, reps, lags);
}

/* With redis.wait_replicas: marks each primary of node_info with
 * replicas_missing (true when fewer replicas are online than that; its
 * writes cannot be confirmed) and, in text, names those primaries. */
static void status_replicas(const struct lapse_config *cfg, json_t *node_info, int as_json)
{
    size_t i;
    json_t *e;
    json_array_foreach(node_info, i, e)
    {
        json_t *online = json_object_get(e, "replicas_online");
        int missing = cfg->redis_wait_replicas > 0 && json_is_integer(online) &&
                      json_integer_value(online) < cfg->redis_wait_replicas;
        json_object_set_new(e, "replicas_missing", json_boolean(missing));
        if (missing && !as_json)
            printf("replicas missing: %s primary %s has %lld replicas online, "
                   "redis.wait_replicas = %d: writes there cannot be confirmed\n",
                   json_string_value(json_object_get(e, "name")),
                   json_string_value(json_object_get(e, "primary")),
                   (long long)json_integer_value(online), cfg->redis_wait_replicas);
    }
}

/* Shard i's counters (and what a split has left to move there); read again
 * while no reply comes, within the status's one retry window t. 0, -2 when
 * no reply came, or -1 with err. */
static int shard_read(const struct lapse_config *cfg, lapse_redis **nodes,
                      const struct lapse_layout *l, uint32_t i, int key_bytes, struct retry *t,
                      struct lapse_health *st, struct lapse_split_left *left, char *err,
                      size_t size)
{
    lapse_redis *r = nodes[l->node_of[i]];
    int rc;
    while ((rc = lapse_health_read_sized(r, cfg, i, key_bytes, st, err, size)) == -2 &&
           retry_again(t, r))
        ;
    return rc == 0 ? lapse_split_left(nodes, cfg, l, i, left, err, size) : rc;
}

const char *lapse_scale_from_now(int64_t ms, int64_t now, char *buf, size_t size)
{
    int64_t d = ms - now, a = d < 0 ? -d : d;
    char len[32];
    lapse_scale_duration(a, len, sizeof len);
    snprintf(buf, size, "%s%s%s", d >= 0 ? "in " : "", len, d < 0 ? " ago" : "");
    return buf;
}

const char *lapse_scale_pending_cmd(const struct lapse_layout *next)
{
    return next->state == LAPSE_LAYOUT_SPLITTING ? "split"
           : next->state == LAPSE_LAYOUT_MERGING ? "merge"
                                                 : "finish";
}

const char *lapse_scale_change_text(const struct lapse_layout *l, char *buf, size_t size)
{
    buf[0] = '\0';
    if (lapse_layout_changing(l))
        snprintf(buf, size, " (%s %u -> %u)", lapse_layout_state_name(l->state), l->prev_shards,
                 l->shards);
    return buf;
}

const char *lapse_scale_duration(int64_t ms, char *buf, size_t size)
{
    long long s = (long long)(ms / 1000);
    if (ms < 100000)
        snprintf(buf, size, "%lld.%lld s", s, (long long)(ms % 1000 / 100));
    else if (s < 3600)
        snprintf(buf, size, "%lld min %lld s", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, size, "%lld h %lld min", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, size, "%lld d %lld h", s / 86400, s % 86400 / 3600);
    return buf;
}

const char *lapse_scale_overdue_text(int64_t overdue_ms, char *buf, size_t size)
{
    if (overdue_ms < 0)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%lld.%lld s", (long long)(overdue_ms / 1000),
                 (long long)(overdue_ms % 1000 / 100));
    return buf;
}

/* The status read whole into one object (status --json's); with `text`
 * also printed for people as it is read. NULL when the layout cannot be
 * read (errstr says why); *failed 1 when a shard could not be read. */
static json_t *status_run(const struct lapse_config *cfg, lapse_redis **nodes, int text,
                          int key_bytes, lapse_scale_warn_fn *warn, void *ctx, int *failed_out,
                          char *errstr, size_t size)
{
    int as_json = !text;
    struct lapse_layout l;
    char err[512];
    *failed_out = 0;
    if (lapse_scale_layout_read(cfg, nodes, &l, warn, ctx, errstr, size) < 0)
        return NULL;
    json_t *shards = json_array();
    const char *state = lapse_layout_state_name(l.state);
    char change[64];
    struct lapse_layout pending;
    int has_pending =
        lapse_layout_read(nodes[0], cfg, "layout:next", &pending, err, sizeof err) == 0;
    if (has_pending && !as_json)
        fprintf(stderr,
                "lapse-scale: a %s to epoch %lld is under way or was interrupted: "
                "writers and scanners are paused until it ends (if no lapse-scale %s runs "
                "now, run it again)\n",
                lapse_scale_pending_cmd(&pending), (long long)pending.epoch,
                lapse_scale_pending_cmd(&pending));
    if (!as_json) {
        printf("namespace %s: %u shards, state %s, epoch %lld", cfg->ns, l.shards, state,
               (long long)l.epoch);
        printf("%s\n", lapse_scale_change_text(&l, change, sizeof change));
    }
    uint64_t to_move = 0;
    int64_t last_due = -1;
    json_t *node_info = json_array();
    struct retry t;
    retry_init(&t, cfg, warn, ctx);
    if (!as_json)
        printf("%-22s %-19s %-22s %8s %8s\n", "node", "reached", "primary", "replicas", "lag");
    for (size_t n = 0; n < cfg->nnodes; n++)
        node_status(cfg, n, nodes[n], node_info, as_json, &t);
    status_replicas(cfg, node_info, as_json);
    struct lapse_scale_memory *mem = NULL;
    size_t nmem = lapse_scale_memory_read(cfg, nodes, &mem);
    json_t *mem_info = json_array();
    for (size_t n = 0; n < nmem; n++)
        json_array_append_new(mem_info, lapse_scale_memory_json(&mem[n]));
    if (!as_json)
        lapse_scale_memory_print(mem, nmem);
    free(mem);
    if (!as_json)
        printf(LAPSE_SCALE_SHARD_HEADER);
    /* A shard that cannot be read is named (stderr; "error" in --json) and
     * the rest still shown, exit status 1. Reads that get no reply share
     * one retry window: once it is over, each is tried once. */
    int failed = 0;
    long long keys = 0, over = 0, largest_ids = 0, largest_bytes = -1, largest_shard = -1;
    long long offline = 0;
    retry_init(&t, cfg, warn, ctx);
    for (uint32_t i = 0; i < lapse_layout_span(&l); i++) {
        lapse_redis *r = nodes[l.node_of[i]];
        struct lapse_health st;
        struct lapse_split_left left;
        if (shard_read(cfg, nodes, &l, i, key_bytes, &t, &st, &left, err, sizeof err) < 0) {
            lapse_scale_warnf(warn, ctx, "shard %u: %s", i, err);
            failed = 1;
            json_array_append_new(shards, json_pack("{s:i, s:s, s:s}", "shard", (int)i, "node",
                                                    lapse_redis_name(r), "error", err));
            if (!as_json)
                printf("%-6u %-22s %10s\n", i, lapse_redis_name(r), "(unread)");
            continue;
        }
        to_move += left.ids;
        if (left.last_due_ms > last_due)
            last_due = left.last_due_ms;
        int64_t overdue = lapse_health_overdue_ms(&st);
        json_t *o = json_pack(
            "{s:i, s:s, s:I, s:I, s:I, s:o, s:o, s:s?}", "shard", (int)i, "node",
            lapse_redis_name(r), "pending", (json_int_t)st.pending, "due", (json_int_t)st.due,
            "inflight", (json_int_t)st.inflight, "overdue_ms",
            overdue >= 0 ? json_integer(overdue) : json_null(), "oldest_inflight_ms",
            st.oldest_inflight_ms >= 0 ? json_integer(st.oldest_inflight_ms) : json_null(),
            "scanner", st.holder[0] ? st.holder : NULL);
        json_object_set_new(o, "keys", json_integer((json_int_t)st.keys));
        json_object_set_new(o, "largest_key_ids", json_integer((json_int_t)st.largest_ids));
        json_object_set_new(o, "largest_key_bytes",
                            st.largest_bytes >= 0 ? json_integer((json_int_t)st.largest_bytes)
                                                  : json_null());
        json_object_set_new(o, "over_listpack", json_integer((json_int_t)st.over_listpack));
        json_object_set_new(o, "offline", json_integer((json_int_t)st.offline));
        keys += st.keys, over += st.over_listpack, offline += st.offline;
        if (st.largest_ids > largest_ids)
            largest_ids = st.largest_ids, largest_bytes = st.largest_bytes, largest_shard = i;
        if (lapse_layout_gives(&l, i)) {
            json_object_set_new(o, "to_move", json_integer((json_int_t)left.ids));
            json_object_set_new(o, "last_to_move_due_ms",
                                left.ids ? json_integer(left.last_due_ms) : json_null());
        }
        uint16_t slot = lapse_shard_slot(cfg->ns, i);
        const char *owner = lapse_redis_one_server(r) ? NULL : lapse_redis_slot_owner(r, slot);
        char where[LAPSE_NODE_NAME_MAX + 16];
        snprintf(where, sizeof where, "%s", lapse_redis_name(r));
        if (!lapse_redis_one_server(r)) {
            json_object_set_new(o, "slot", json_integer(slot));
            json_object_set_new(o, "primary", owner ? json_string(owner) : json_null());
            snprintf(where, sizeof where, "%u@%s", slot, owner ? owner : "-");
        }
        json_array_append_new(shards, o);
        if (!as_json) {
            char od[32], move[32] = "-";
            if (lapse_layout_gives(&l, i))
                snprintf(move, sizeof move, "%llu", (unsigned long long)left.ids);
            printf(LAPSE_SCALE_SHARD_ROW, i, where, st.pending, st.due, st.inflight,
                   lapse_scale_overdue_text(overdue, od, sizeof od), move,
                   st.holder[0] ? st.holder : "none");
        }
    }
    json_t *o = json_pack("{s:s, s:i, s:i, s:s, s:I, s:o, s:o}", "ns", cfg->ns, "shards",
                          (int)l.shards, "prev_shards", (int)l.prev_shards, "state", state, "epoch",
                          (json_int_t)l.epoch, "shard_info", shards, "nodes", node_info);
    if (o) {
        json_object_set_new(o, "memory", mem_info);
        if (has_pending)
            json_object_set_new(o, "interrupted",
                                json_pack("{s:s, s:I}", "command",
                                          lapse_scale_pending_cmd(&pending), "epoch",
                                          (json_int_t)pending.epoch));
        if (lapse_layout_changing(&l)) {
            /* (a shard unread: what is left is not known, only a floor) */
            json_object_set_new(o, "to_move",
                                failed ? json_null() : json_integer((json_int_t)to_move));
            json_object_set_new(o, "last_to_move_due_ms",
                                to_move && !failed ? json_integer(last_due) : json_null());
        }
    } else {
        json_decref(mem_info);
        snprintf(errstr, size, "out of memory");
    }
    if (!as_json) {
        if (largest_shard >= 0) {
            char bytes[48] = "";
            if (largest_bytes >= 0)
                snprintf(bytes, sizeof bytes, ", %lld bytes", largest_bytes);
            printf("keys: %lld zsets hold IDs; the largest, in shard %lld, %lld IDs%s\n", keys,
                   largest_shard, largest_ids, bytes);
        }
        if (over)
            printf(
                "%lld zsets hold more than %d IDs (Redis keeps them in its large encoding: "
                "more memory, nothing lost); in small keys the scanners split buckets while "
                "they run, or raise zset-max-listpack-entries (docs/operating.md, \"Small keys\")\n",
                over, LAPSE_HEALTH_LISTPACK);
        if (offline)
            printf("offline: %lld IDs (recovery on, timed out, not written since; lapse-scale "
                   "offline lists them)\n",
                   offline);
        if (lapse_layout_changing(&l)) {
            /* (as status --watch says it: the split ends, without a drain,
             * at the latest when the last of them falls due) */
            char iso[40], in[64] = "";
            if (to_move && !failed)
                lapse_scale_from_now(last_due, lapse_clock_ms(), in, sizeof in);
            int merge = l.state == LAPSE_LAYOUT_MERGING;
            printf("%s: %s%llu IDs left to move out of %s shards%s%s%s%s%s\n",
                   merge ? "merge" : "split", failed ? "at least " : "",
                   (unsigned long long)to_move, merge ? "retiring" : "old",
                   to_move && !failed ? "; at the latest when the last falls due, " : "",
                   to_move && !failed ? lapse_inspect_iso(last_due, iso, sizeof iso) : "",
                   in[0] ? " (" : "", in, in[0] ? ")" : "");
            if (to_move || failed)
                printf("%s: finish refuses until they fell due or were drained (finish "
                       "--drain moves them now)\n",
                       merge ? "merge" : "split");
        }
    }
    lapse_layout_free(&l);
    if (has_pending)
        lapse_layout_free(&pending);
    *failed_out = failed;
    return o;
}

json_t *lapse_scale_status_json(const struct lapse_config *cfg, lapse_redis **nodes, int key_bytes,
                                lapse_scale_warn_fn *warn, void *ctx, int *failed, char *errstr,
                                size_t size)
{
    return status_run(cfg, nodes, 0, key_bytes, warn, ctx, failed, errstr, size);
}

int lapse_scale_status(const struct lapse_config *cfg, lapse_redis **nodes, int as_json)
{
    char err[512];
    int failed = 0;
    json_t *o = status_run(cfg, nodes, !as_json, 1, lapse_scale_warn_stderr, NULL, &failed, err,
                           sizeof err);
    if (!o) {
        fprintf(stderr, "lapse-scale: %s\n", err);
        return 1;
    }
    if (as_json)
        lapse_scale_print_json(o);
    json_decref(o);
    return failed;
}
