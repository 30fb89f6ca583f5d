/*
 * lapse-scale: the operators' tool for the shard layout (scripts/lapse-scale
 * runs it). The work is in common/layout.c and common/split.c; this file
 * parses the command line and prints.
 *
 *   init N            create the layout with N shards (a power of two); again
 *                     with the same N is a no-op, with another N an error
 *   status [--json]   the layout, per node how it is reached, its primary and
 *                     replicas, and per shard: node, pending, due, in
 *                     flight, oldest overdue, the active scanner; during a
 *                     split also the IDs left to move per old shard
 *   status --watch [--interval S] [--count N]
 *                     the shards' counters refreshed (tools/scale/watch.c)
 *   get ID [--json]   where an ID lives and what is held for it
 *                     (tools/scale/get.c, common/inspect.c)
 *   check [--max-overdue S] [--json]
 *                     exit 0 when every shard has an active scanner and
 *                     nothing is overdue (tools/scale/check.c)
 *   split [--to NODES] [--start-cmd CMD]
 *                     double the shards online; new shards on NODES
 *                     (host:port,...) or beside their old twins; prints, or
 *                     runs once per new shard, what starts their scanners
 *   finish [--drain] [--rate N]
 *                     end the split once no old shard holds a moving ID;
 *                     --drain first moves them, N a second (default 5000)
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "config.h"
#include "hash.h"
#include "health.h"
#include "inspect.h"
#include "layout.h"
#include "redis.h"
#include "split.h"
#include "scale/check.h"
#include "scale/get.h"
#include "scale/watch.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: lapse-scale -c FILE COMMAND\n"
            "  init N                         create the layout with N shards (a power of two)\n"
            "  status [--json]                the layout and every shard's backlog and scanner\n"
            "  status --watch [--interval S] [--count N]\n"
            "                                 the same, refreshed every S seconds (default 2): on a\n"
            "                                 terminal redrawn, else one block per refresh; during a\n"
            "                                 split the IDs left in old shards, their rate and when\n"
            "                                 it ends; stops after N refreshes, or on Ctrl-C/SIGTERM\n"
            "  get ID [--json]                where ID lives (shard, node), its pending deadline,\n"
            "                                 in flight (lease, deadline dispatched), payload,\n"
            "                                 repeat, and during a split its twin; reads only\n"
            "                                 (an ID starting with '-': get -- ID)\n"
            "  check [--max-overdue S] [--json]\n"
            "                                 exit 0 when every shard has an active scanner and no\n"
            "                                 due ID is more than S seconds (default 60) overdue;\n"
            "                                 else one line per problem on stdout\n"
            "  split [--to HOST:PORT,...] [--start-cmd 'CMD %%d']\n"
            "                                 double the shards online; new shards on the given\n"
            "                                 nodes (listed in the config) or beside their twins;\n"
            "                                 prints, or runs per new shard, what starts their scanners\n"
            "  finish [--drain] [--rate N]    end the split once no old shard holds an ID of a new\n"
            "                                 one; --drain moves those first, N a second (5000)\n"
            "exit status: 0 success; 1 failure (check: a problem was found); 2 usage or config\n"
            "error, a bad ID; 3 (check) Redis unreachable\n");
}

/* A read that got no reply at all (a failover, a cluster moving the slot:
 * it lasts a moment) is tried again, after backoff.h's jittered waits, for
 * up to redis.retry_timeout_ms. */
struct retry {
    struct lapse_backoff backoff;
    int64_t give_up; /* monotonic ms */
};

static void retry_init(struct retry *t, const struct lapse_config *cfg)
{
    lapse_backoff_init(&t->backoff, 10, 500);
    t->give_up = lapse_clock_mono_ms() + cfg->redis_retry_timeout_ms;
}

/* 1 once it has waited for the next try; 0 when there is none (refused for
 * good, or out of time). */
