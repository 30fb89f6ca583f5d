/*
 * lapse-scale: the operators' tool for the shard layout (scripts/lapse-scale
 * runs it).
 *
 *   init N          create the layout with N shards (a power of two); doing it
 *                   again with the same N is a no-op, with another N an error
 *   status [--json] the layout and, per shard, its node, pending IDs, IDs due
 *                   now, IDs in flight and the oldest overdue deadline
 *   split, finish   doubling the shard count online: not in this version
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hash.h"
#include "layout.h"
#include "redis.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: lapse-scale -c FILE init N | status [--json] | split | finish\n"
                 "  init N           create the namespace's layout with N shards (a power of two)\n"
                 "  status [--json]  show the layout and every shard's backlog\n"
                 "  split            double the shard count online (not available yet)\n"
                 "  finish           end a split (not available yet)\n");
}

struct shard_stat {
    long long pending, due, inflight, oldest_due_ms; /* oldest_due_ms -1: none */
    char holder[128];                                /* the active scanner's token, "" if none */
};

/* Reads one shard's counters with one pipelined round trip. */
static int shard_stat(lapse_redis *r, const char *ns, uint32_t shard, struct shard_stat *st)
{
    char z[LAPSE_NS_MAX + 16], f[LAPSE_NS_MAX + 16], l[LAPSE_NS_MAX + 16];
    lapse_key_shard(z, sizeof z, ns, LAPSE_KEY_DUE, shard);
    lapse_key_shard(f, sizeof f, ns, LAPSE_KEY_INFLIGHT, shard);
    lapse_key_shard(l, sizeof l, ns, LAPSE_KEY_LOCK, shard);
    /* One Lua call so "now" is the shard's clock and all counts agree. */
    static const char lua[] =
        "local t = redis.call('TIME')\n"
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
        "local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')\n"
        "local oldest = -1\n"
        "if first[2] and tonumber(first[2]) <= now then oldest = math.floor(tonumber(first[2])) end\n"
        "return { redis.call('ZCARD', KEYS[1]), redis.call('ZCOUNT', KEYS[1], '-inf', now),\n"
        "         redis.call('HLEN', KEYS[2]), oldest, now, redis.call('GET', KEYS[3]) or '' }\n";
    redisReply *rep = lapse_redis_command(r, "EVAL %s 3 %s %s %s", lua, z, f, l);
    if (!rep)
        return -1;
    int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 6;
    if (ok) {
        st->pending = rep->element[0]->integer;
        st->due = rep->element[1]->integer;
        st->inflight = rep->element[2]->integer;
        st->oldest_due_ms = rep->element[3]->integer >= 0
                                ? rep->element[4]->integer - rep->element[3]->integer
                                : -1;
        snprintf(st->holder, sizeof st->holder, "%s",
                 rep->element[5]->type == REDIS_REPLY_STRING ? rep->element[5]->str : "");
    }
    freeReplyObject(rep);
    return ok ? 0 : -1;
}

