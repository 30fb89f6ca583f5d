/*
 * lapse-scale: the operators' tool for the shard layout (scripts/lapse-scale
 * runs it). The work is in common/layout.c and tools/scale/split.c; this file
 * parses the command line (scale_args_parse) and runs the command from its
 * row of scale_cmds: a new command is a row and a run_ function. The
 * commands that change the layout (init, split, finish) are resize.c.
 *
 *   init N            create the layout with N shards (a power of two); again
 *                     with the same N is a no-op, with another N an error
 *                     (that says how many splits get there)
 *   status [--json]   the layout, per node how it is reached, its primary and
 *                     replicas, and per shard: node, pending, due, in
 *                     flight, overdue, the active scanner; during a
 *                     split also the IDs left to move per old shard
 *                     (tools/scale/status.c)
 *   status --watch [--interval S] [--count N]
 *                     the shards' counters refreshed (tools/scale/watch.c)
 *   status --due [--json]
 *                     per shard and in total, how many pending deadlines
 *                     fall due when (tools/scale/due.c)
 *   get ID [--json]   where an ID lives and what is held for it
 *                     (tools/scale/get.c, tools/scale/inspect.c)
 *   offline [--json] [--limit N] [--prefix P]
 *                     the IDs offline now (recovery on, timed out, not
 *                     back), since when, longest first (tools/scale/offline.c)
 *   check [--max-overdue S] [--max-memory PCT] [--json]
 *                     exit 0 when every shard has an active scanner,
 *                     nothing is overdue, and no primary evicts or is past
 *                     PCT % of its maxmemory (tools/scale/check.c)
 *   split [--to NODES] [--start-cmd CMD]
 *                     double the shards online; new shards on NODES
 *                     (host:port,...) or beside their old twins; prints, or
 *                     runs once per new shard, what starts their scanners
 *   merge [--stop-cmd CMD]
 *                     halve the shards online (merge.h); prints, or runs
 *                     once per retiring shard, what lets its scanner go
 *   finish [--drain] [--rate N]
 *                     end the split (merge) once no old (retiring) shard
 *                     holds a moving ID;
 *                     --drain first moves them, N a second (default 5000);
 *                     then names the shards no scanner serves
 *                     (tools/scale/scanners.c); no split: a no-op
 *   autoscale [--dry-run]
 *                     the scaler: splits and merges by the rules of the
 *                     config's scale group, logging each decision with its
 *                     figures (tools/scale/autoscale.h, autoscale_run.c);
 *                     --dry-run says what it would do and changes nothing
 *   plan --ids N [--signals R] [--fires F] [--small-keys] [--payload B] ...
 *                     shards, nodes, cores and memory for a load, from
 *                     per-operation costs: the defaults, --costs FILE, or
 *                     --calibrate on the first node (tools/scale/plan.c,
 *                     plan_calibrate.c)
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "clock.h"
#include "config.h"
#include "hash.h"
#include "inspect.h"
#include "layout.h"
#include "redis.h"
#include "split.h"
#include "check.h"
#include "due.h"
#include "get.h"
#include "memory.h"
#include "offline.h"
#include "scanners.h"
#include "status.h"
#include "waiting.h"
#include "watch.h"
#include "resize.h"
#include "autoscale_run.h"
#include "plan.h"
#include "plan_calibrate.h"

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: lapse-scale -c FILE COMMAND\n"
        "  init N [--small-keys|--one-zset]\n"
        "                                 create the layout with N shards (a power of two), one\n"
        "                                 sorted set a shard; --small-keys: each shard many small\n"
        "                                 keys (docs/operating.md), and on a namespace in one zset a shard\n"
        "                                 it converts it, online; again with the same N a no-op,\n"
        "                                 with another N an error saying how many splits get there\n"
        "  status [--json]                the layout; per shard pending, due, overdue, scanner\n"
        "                                 (none: no active scanner); during a split the IDs left\n"
        "                                 to move and when the last of them falls due\n"
        "  status --watch [--interval S] [--count N]\n"
        "                                 the same, refreshed every S seconds (default 2): on a\n"
        "                                 terminal redrawn, else one block per refresh; during a\n"
        "                                 split the IDs left in old shards, their rate and when\n"
        "                                 it ends; stops after N refreshes, or on Ctrl-C/SIGTERM\n"
        "  status --due [--json]          per shard and in total, the pending deadlines by when\n"
        "                                 they fall due (overdue, <1m, 1m..10m, 10m..1h, 1h..1d,\n"
        "                                 >1d from now), those in flight, and the next deadline to\n"
        "                                 come, on each shard's clock\n"
        "  get ID [--json]                where ID lives (shard, node), its pending deadline,\n"
        "                                 in flight (lease, deadline dispatched), payload,\n"
        "                                 repeat, and during a split its twin; reads only\n"
        "                                 (an ID starting with '-': get -- ID)\n"
        "  offline [--json] [--limit N] [--prefix P]\n"
        "                                 the IDs offline now: written with recovery on (watch),\n"
        "                                 timed out and not written since; a header, then a line\n"
        "                                 each (id, shard, deadline, offline since, offline for),\n"
        "                                 the longest offline first (--limit: the N longest), or\n"
        "                                 a line saying none is (exit 0); scripts read --json\n"
        "  check [--max-overdue S] [--max-memory PCT] [--json]\n"
        "                                 exit 0 when every shard has an active scanner and no\n"
        "                                 due ID is more than S seconds (default 60) overdue;\n"
        "                                 else one line per problem on stdout\n"
        "                                 (also: a primary whose maxmemory-policy evicts, or\n"
        "                                 whose used memory passed PCT %% (default 90) of its\n"
        "                                 maxmemory)\n"
        "  split [--to HOST:PORT,...] [--start-cmd 'CMD %%d']\n"
        "                                 double the shards online; new shards on the given\n"
        "                                 nodes (listed in the config) or beside their twins;\n"
        "                                 prints, or runs per new shard, what starts their scanners\n"
        "  merge [--stop-cmd 'CMD %%d']     halve the shards online: shard i + N/2 folds into shard\n"
        "                                 i; the retiring shards' scanners fire what is left in\n"
        "                                 them and exit 0 by themselves once finish retired them;\n"
        "                                 prints, or runs per retiring shard, what keeps a service\n"
        "                                 manager from starting them again\n"
        "  finish [--drain] [--rate N]    end the split (merge) once no old (retiring) shard holds\n"
        "                                 an ID of another; --drain moves those first, N a second\n"
        "                                 (5000); then names on stderr the shards with no active\n"
        "                                 scanner and what starts them (exit 0 all the same: check\n"
        "                                 fails on them); with no change under way says so, exit 0\n"
        "  autoscale [--dry-run]          the scaler, until SIGTERM: every scale.interval_ms reads\n"
        "                                 each shard's figures and splits or merges by the rules of\n"
        "                                 the config's scale group (docs/operating.md, \"The\n"
        "                                 scaler\"), logging each decision with its figures;\n"
        "                                 --dry-run prints what it would do and why, changes nothing\n"
        "  plan --ids N [--signals S] [--resets R] [--fires F] [--new W] [--small-keys]\n"
        "       [--payload BYTES] [--id-bytes B] [--shards N] [--nodes N] [--node-memory BYTES]\n"
        "       [--calibrate | --costs FILE] [--json]\n"
        "                                 shards, Redis nodes, cores and memory for N IDs pending,\n"
        "                                 S signals/s (extends), R resets/s (touches of pending\n"
        "                                 IDs), F fires/s, W new IDs/s (default F); numbers take\n"
        "                                 k, M, G, T; Redis costs per op\n"
        "                                 from docs/benchmarks.md, a saved --calibrate --json\n"
        "                                 (--costs), or --calibrate: measured now on the first\n"
        "                                 node in a scratch namespace (a few seconds)\n"
        "exit status: 0 success; 1 failure (check: a problem was found), Redis unreachable\n"
        "for redis.retry_timeout_ms; 2 usage or config error, a bad ID; 3 (check) Redis\n"
        "unreachable; 78 Redis refused us (password, user, ACL, TLS)\n");
}

/* lapse_redis_ensure_within's on_wait: says once that it waits, and why. */
static void say_waiting(void *ctx, const char *why, int wait_ms)
{
    char line[768];
    (void)wait_ms;
    if (lapse_waiting_line(ctx, why, lapse_clock_mono_ms(), line, sizeof line))
        fprintf(stderr, "lapse-scale: %s\n", line);
}

