/* resize — see resize.h. */
#include "resize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "layout.h"
#include "merge.h"
#include "scanners.h"
#include "split.h"
#include "status.h"

/* After init N refused on a namespace that has another shard count: says
 * on stderr what gets N shards (a split doubles them, a merge halves
 * them). Nothing when the layout cannot be read. */
static void init_hint(const struct lapse_config *cfg, lapse_redis **nodes, uint32_t n)
{
    struct lapse_layout l;
    char err[512];
    if (lapse_layout_load(nodes[0], cfg, &l, err, sizeof err) != 0)
        return;
    uint32_t have = l.shards;
    int changing = lapse_layout_changing(&l);
    const char *state = lapse_layout_state_name(l.state);
    lapse_layout_free(&l);
    if (changing) {
        fprintf(stderr,
                "lapse-scale: init: namespace is %s to %u shards: end it with lapse-scale -c "
                "%s finish [--drain]%s\n",
                state, have, cfg->path, n != have ? ", then change the count again" : "");
        return;
    }
    const char *cmd = n > have ? "split" : "merge";
    int times = 0;
    char chain[128];
    size_t at = (size_t)snprintf(chain, sizeof chain, "%u", have);
    for (uint32_t s = have; s != n && at < sizeof chain; times++) {
        s = n > have ? s * 2 : s / 2;
        at += (size_t)snprintf(chain + at, sizeof chain - at, " -> %u", s);
    }
    char count[24];
    snprintf(count, sizeof count, "%d times", times);
    fprintf(stderr,
            "lapse-scale: init: to go from %u to %u shards, %s %s (%s): %slapse-scale -c %s %s, "
            "%s, then lapse-scale -c %s finish [--drain]\n",
            have, n, cmd,
            times == 1   ? "once"
            : times == 2 ? "twice"
                         : count,
            chain, times == 1 ? "" : "each time ", cfg->path, cmd,
            n > have ? "start the new shards' scanners"
                     : "keep the retiring shards' scanners running",
            cfg->path);
}

/* form: 0 (default) and -1 (--one-zset) a new namespace in one zset a
 * shard, an existing one as it is; 1 (--small-keys) a new namespace in
 * small keys, and an existing one in one zset a shard converted. */
/* A first init places shard i on node i % nnodes: each node that is to
 * hold shards must answer now, and accept us (no evicting maxmemory-policy,
 * the password right), or the namespace would start with shards nobody
 * can write (its producers waiting or refused, its scanners not starting).
 * 0, or with the reason on stderr (nothing written) 1, or 78 when a node
 * refused us (as every program's status for a refusal). */
static int init_nodes_answer(const struct lapse_config *cfg, lapse_redis **nodes, uint32_t n)
{
    int bad = 0;
    for (size_t k = 0; k < cfg->nnodes && k < n; k++) {
        if (lapse_redis_ensure(nodes[k]) == 0)
            continue;
        char shards[128] = "";
        size_t len = 0;
        for (uint32_t i = (uint32_t)k; i < n && len < sizeof shards - 16;
             i += (uint32_t)cfg->nnodes)
            len += (size_t)snprintf(shards + len, sizeof shards - len, "%s%u", len ? ", " : "", i);
        int refused = lapse_redis_refused(nodes[k]);
        fprintf(stderr,
                "lapse-scale: init: node %s (%s), which would hold shard%s %s%s, %s: %s; %s; "
                "nothing was written\n",
                lapse_redis_name(nodes[k]), cfg->nodes[k].where ? cfg->nodes[k].where : "?",
                n > cfg->nnodes + k ? "s" : "", shards, len >= sizeof shards - 16 ? ", ..." : "",
                refused ? "refuses us" : "does not answer", lapse_redis_errstr(nodes[k]),
                refused ? "fix that first" : "start it, or leave it out of redis.nodes");
        if (refused)
            bad = 78;
        else if (!bad)
            bad = 1;
    }
    return bad;
}

int scale_init(const struct lapse_config *cfg, lapse_redis **nodes, const char *arg, int form)
{
    char *end;
    long n = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || !lapse_shards_valid(n)) {
        fprintf(stderr, "lapse-scale: init: \"%s\" is not a power of two between 1 and %d\n", arg,
                LAPSE_MAX_SHARDS);
        return 2;
    }
    char err[512];
    struct lapse_layout cur = {0};
    int had = lapse_layout_load(nodes[0], cfg, &cur, err, sizeof err);
    lapse_layout_free(&cur);
    int bad = had == 1 ? init_nodes_answer(cfg, nodes, (uint32_t)n) : 0; /* (a first init) */
    if (bad)
        return bad;
    int rc =
        lapse_layout_init(nodes[0], cfg, (uint32_t)n,
                          form > 0 ? LAPSE_INIT_CONVERT : LAPSE_INIT_ONE_ZSET, err, sizeof err);
    struct lapse_layout l = {0};
    int small = rc >= 0 && form > 0;
    if (small && lapse_layout_load(nodes[0], cfg, &l, err, sizeof err) == 0) {
        if (lapse_layout_small_keys(nodes, cfg, &l, 0, err, sizeof err) < 0) {
            rc = -1;
        }
    }
    lapse_layout_free(&l);
    if (rc < 0) {
        fprintf(stderr, "lapse-scale: init: %s\n", err);
        init_hint(cfg, nodes, (uint32_t)n);
        return 1;
    }
    printf("namespace %s: %s with %ld shards%s\n", cfg->ns,
           rc == 0 ? "initialised" : "already initialised", n,
           !small    ? rc == 0 ? " in one zset a shard" : ""
           : rc == 0 ? " in small keys"
                     : "; its shards are in small keys now (IDs held in one zset move "
                       "into buckets while the programs run)");
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