static int cmd_status(const struct lapse_config *cfg, lapse_redis **nodes, int as_json)
{
    struct lapse_layout l;
    char err[512];
    int rc = lapse_layout_load(nodes[0], cfg, &l, err, sizeof err);
    if (rc == 1) {
        fprintf(stderr, "lapse-scale: namespace \"%s\" is not initialised: run lapse-scale -c %s init N\n",
                cfg->ns, cfg->path);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "lapse-scale: %s\n", err);
        return 1;
    }
    json_t *shards = json_array();
    if (!as_json)
        printf("namespace %s: %u shards, state %s, epoch %lld\n"
               "%-6s %-22s %10s %10s %9s %12s  %s\n",
               cfg->ns, l.shards, l.splitting ? "splitting" : "stable", (long long)l.epoch,
               "shard", "node", "pending", "due", "inflight", "oldest_due", "scanner");
    for (uint32_t i = 0; i < l.shards; i++) {
        lapse_redis *r = nodes[l.node_of[i]];
        struct shard_stat st;
        if (shard_stat(r, cfg->ns, i, &st) < 0) {
            fprintf(stderr, "lapse-scale: shard %u: %s\n", i, lapse_redis_errstr(r));
            json_decref(shards);
            lapse_layout_free(&l);
            return 1;
        }
        if (as_json)
            json_array_append_new(
                shards, json_pack("{s:i, s:s, s:I, s:I, s:I, s:I, s:s?}", "shard", (int)i, "node",
                                  lapse_redis_name(r), "pending", (json_int_t)st.pending, "due",
                                  (json_int_t)st.due, "inflight", (json_int_t)st.inflight,
                                  "oldest_due_ms", (json_int_t)st.oldest_due_ms, "scanner",
                                  st.holder[0] ? st.holder : NULL));
        else {
            char oldest[32] = "-";
            if (st.oldest_due_ms >= 0)
                snprintf(oldest, sizeof oldest, "%lld ms", st.oldest_due_ms);
            printf("%-6u %-22s %10lld %10lld %9lld %12s  %s\n", i, lapse_redis_name(r), st.pending,
                   st.due, st.inflight, oldest, st.holder[0] ? st.holder : "-");
        }
    }
    if (as_json) {
        json_t *o = json_pack("{s:s, s:i, s:i, s:s, s:I, s:o}", "ns", cfg->ns, "shards",
                              (int)l.shards, "prev_shards", (int)l.prev_shards, "state",
                              l.splitting ? "splitting" : "stable", "epoch",
                              (json_int_t)l.epoch, "shard_info", shards);
        char *s = json_dumps(o, JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        json_decref(o);
    } else
        json_decref(shards);
    lapse_layout_free(&l);
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

int main(int argc, char **argv)
{
    const char *path = NULL;
    int as_json = 0;
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        if (ch == 'c')
            path = optarg;
        else if (ch == 'j')
            as_json = 1;
        else if (ch == 'h') {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!path || optind >= argc) {
        fprintf(stderr, "lapse-scale: %s\n", path ? "a command is required" : "-c FILE is required");
        return 2;
    }
    const char *cmd = argv[optind];
    int nargs = argc - optind - 1;
    int known = (strcmp(cmd, "init") == 0 && nargs == 1) ||
                (strcmp(cmd, "status") == 0 && nargs == 0) ||
                ((strcmp(cmd, "split") == 0 || strcmp(cmd, "finish") == 0));
    if (!known) {
        fprintf(stderr, "lapse-scale: unknown command or wrong arguments: %s\n", cmd);
        usage(stderr);
        return 2;
    }
    struct lapse_config cfg;
    char err[512];
    if (lapse_config_load(&cfg, path, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (strcmp(cmd, "split") == 0 || strcmp(cmd, "finish") == 0) {
        fprintf(stderr, "lapse-scale: %s: online splitting is not available in this version\n", cmd);
        lapse_config_free(&cfg);
        return 2;
    }
    lapse_redis **nodes = calloc(cfg.nnodes, sizeof *nodes);
    int rc = 1;
    for (size_t i = 0; nodes && i < cfg.nnodes; i++)
        nodes[i] = lapse_redis_new(&cfg.nodes[i], cfg.redis_connect_timeout_ms,
                                   cfg.redis_command_timeout_ms);
    if (!nodes || !nodes[0])
        fprintf(stderr, "lapse-scale: out of memory\n");
    else if (lapse_redis_ensure(nodes[0]) < 0)
        fprintf(stderr, "lapse-scale: %s\n", lapse_redis_errstr(nodes[0]));
    else if (strcmp(cmd, "init") == 0)
        rc = cmd_init(&cfg, nodes[0], argv[optind + 1]);
    else
        rc = cmd_status(&cfg, nodes, as_json);
    for (size_t i = 0; nodes && i < cfg.nnodes; i++)
        lapse_redis_free(nodes[i]);
    free(nodes);
    lapse_config_free(&cfg);
    return rc;
}