/* Connects to the first node as every program starts: an unreachable one
 * is waited for up to redis.retry_timeout_ms (a failover under way), a
 * refusal stops at once. Except check, which reports the state now (status
 * 3 when unreachable), and a watch, which says so in each refresh and goes
 * on until the node answers: they try once, and stop only on a refusal.
 * 0, or -1 with the reason on stderr and *rc the exit status: 78
 * (EX_CONFIG) for a refusal, else 1. */
static int scale_connect(const struct lapse_config *cfg, lapse_redis *r, int once, int *rc)
{
    struct lapse_waiting w;
    lapse_waiting_init(&w, cfg, 0, lapse_clock_mono_ms());
    if ((once ? lapse_redis_ensure(r)
              : lapse_redis_ensure_within(r, cfg->redis_retry_timeout_ms, NULL, say_waiting, &w)) ==
            0 ||
        (once && !lapse_redis_refused(r)))
        return 0;
    fprintf(stderr, "lapse-scale: %s\n", lapse_redis_errstr(r));
    *rc = lapse_redis_refused(r) ? EX_CONFIG : 1;
    return -1;
}

/* Says on stderr what is due about the node's maxmemory-policy (an
 * eviction accepted with redis.accept_eviction, a policy the ACL hides).
 * Returns 0 (so the command goes on). */