/* --start-cmd's command for new shard j: every %d in CMD replaced by j, or
 * j appended when CMD has none. Cut short (still a string) past `size`. */
static void start_cmd_for(char *out, size_t size, const char *cmd, uint32_t j)
{
    size_t n = 0;
    int replaced = 0;
    for (const char *p = cmd; *p && n + 1 < size; p++) {
        if (p[0] == '%' && p[1] == 'd') {
            int w = snprintf(out + n, size - n, "%u", j);
            n = w < 0 || (size_t)w >= size - n ? size - 1 : n + (size_t)w;
            replaced = 1;
            p++;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    if (!replaced)
        snprintf(out + n, size - n, " %u", j);
}

/* Runs cmd (its %d the shard) for shards [from, to), printing each; what
 * the command is for (`what`) names a failure. 0, or 1 if one failed. */
static int run_per_shard(const char *what, const char *cmd, uint32_t from, uint32_t to)
{
    int rc = 0;
    for (uint32_t j = from; j < to; j++) {
        char line[1024];
        start_cmd_for(line, sizeof line, cmd, j);
        printf("  %s\n", line);
        fflush(stdout);
        int st = system(line);
        if (st != 0) {
            fprintf(stderr, "lapse-scale: %s: \"%s\" failed (status %d)\n", what, line, st);
            rc = 1;
        }
    }
    return rc;
}

int scale_split(const struct lapse_config *cfg, lapse_redis **nodes, const char *to_list,
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
    printf(
        "namespace %s: splitting %u -> %u shards (epoch %lld); start the new shards' scanners:\n",
        cfg->ns, l.prev_shards, l.shards, (long long)l.epoch);
    int rc = 0;
    if (start_cmd)
        rc = run_per_shard("split", start_cmd, l.prev_shards, l.shards);
    for (uint32_t j = l.prev_shards; !start_cmd && j < l.shards; j++) {
        char cmd[1024];
        printf("  %s\n", lapse_scale_start_line(cfg, nodes, &l, j, cmd, sizeof cmd));
    }
    lapse_layout_free(&l);
    return rc;
}

/* merge [--stop-cmd]: the retiring shards' scanners keep serving them until
 * finish (they fire what is left there), so the command is what keeps a
 * service manager from starting them again once they exit by themselves
 * (systemctl disable, without --now), run at once. */
int scale_merge(const struct lapse_config *cfg, lapse_redis **nodes, const char *stop_cmd)
{
    struct lapse_layout l;
    char err[512];
    if (lapse_merge_start(nodes, cfg, &l, err, sizeof err) < 0) {
        fprintf(stderr, "lapse-scale: merge: %s\n", err);
        return 1;
    }
    printf("namespace %s: merging %u -> %u shards (epoch %lld): shards %u-%u retire into shards "
           "0-%u;\nkeep their scanners running: they fire what is left in them and exit 0 by "
           "themselves once lapse-scale finish retired their shards\n",
           cfg->ns, l.prev_shards, l.shards, (long long)l.epoch, l.shards, l.prev_shards - 1,
           l.shards - 1);
    int rc = 0;
    if (stop_cmd) {
        printf("what keeps their service manager from starting them again:\n");
        rc = run_per_shard("merge", stop_cmd, l.shards, l.prev_shards);
    } else {
        printf("under systemd, so that they are not started again: systemctl disable "
               "lapse-scanner@%s-N for N in %u-%u (not --now)\n",
               cfg->ns, l.shards, l.prev_shards - 1);
    }
    lapse_layout_free(&l);
    return rc;
}

/* finish [--drain]: on a stable namespace there is nothing to finish,
 * which is said and is not an error (run again, as init N is). Once the
 * split is finished, every shard without an active scanner is named on
 * stderr with what starts it (scanners.h); the exit status stays 0, since
 * the split did finish: check is the health verdict. */
int scale_finish(const struct lapse_config *cfg, lapse_redis **nodes, int drain, int rate)
{
    char err[512];
    struct lapse_layout l;
    if (lapse_scale_layout(cfg, nodes, &l) < 0)
        return 1;
    if (drain && lapse_layout_changing(&l)) {
        uint64_t moved;
        int rc = lapse_split_drain(nodes, cfg, &l, rate, 600000, &moved, err, sizeof err);
        if (rc < 0) {
            lapse_layout_free(&l);
            fprintf(stderr, "lapse-scale: finish --drain: %s\n", err);
            return 1;
        }
        printf("namespace %s: drained %llu IDs into their new shards\n", cfg->ns,
               (unsigned long long)moved);
        fflush(stdout);
    }
    enum lapse_layout_state was = l.state;
    uint32_t was_span = lapse_layout_span(&l);
    lapse_layout_free(&l);
    uint64_t left;
    int rc = lapse_split_finish(nodes, cfg, &left, &l, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "lapse-scale: finish: %s\n", err);
        return 1;
    }
    if (rc == 1)
        printf("namespace %s: no split or merge to finish: %u shards, stable, epoch %lld "
               "(nothing changed)\n",
               cfg->ns, l.shards, (long long)l.epoch);
    else if (was == LAPSE_LAYOUT_MERGING)
        printf("namespace %s: merge finished: %u shards, stable, epoch %lld; the scanners of "
               "shards %u-%u stop by themselves\n",
               cfg->ns, l.shards, (long long)l.epoch, l.shards, was_span - 1);
    else
        printf("namespace %s: split finished: %u shards, stable, epoch %lld\n", cfg->ns, l.shards,
               (long long)l.epoch);
    fflush(stdout); /* (before the warning on stderr, in a terminal's order) */
    if (rc == 0)
        lapse_scale_warn_unserved(cfg, nodes, &l, "finish");
    lapse_layout_free(&l);
    return 0;
}