static int retry_again(struct retry *t, const lapse_redis *r)
{
    if (lapse_redis_refused(r) || lapse_clock_mono_ms() >= t->give_up)
        return 0;
    lapse_clock_sleep_ms(lapse_backoff_next(&t->backoff));
    return 1;
}

static int load_layout(const struct lapse_config *cfg, lapse_redis **nodes, struct lapse_layout *l)
{
    char err[512];
    struct retry t;
    int rc;
    retry_init(&t, cfg);
    while ((rc = lapse_layout_load(nodes[0], cfg, l, err, sizeof err)) == -2 &&
           retry_again(&t, nodes[0]))
        ;
    if (rc == 1)
        fprintf(stderr, "lapse-scale: namespace \"%s\" is not initialised: run lapse-scale -c %s init N\n",
                cfg->ns, cfg->path);
    else if (rc < 0)
        fprintf(stderr, "lapse-scale: %s\n", err);
    return rc == 0 ? 0 : -1;
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
static void cluster_status(const struct lapse_config *cfg, lapse_redis *r, json_t *out,
                           int as_json)
{
    const struct lapse_cluster_map *m = lapse_redis_cluster_map(r);
    if (!m) {
        fprintf(stderr, "lapse-scale: %s\n", lapse_redis_errstr(r));
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
        redisReply *rep = first < 0 ? NULL : lapse_redis_command_slot(r, (uint16_t)first, 2, argv, lens);
        long online, lag;
        replication_of(rep, &online, &lag);
        if (rep)
            freeReplyObject(rep);
        m = lapse_redis_cluster_map(r); /* (a failed call may have read it again) */
        if (!m || p >= m->nprimaries)
            break;
        json_array_append_new(out, json_pack("{s:s, s:s, s:b, s:s, s:i, s:o, s:o}", "name",
                                             "cluster", "via", "cluster", "tls", cfg->nodes[0].tls,
                                             "primary", addr, "slots", slots, "replicas_online",
                                             online >= 0 ? json_integer(online) : json_null(),
                                             "replica_lag_s",
                                             lag >= 0 ? json_integer(lag) : json_null()));
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
                        int as_json)
{
    const struct lapse_redis_node *nc = &cfg->nodes[n];
    long online = -1, lag = -1;
    if (lapse_redis_is_cluster(r)) {
        cluster_status(cfg, r, out, as_json);
        return;
    }
    redisReply *rep = lapse_redis_command(r, "INFO replication");
    if (rep && rep->type == REDIS_REPLY_STRING) {
        online = 0;
        for (const char *p = strstr(rep->str, "\nslave"); p; p = strstr(p + 1, "\nslave")) {
            const char *eol = strchr(p + 1, '\n'), *st = strstr(p, "state=online");
            const char *lg = strstr(p, "lag=");
            if (st && (!eol || st < eol))
                online++;
            if (lg && (!eol || lg < eol) && atol(lg + 4) > lag)
                lag = atol(lg + 4);
        }
    } else if (rep) {
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
    json_array_append_new(out, json_pack("{s:s, s:s, s:b, s:s?, s:i, s:s, s:o, s:o}", "name",
                                         lapse_redis_name(r), "via",
                                         nc->master ? "sentinel" : "plain", "tls", nc->tls,
                                         "master", nc->master,
                                         "sentinels", (int)nc->nsentinels, "primary", primary,
                                         "replicas_online",
                                         online >= 0 ? json_integer(online) : json_null(),
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

/* Shard i's counters (and what a split has left to move there); read again
 * while no reply comes (struct retry). */
static int shard_read(const struct lapse_config *cfg, lapse_redis **nodes,
                      const struct lapse_layout *l, uint32_t i, struct lapse_health *st,
                      struct lapse_split_left *left, char *err, size_t size)
{
    lapse_redis *r = nodes[l->node_of[i]];
    struct retry t;
    int rc;
    retry_init(&t, cfg);
    while ((rc = lapse_health_read(r, cfg, i, st, err, size)) == -2 && retry_again(&t, r))
        ;
    return rc == 0 ? lapse_split_left(nodes, cfg, l, i, left, err, size) : -1;
}

static int cmd_status(const struct lapse_config *cfg, lapse_redis **nodes, int as_json)
{
    struct lapse_layout l;
    char err[512];
    if (load_layout(cfg, nodes, &l) < 0)
        return 1;
    json_t *shards = json_array();
    const char *state = l.splitting ? "splitting" : "stable";
    struct lapse_layout pending;
    int has_pending = lapse_layout_read(nodes[0], cfg, "layout:next", &pending, err, sizeof err) == 0;
    if (has_pending && !as_json)
        fprintf(stderr, "lapse-scale: a %s to epoch %lld was interrupted: writers and scanners "
                "are paused until you run lapse-scale %s again\n",
                pending.splitting ? "split" : "finish", (long long)pending.epoch,
                pending.splitting ? "split" : "finish");
    if (!as_json) {
        printf("namespace %s: %u shards, state %s, epoch %lld", cfg->ns, l.shards, state,
               (long long)l.epoch);
        if (l.splitting)
            printf(" (splitting %u -> %u)", l.prev_shards, l.shards);
        printf("\n");
    }
    uint64_t to_move = 0;
    int64_t last_due = -1;
    json_t *node_info = json_array();
    if (!as_json)
        printf("%-22s %-19s %-22s %8s %8s\n", "node", "reached", "primary", "replicas", "lag");
    for (size_t n = 0; n < cfg->nnodes; n++)
        node_status(cfg, n, nodes[n], node_info, as_json);
    if (!as_json)
        printf("\n%-6s %-22s %10s %10s %9s %12s %10s  %s\n", "shard", "node", "pending", "due",
               "inflight", "oldest_due", "to_move", "scanner");
    for (uint32_t i = 0; i < l.shards; i++) {
        lapse_redis *r = nodes[l.node_of[i]];
        struct lapse_health st;
        struct lapse_split_left left;
        if (shard_read(cfg, nodes, &l, i, &st, &left, err, sizeof err) < 0) {
            fprintf(stderr, "lapse-scale: shard %u: %s\n", i, err);
            json_decref(shards);
            json_decref(node_info);
            lapse_layout_free(&l);
            if (has_pending)
                lapse_layout_free(&pending);
            return 1;
        }
        to_move += left.ids;
        if (left.last_due_ms > last_due)
            last_due = left.last_due_ms;
        json_t *o = json_pack("{s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:s?}", "shard", (int)i, "node",
                              lapse_redis_name(r), "pending", (json_int_t)st.pending, "due",
                              (json_int_t)st.due, "inflight", (json_int_t)st.inflight,
                              "oldest_due_ms", (json_int_t)st.oldest_due_ms, "oldest_inflight_ms",
                              (json_int_t)st.oldest_inflight_ms, "scanner",
                              st.holder[0] ? st.holder : NULL);
        if (l.splitting && i < l.prev_shards) {
            json_object_set_new(o, "to_move", json_integer((json_int_t)left.ids));
            json_object_set_new(o, "last_to_move_due_ms",
                                left.ids ? json_integer(left.last_due_ms) : json_null());
        }
        uint16_t slot = lapse_shard_slot(cfg->ns, i);
        const char *owner = lapse_redis_is_cluster(r) ? lapse_redis_slot_owner(r, slot) : NULL;
        char where[LAPSE_NODE_NAME_MAX + 16];
        snprintf(where, sizeof where, "%s", lapse_redis_name(r));
        if (lapse_redis_is_cluster(r)) {
            json_object_set_new(o, "slot", json_integer(slot));
            json_object_set_new(o, "primary", owner ? json_string(owner) : json_null());
            snprintf(where, sizeof where, "%u@%s", slot, owner ? owner : "-");
        }
        json_array_append_new(shards, o);
        if (!as_json) {
            char oldest[32] = "-", move[32] = "-";
            if (st.oldest_due_ms >= 0)
                snprintf(oldest, sizeof oldest, "%lld ms", (long long)st.oldest_due_ms);
            if (l.splitting && i < l.prev_shards)
                snprintf(move, sizeof move, "%llu", (unsigned long long)left.ids);
            printf("%-6u %-22s %10lld %10lld %9lld %12s %10s  %s\n", i, where,
                   st.pending, st.due, st.inflight, oldest, move, st.holder[0] ? st.holder : "-");
        }
    }
    if (as_json) {
        json_t *o = json_pack("{s:s, s:i, s:i, s:s, s:I, s:o, s:o}", "ns", cfg->ns, "shards",
                              (int)l.shards, "prev_shards", (int)l.prev_shards, "state", state,
                              "epoch", (json_int_t)l.epoch, "shard_info", shards, "nodes",
                              node_info);
        if (has_pending)
            json_object_set_new(o, "interrupted",
                                json_pack("{s:s, s:I}", "command",
                                          pending.splitting ? "split" : "finish", "epoch",
                                          (json_int_t)pending.epoch));
        if (l.splitting) {
            json_object_set_new(o, "to_move", json_integer((json_int_t)to_move));
            json_object_set_new(o, "last_to_move_due_ms",
                                to_move ? json_integer(last_due) : json_null());
        }
        char *s = json_dumps(o, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        json_decref(shards);
        json_decref(node_info);
        if (l.splitting)
            printf("split: %llu IDs left to move out of old shards%s\n",
                   (unsigned long long)to_move,
                   to_move ? "; finish refuses until they fell due or were drained" : "");
    }
    lapse_layout_free(&l);
    if (has_pending)
        lapse_layout_free(&pending);
    return 0;
}

static int cmd_init(const struct lapse_config *cfg, lapse_redis *home, const char *arg)
{
    char *end;
    long n = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || !lapse_shards_valid(n)) {
        fprintf(stderr, "lapse-scale: init: \"%s\" is not a power of two between 1 and %d\n", arg,
                LAPSE_MAX_SHARDS);
        return 2;
    }
    char err[512];
    int rc = lapse_layout_init(home, cfg, (uint32_t)n, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "lapse-scale: init: %s\n", err);
        return 1;
    }
    printf("namespace %s: %s with %ld shards\n", cfg->ns, rc == 0 ? "initialised" : "already initialised", n);
    return 0;
}

/* "NAME,NAME" (node names: host:port, or a Sentinel master name) ->
 * indices into cfg->nodes. */
static int parse_nodes(const struct lapse_config *cfg, const char *list, uint16_t *to, size_t *nto)
{
    *nto = 0;
    for (const char *s = list; *s;) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        size_t i = 0;
        for (; i < cfg->nnodes; i++) {
            char name[LAPSE_NODE_NAME_MAX];
            lapse_node_name(&cfg->nodes[i], name, sizeof name);
            if (strlen(name) == len && memcmp(name, s, len) == 0)
                break;
        }
        if (i == cfg->nnodes || *nto == LAPSE_MAX_SHARDS) {
            fprintf(stderr, "lapse-scale: split --to: %.*s is not a node of %s (redis.nodes)\n",
                    (int)len, s, cfg->path);
            return -1;
        }
        to[(*nto)++] = (uint16_t)i;
        s = end ? end + 1 : s + len;
    }
    return *nto ? 0 : -1;
}

static int cmd_split(const struct lapse_config *cfg, lapse_redis **nodes, const char *to_list,
                     const char *start_cmd)
{
    static uint16_t to[LAPSE_MAX_SHARDS];
    size_t nto = 0;
    if (to_list && cfg->cluster) {
        fprintf(stderr, "lapse-scale: split --to: on a Redis Cluster the cluster places the new "
                "shards (their slots); move load with redis-cli --cluster reshard\n");
        return 2;
    }
    if (to_list && parse_nodes(cfg, to_list, to, &nto) < 0)
        return 2;
    struct lapse_layout l;
    char err[512];
    if (lapse_split_start(nodes, cfg, to, nto, &l, err, sizeof err) < 0) {
        fprintf(stderr, "lapse-scale: split: %s\n", err);
        return 1;
    }
    printf("namespace %s: splitting %u -> %u shards (epoch %lld); start the new shards' scanners:\n",
           cfg->ns, l.prev_shards, l.shards, (long long)l.epoch);
    int rc = 0;
    for (uint32_t j = l.prev_shards; j < l.shards; j++) {
        char cmd[1024];
        if (start_cmd) {
            const char *pct = strstr(start_cmd, "%d");
            if (!pct) {
                snprintf(cmd, sizeof cmd, "%s %u", start_cmd, j);
            } else {
                snprintf(cmd, sizeof cmd, "%.*s%u%s", (int)(pct - start_cmd), start_cmd, j, pct + 2);
            }
            printf("  %s\n", cmd);
            fflush(stdout);
            int st = system(cmd);
            if (st != 0) {
                fprintf(stderr, "lapse-scale: split: \"%s\" failed (status %d)\n", cmd, st);
                rc = 1;
            }
        } else {
            const lapse_redis *r = nodes[l.node_of[j]];
            printf("  lapse-scanner -c %s --shard %u   # on a host that reaches %s%s\n", cfg->path,
                   j, lapse_redis_is_sentinel(r) ? "the primary of " : "", lapse_redis_name(r));
        }
    }
    lapse_layout_free(&l);
    return rc;
}

static int cmd_finish(const struct lapse_config *cfg, lapse_redis **nodes, int drain, int rate)
{
    char err[512];
    if (drain) {
        struct lapse_layout l;
        if (load_layout(cfg, nodes, &l) < 0)
            return 1;
        uint64_t moved;
        int rc = lapse_split_drain(nodes, cfg, &l, rate, 600000, &moved, err, sizeof err);
        lapse_layout_free(&l);
        if (rc < 0) {
            fprintf(stderr, "lapse-scale: finish --drain: %s\n", err);
            return 1;
        }
        printf("namespace %s: drained %llu IDs into their new shards\n", cfg->ns,
               (unsigned long long)moved);
    }
    uint64_t left;
    struct lapse_layout l;
    if (lapse_split_finish(nodes, cfg, &left, &l, err, sizeof err) < 0) {
        fprintf(stderr, "lapse-scale: finish: %s\n", err);
        return 1;
    }
    printf("namespace %s: split finished: %u shards, stable, epoch %lld\n", cfg->ns, l.shards,
           (long long)l.epoch);
    lapse_layout_free(&l);
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *to = NULL, *start_cmd = NULL;
    int as_json = 0, drain = 0, rate = 5000, watch = 0, interval_ms = 2000, count = 0;
    int64_t max_overdue_ms = 60000;
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"to", required_argument, NULL, 't'},
        {"start-cmd", required_argument, NULL, 's'},
        {"drain", no_argument, NULL, 'd'},
        {"rate", required_argument, NULL, 'r'},
        {"watch", no_argument, NULL, 'w'},
        {"interval", required_argument, NULL, 'i'},
        {"count", required_argument, NULL, 'n'},
        {"max-overdue", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': path = optarg; break;
        case 'j': as_json = 1; break;
        case 't': to = optarg; break;
        case 's': start_cmd = optarg; break;
        case 'd': drain = 1; break;
        case 'r':
            rate = atoi(optarg);
            if (rate < 1) {
                fprintf(stderr, "lapse-scale: --rate: \"%s\" is not a positive number\n", optarg);
                return 2;
            }
            break;
        case 'w': watch = 1; break;
        case 'i':
        case 'm': {
            char *end;
            double sec = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(sec >= (ch == 'i' ? 0.1 : 0)) || sec > 86400) {
                fprintf(stderr, "lapse-scale: --%s: \"%s\" is not a number of seconds (%s..86400)\n",
                        ch == 'i' ? "interval" : "max-overdue", optarg, ch == 'i' ? "0.1" : "0");
                return 2;
            }
            if (ch == 'i')
                interval_ms = (int)(sec * 1000);
            else
                max_overdue_ms = (int64_t)(sec * 1000);
            break;
        }
        case 'n':
            count = atoi(optarg);
            if (count < 1) {
                fprintf(stderr, "lapse-scale: --count: \"%s\" is not a positive number\n", optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!path || optind >= argc) {
        fprintf(stderr, "lapse-scale: %s\n", path ? "a command is required" : "-c FILE is required");
        return 2;
    }
    const char *cmd = argv[optind];
    int nargs = argc - optind - 1;
    int known = ((strcmp(cmd, "init") == 0 || strcmp(cmd, "get") == 0) && nargs == 1) ||
                ((strcmp(cmd, "status") == 0 || strcmp(cmd, "split") == 0 ||
                  strcmp(cmd, "finish") == 0 || strcmp(cmd, "check") == 0) && nargs == 0);
    if (!known) {
        fprintf(stderr, "lapse-scale: unknown command or wrong arguments: %s\n", cmd);
        usage(stderr);
        return 2;
    }
    char err[512];
    if (strcmp(cmd, "get") == 0 &&
        lapse_inspect_id_check(argv[optind + 1], strlen(argv[optind + 1]), err, sizeof err) < 0) {
        fprintf(stderr, "lapse-scale: get: %s\n", err);
        return 2;
    }
    if (watch && (strcmp(cmd, "status") != 0 || as_json)) {
        fprintf(stderr, "lapse-scale: --watch goes with status, without --json\n");
        return 2;
    }
    struct lapse_config cfg;
    if (lapse_config_load(&cfg, path, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    lapse_redis **nodes = calloc(cfg.nnodes, sizeof *nodes);
    int rc = 1;
    for (size_t i = 0; nodes && i < cfg.nnodes; i++)
        nodes[i] = lapse_redis_new(&cfg, i);
    if (!nodes || !nodes[cfg.nnodes - 1])
        fprintf(stderr, "lapse-scale: out of memory\n");
    else if (lapse_redis_ensure(nodes[0]) < 0 && !(strcmp(cmd, "status") == 0 && watch) &&
             strcmp(cmd, "check") != 0)
        /* (check reports it with its own status; a watch says so in each
         * refresh and goes on until the node answers) */
        fprintf(stderr, "lapse-scale: %s\n", lapse_redis_errstr(nodes[0]));
    else if (strcmp(cmd, "get") == 0)
        rc = lapse_scale_get(&cfg, nodes, argv[optind + 1], as_json);
    else if (strcmp(cmd, "check") == 0)
        rc = lapse_scale_check(&cfg, nodes, max_overdue_ms, as_json);
    else if (strcmp(cmd, "status") == 0 && watch)
        rc = lapse_scale_watch(&cfg, nodes, interval_ms, count);
    else if (strcmp(cmd, "init") == 0)
        rc = cmd_init(&cfg, nodes[0], argv[optind + 1]);
    else if (strcmp(cmd, "status") == 0)
        rc = cmd_status(&cfg, nodes, as_json);
    else if (strcmp(cmd, "split") == 0)
        rc = cmd_split(&cfg, nodes, to, start_cmd);
    else
        rc = cmd_finish(&cfg, nodes, drain, rate);
    for (size_t i = 0; nodes && i < cfg.nnodes; i++)
        lapse_redis_free(nodes[i]);
    free(nodes);
    lapse_config_free(&cfg);
    return rc;
}