static int scale_policy_news(lapse_redis *r)
{
    int error = 0;
    const char *m;
    while ((m = lapse_redis_policy_news(r, &error)))
        fprintf(stderr, "lapse-scale: %s: %s\n", error ? "error" : "warning", m);
    return 0;
}

/* What the command line gave: the options (defaults where absent) and the
 * command's operand. */
struct scale_args {
    const char *path, *to, *start_cmd, *stop_cmd, *prefix, *operand;
    int as_json, form, drain, dry_run, rate, watch, interval_ms, count, due, max_memory_pct;
    int64_t max_overdue_ms;
    long limit;
    struct lapse_plan_args plan; /* plan's options (tools/scale/plan.h) */
};

static int run_init(const struct lapse_config *cfg, lapse_redis **nodes, const struct scale_args *a)
{
    return scale_init(cfg, nodes, a->operand, a->form);
}

static int run_status(const struct lapse_config *cfg, lapse_redis **nodes,
                      const struct scale_args *a)
{
    if (a->watch)
        return lapse_scale_watch(cfg, nodes, a->interval_ms, a->count);
    return a->due ? lapse_scale_due(cfg, nodes, a->as_json)
                  : lapse_scale_status(cfg, nodes, a->as_json);
}

static int run_get(const struct lapse_config *cfg, lapse_redis **nodes, const struct scale_args *a)
{
    return lapse_scale_get(cfg, nodes, a->operand, a->as_json);
}

static int run_check(const struct lapse_config *cfg, lapse_redis **nodes,
                     const struct scale_args *a)
{
    return lapse_scale_check(cfg, nodes, a->max_overdue_ms, a->max_memory_pct, a->as_json);
}

static int run_split(const struct lapse_config *cfg, lapse_redis **nodes,
                     const struct scale_args *a)
{
    return scale_split(cfg, nodes, a->to, a->start_cmd);
}

static int run_merge(const struct lapse_config *cfg, lapse_redis **nodes,
                     const struct scale_args *a)
{
    return scale_merge(cfg, nodes, a->stop_cmd);
}

static int run_finish(const struct lapse_config *cfg, lapse_redis **nodes,
                      const struct scale_args *a)
{
    return scale_finish(cfg, nodes, a->drain, a->rate);
}

static int run_autoscale(const struct lapse_config *cfg, lapse_redis **nodes,
                         const struct scale_args *a)
{
    return lapse_scale_autoscale(cfg, nodes, a->dry_run);
}

static int run_offline(const struct lapse_config *cfg, lapse_redis **nodes,
                       const struct scale_args *a)
{
    return lapse_scale_offline(cfg, nodes, a->as_json, a->limit, a->prefix);
}

/* plan: the model's answer for the load given (tools/scale/plan.c), from
 * the default costs, saved ones (--costs) or measured now (--calibrate). */
static int run_plan(const struct lapse_config *cfg, lapse_redis **nodes, const struct scale_args *a)
{
    struct lapse_plan_args pa = a->plan;
    struct lapse_plan_costs costs;
    struct lapse_plan_limits lim;
    struct lapse_plan p;
    char err[512];
    pa.load.form = a->form > 0 ? LAPSE_PLAN_SMALL_KEYS : LAPSE_PLAN_ONE_ZSET;
    lapse_plan_costs_default(&costs);
    lapse_plan_limits_default(&lim);
    int failed = (pa.calibrate && lapse_plan_calibrate(cfg, nodes[0], pa.load.id_bytes, &costs, err,
                                                       sizeof err) < 0) ||
                 (pa.costs && lapse_plan_costs_read(pa.costs, &costs, err, sizeof err) < 0);
    if (!failed) {
        if (pa.node_memory > 0) /* else the node's maxmemory when it has one */
            lim.node_memory = pa.node_memory;
        else if (costs.maxmemory > 0)
            lim.node_memory = (double)costs.maxmemory;
        failed = lapse_plan_make(&costs, &pa.load, &lim, &p, err, sizeof err) < 0;
    }
    if (failed) {
        fprintf(stderr, "lapse-scale: plan: %s\n", err);
        return 1;
    }
    json_t *o = a->as_json ? lapse_plan_json(&costs, &pa.load, &lim, &p) : NULL;
    char *s = a->as_json ? (o ? json_dumps(o, JSON_COMPACT) : NULL)
                         : lapse_plan_text(&costs, &pa.load, &lim, &p);
    json_decref(o);
    if (s)
        printf("%s%s", s, a->as_json ? "\n" : "");
    else
        fprintf(stderr, "lapse-scale: plan: out of memory\n");
    free(s);
    return s ? 0 : 1;
}

/* The commands: how many operands each takes, which options (by their
 * letter in scale_opts; -c goes with every one: an option a command does
 * not take is an error naming both, not silently ignored), whether it
 * writes (init, split and finish refuse an evicting Redis as every program
 * does; the others only read, and show it: status, or fail on it: check),
 * whether it tries Redis once instead of waiting for it (check reports the
 * state now; a watch says so in each refresh), and what runs it. */
struct scale_cmd {
    const char *name;
    int nargs;
    const char *opts;
    int writes;
    int once;
    int (*run)(const struct lapse_config *cfg, lapse_redis **nodes, const struct scale_args *a);
};
static const struct scale_cmd scale_cmds[] = {
    {"init", 1, "ko", 1, 0, run_init},
    {"status", 0, "jwinu", 0, 0, run_status},
    {"get", 1, "j", 0, 0, run_get},
    {"check", 0, "jmM", 0, 1, run_check},
    {"split", 0, "ts", 1, 0, run_split},
    {"finish", 0, "dr", 1, 0, run_finish},
    {"merge", 0, "X", 1, 0, run_merge},
    {"offline", 0, "jlp", 0, 0, run_offline},
    {"autoscale", 0, "D", 1, 0, run_autoscale},
    {"plan", 0, "jk" LAPSE_PLAN_OPTS, 0, 1, run_plan},
};

static const struct scale_cmd *scale_cmd_find(const char *name)
{
    for (size_t i = 0; i < sizeof scale_cmds / sizeof scale_cmds[0]; i++)
        if (strcmp(scale_cmds[i].name, name) == 0)
            return &scale_cmds[i];
    return NULL;
}

static const struct option scale_opts[] = {
    {"config", required_argument, NULL, 'c'},
    {"json", no_argument, NULL, 'j'},
    {"to", required_argument, NULL, 't'},
    {"start-cmd", required_argument, NULL, 's'},
    {"stop-cmd", required_argument, NULL, 'X'},
    {"drain", no_argument, NULL, 'd'},
    {"dry-run", no_argument, NULL, 'D'},
    {"rate", required_argument, NULL, 'r'},
    {"watch", no_argument, NULL, 'w'},
    {"interval", required_argument, NULL, 'i'},
    {"count", required_argument, NULL, 'n'},
    {"small-keys", no_argument, NULL, 'k'},
    {"one-zset", no_argument, NULL, 'o'},
    {"due", no_argument, NULL, 'u'},
    {"max-overdue", required_argument, NULL, 'm'},
    {"max-memory", required_argument, NULL, 'M'},
    {"limit", required_argument, NULL, 'l'},
    {"prefix", required_argument, NULL, 'p'},
    {"ids", required_argument, NULL, 'I'},
    {"signals", required_argument, NULL, 'S'},
    {"resets", required_argument, NULL, 'R'},
    {"fires", required_argument, NULL, 'F'},
    {"new", required_argument, NULL, 'N'},
    {"payload", required_argument, NULL, 'P'},
    {"id-bytes", required_argument, NULL, 'B'},
    {"shards", required_argument, NULL, 'H'},
    {"node-memory", required_argument, NULL, 'G'},
    {"nodes", required_argument, NULL, 'E'},
    {"calibrate", no_argument, NULL, 'C'},
    {"costs", required_argument, NULL, 'K'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* A whole positive number no larger than max, or -1. */
static long positive(const char *s, long max)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *s != '\0' && *end == '\0' && v >= 1 && v <= max ? v : -1;
}

/* One option's value into a (ch: its letter). 0, or 2 (usage) with the
 * reason on stderr. */
static int scale_opt(struct scale_args *a, int ch, const char *arg)
{
    char err[256];
    if (strchr(LAPSE_PLAN_OPTS, ch)) {
        if (lapse_plan_opt(&a->plan, ch, arg, err, sizeof err) == 0)
            return 0;
        fprintf(stderr, "lapse-scale: plan: %s\n", err);
        return 2;
    }
    switch (ch) {
    case 'c':
        a->path = arg;
        break;
    case 'j':
        a->as_json = 1;
        break;
    case 't':
        a->to = arg;
        break;
    case 's':
        a->start_cmd = arg;
        break;
    case 'X':
        a->stop_cmd = arg;
        break;
    case 'd':
        a->drain = 1;
        break;
    case 'D':
        a->dry_run = 1;
        break;
    case 'w':
        a->watch = 1;
        break;
    case 'p':
        a->prefix = arg;
        break;
    case 'u':
        a->due = 1;
        break;
    case 'r':
    case 'n':
    case 'l': {
        long v = positive(arg, ch == 'l' ? LONG_MAX : INT_MAX);
        const char *name = ch == 'r' ? "rate" : ch == 'n' ? "count" : "limit";
        if (v < 0) {
            fprintf(stderr, "lapse-scale: --%s: \"%s\" is not a positive number\n", name, arg);
            return 2;
        }
        if (ch == 'r')
            a->rate = (int)v;
        else if (ch == 'n')
            a->count = (int)v;
        else
            a->limit = v;
        break;
    }
    case 'k':
    case 'o':
        if (a->form != 0 && a->form != (ch == 'k' ? 1 : -1)) {
            fprintf(stderr, "lapse-scale: init: --small-keys and --one-zset do not go together\n");
            return 2;
        }
        a->form = ch == 'k' ? 1 : -1;
        break;
    case 'M': {
        long pct = positive(arg, 100);
        if (pct < 0) {
            fprintf(stderr, "lapse-scale: --max-memory: \"%s\" is not a percentage (1..100)\n",
                    arg);
            return 2;
        }
        a->max_memory_pct = (int)pct;
        break;
    }
    case 'i':
    case 'm': {
        char *end;
        double sec = strtod(arg, &end);
        if (*arg == '\0' || *end != '\0' || !(sec >= (ch == 'i' ? 0.1 : 0)) || sec > 86400) {
            fprintf(stderr, "lapse-scale: --%s: \"%s\" is not a number of seconds (%s..86400)\n",
                    ch == 'i' ? "interval" : "max-overdue", arg, ch == 'i' ? "0.1" : "0");
            return 2;
        }
        if (ch == 'i')
            a->interval_ms = (int)(sec * 1000);
        else
            a->max_overdue_ms = (int64_t)(sec * 1000);
        break;
    }
    }
    return 0;
}

/*
 * Reads the command line into a and *cmd: every option, then the command
 * and its operand, each checked (an unknown or misplaced option named with
 * the command, a missing or extra operand, an option the command does not
 * take). Returns -1 to go on, else the exit status (0 after --help, 2 for
 * a usage error, said on stderr).
 */
static int scale_args_parse(int argc, char **argv, struct scale_args *a,
                            const struct scale_cmd **cmd)
{
    *a = (struct scale_args){.prefix = "",
                             .rate = 5000,
                             .interval_ms = 2000,
                             .max_memory_pct = LAPSE_SCALE_MAX_MEMORY_PCT,
                             .max_overdue_ms = 60000};
    lapse_plan_args_init(&a->plan);
    int ch;
    char given[32] = ""; /* the options given, by their letter in scale_opts */
    char bad[64] = "";   /* the first option getopt did not take, reported with the command */
    const char *what = "unknown option", *why = ""; /* what bad is, what is wrong with it */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":c:h", scale_opts, NULL)) != -1) {
        if (ch != '?' && ch != ':' && !strchr(given, ch) && strlen(given) < sizeof given - 1)
            given[strlen(given)] = (char)ch;
        if (ch == 'h') {
            usage(stdout);
            return 0;
        }
        if (ch != '?' && ch != ':') {
            if (scale_opt(a, ch, optarg) != 0)
                return 2;
            continue;
        }
        /* the word is argv[optind - 1] for a long option (and a short one
         * lacking its value), optopt for an unknown short one */
        const char *word = argv[optind - 1];
        int is_long = strncmp(word, "--", 2) == 0;
        if (bad[0])
            continue;
        if (ch == '?' && optopt && !is_long)
            snprintf(bad, sizeof bad, "-%c", optopt);
        else
            snprintf(bad, sizeof bad, "%.*s", (int)strcspn(word, "="), word);
        if (ch == ':' || (optopt && is_long))
            what = "option", why = ch == ':' ? " needs a value" : " takes no value";
    }
    /* getopt moved the operands to the end: the command is the first */
    const char *name = optind < argc ? argv[optind] : NULL;
    if (bad[0]) {
        fprintf(stderr, "lapse-scale: %s%s%s %s%s%s; see lapse-scale --help\n", name ? name : "",
                name ? ": " : "", what, bad, why,
                name && strcmp(name, "get") == 0 && bad[1] != '-'
                    ? " (an ID that begins with '-' goes after --: get -- ID)"
                    : "");
        return 2;
    }
    if (!a->path || !name) {
        fprintf(stderr, "lapse-scale: %s; see lapse-scale --help\n",
                a->path ? "a command is required" : "-c FILE is required");
        return 2;
    }
    const struct scale_cmd *c = scale_cmd_find(name);
    if (!c) {
        fprintf(stderr, "lapse-scale: unknown command \"%s\"; see lapse-scale --help\n", name);
        return 2;
    }
    if (argc - optind - 1 > c->nargs) {
        fprintf(stderr, "lapse-scale: %s: unexpected argument \"%s\"; see lapse-scale --help\n",
                name, argv[optind + 1 + c->nargs]);
        return 2;
    }
    if (argc - optind - 1 < c->nargs) {
        fprintf(stderr, "lapse-scale: %s: an argument is missing; see lapse-scale --help\n", name);
        return 2;
    }
    for (const char *g = given; *g; g++) {
        if (*g == 'c' || strchr(c->opts, *g))
            continue;
        const struct option *o = scale_opts;
        while (o->name && o->val != *g)
            o++;
        fprintf(stderr,
                "lapse-scale: %s: option --%s does not go with %s; see lapse-scale --help\n", name,
                o->name ? o->name : "?", name);
        return 2;
    }
    a->operand = c->nargs ? argv[optind + 1] : NULL;
    char err[512];
    if (c->run == run_get &&
        lapse_inspect_id_check(a->operand, strlen(a->operand), err, sizeof err) < 0) {
        fprintf(stderr, "lapse-scale: get: %s\n", err);
        return 2;
    }
    if (c->run == run_plan && lapse_plan_args_check(&a->plan, err, sizeof err) < 0) {
        fprintf(stderr, "lapse-scale: plan: %s\n", err);
        return 2;
    }
    if (a->watch && (c->run != run_status || a->as_json || a->due)) {
        fprintf(stderr, "lapse-scale: --watch goes with status, without --json or --due\n");
        return 2;
    }
    *cmd = c;
    return -1;
}

int main(int argc, char **argv)
{
    struct scale_args a;
    const struct scale_cmd *c = NULL;
    int rc = scale_args_parse(argc, argv, &a, &c);
    if (rc >= 0)
        return rc;
    struct lapse_config cfg;
    char err[512];
    if (lapse_config_load(&cfg, a.path, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (!c->writes)
        cfg.redis_accept_eviction = 1;
    lapse_redis **nodes = calloc(cfg.nnodes, sizeof *nodes);
    rc = 1;
    for (size_t i = 0; nodes && i < cfg.nnodes; i++)
        nodes[i] = lapse_node_open(&cfg, i);
    if (!nodes || !nodes[cfg.nnodes - 1])
        fprintf(stderr, "lapse-scale: out of memory\n");
    else if (scale_connect(&cfg, nodes[0], c->once || a.watch, &rc) == 0 &&
             !(c->writes && scale_policy_news(nodes[0])))
        rc = c->run(&cfg, nodes, &a);
    for (size_t i = 0; nodes && i < cfg.nnodes; i++)
        lapse_redis_free(nodes[i]);
    free(nodes);
    lapse_config_free(&cfg);
    return rc;
}
