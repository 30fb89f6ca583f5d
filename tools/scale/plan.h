/*
 * plan — lapse-scale plan: how many shards, Redis nodes, cores and how much
 * memory a load needs (IDs pending, signals/s, fires/s), from what each
 * operation costs Redis. The sizing rules and their reasons are
 * docs/operating.md, "Sizing: lapse-scale plan"; the --json fields are
 * docs/protocol.md, "lapse-scale plan --json".
 *
 * Three parts, each testable alone:
 *   - the model (lapse_plan_make): a pure function from costs, a load and
 *     limits to a plan, with no I/O: unit-tested (tests/unit/test_plan.c);
 *   - the costs: the defaults measured on the machine docs/benchmarks.md
 *     names (lapse_plan_costs_default), a saved calibration read back
 *     (lapse_plan_costs_read), or a fresh one (plan_calibrate.h);
 *   - the answer: the plan as text for people or JSON for scripts
 *     (lapse_plan_text, lapse_plan_json), which the caller prints.
 *
 * Nothing here prints or exits: errors are -1 with a reason in errstr.
 */
#ifndef LAPSE_SCALE_PLAN_H
#define LAPSE_SCALE_PLAN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The two ways a shard can be kept (lapse-scale init N [--small-keys]). */
enum lapse_plan_form {
    LAPSE_PLAN_ONE_ZSET = 0, /* one sorted set a shard (the default) */
    LAPSE_PLAN_SMALL_KEYS,   /* many small keys a shard (init --small-keys) */
    LAPSE_PLAN_FORMS
};

/* What one shard form costs Redis, per operation (Redis CPU in µs of
 * used_cpu_user + used_cpu_sys, bytes of used_memory). The three writes
 * grow with the IDs on the node (plan_fit.h says why and how): each is its cost
 * at size_ids IDs plus per_doubling µs each time the set doubles past it;
 * a slope of 0 (small keys, costs files from before the slopes) is flat. */
struct lapse_plan_form_costs {
    double new_us;    /* a touch of an ID not pending (it becomes pending) */
    double reset_us;  /* a touch of a pending ID (a reset) */
    double extend_us; /* an extend of a pending ID to a later deadline */
    double new_per_doubling, reset_per_doubling, extend_per_doubling; /* µs, >= 0 */
    double size_ids; /* the set the write costs are at (0: not known; flat) */
    /* how far the calibration's repeats of each write fell from its fit, %
     * (0: not known): the costs are no surer than this */
    double new_spread_pct, reset_spread_pct, extend_spread_pct;
    double fire_us;       /* a fired ID in full claims: claim.lua + ack.lua, per ID */
    double claim_us;      /* what a claim and its ack cost beyond their IDs, per claim */
    double zadd_us;       /* the reference: a pipelined ZADD of the same IDs, one zset */
    double bytes_per_id;  /* used_memory per pending ID, no payload */
    double payload_extra; /* bytes a payload costs beyond its own length, per ID */
};

/* Where a set of costs came from. */
enum lapse_plan_source {
    LAPSE_PLAN_DEFAULTS = 0, /* lapse_plan_costs_default: docs/benchmarks.md */
    LAPSE_PLAN_CALIBRATED,   /* measured now (plan --calibrate) */
    LAPSE_PLAN_FILE,         /* read back from a saved calibration (plan --costs FILE) */
};

/* Costs of both forms and what they were measured with. */
struct lapse_plan_costs {
    struct lapse_plan_form_costs form[LAPSE_PLAN_FORMS];
    int source;           /* enum lapse_plan_source */
    char origin[256];     /* where and when they were measured, for people */
    int id_bytes;         /* the IDs' length they were measured with */
    long calibration_ids; /* IDs per phase of the calibration (0: not known) */
    long long maxmemory;  /* the measured node's maxmemory, bytes (0: none or unknown) */
};

/* The load to plan for. */
struct lapse_plan_load {
    double ids;         /* IDs pending at once, >= 1 */
    double signals;     /* extends of pending IDs per second (a watchdog's signals) */
    double resets;      /* touches of pending IDs per second (resets) */
    double fires;       /* IDs falling due (events), per second */
    double news;        /* touches of IDs not pending, per second (< 0: = fires: the
                           fired IDs come back, the population stays at ids) */
    int form;           /* enum lapse_plan_form */
    long payload_bytes; /* the payload stored with each ID (0: none) */
    int id_bytes;       /* the IDs' length */
    long shards;        /* the shard count to keep (0: the plan chooses) */
    long nodes;         /* the node count to keep, at most shards (0: the plan chooses) */
};

/* The limits the plan keeps to; lapse_plan_limits_default gives the
 * documented ones (docs/operating.md, "Sizing: lapse-scale plan", says
 * why each). */
struct lapse_plan_limits {
    double node_cores;       /* Redis CPU of one node at most, cores */
    double node_memory;      /* a node's memory (its maxmemory), bytes */
    double memory_share;     /* of which lapse's data may use at most this share */
    double ids_per_shard;    /* IDs pending in one shard at most */
    double fires_per_shard;  /* fires/s of one shard (one scanner) at most */
    double claims_per_shard; /* claims a busy scanner makes per second at most */
    double scanner_us;       /* a scanner's own CPU per fired ID, µs */
};

/* Why a figure of the plan is what it is. */
enum lapse_plan_why {
    LAPSE_PLAN_BY_MINIMUM = 0,     /* the least there can be */
    LAPSE_PLAN_BY_GIVEN,           /* --shards */
    LAPSE_PLAN_BY_IDS_PER_SHARD,   /* shards: IDs per shard */
    LAPSE_PLAN_BY_FIRES_PER_SHARD, /* shards: fires/s per shard */
    LAPSE_PLAN_BY_NODES,           /* shards: a shard at most half of a node's limits */
    LAPSE_PLAN_BY_CPU,             /* nodes: Redis CPU per node */
    LAPSE_PLAN_BY_MEMORY,          /* nodes: memory per node */
    LAPSE_PLAN_BY_BALANCE,         /* nodes: the busiest node (shards do not divide evenly) */
};

/* The plan: each figure and what set it. */
struct lapse_plan {
    double cores_new, cores_signals, cores_resets, cores_fires, cores_claims; /* Redis CPU, cores */
    double cores;                                                             /* their sum */
    double bytes;         /* Redis memory of the data */
    double news;          /* the new IDs/s planned for (load.news, or fires) */
    long shards;          /* a power of two */
    int shards_why;       /* enum lapse_plan_why */
    long nodes;           /* Redis nodes (primaries) */
    int nodes_why;        /* enum lapse_plan_why */
    long node_shards;     /* shards on the busiest node (round-robin placement) */
    double node_cores;    /* Redis CPU of the busiest node */
    double node_bytes;    /* memory of the busiest node */
    long scanners;        /* active scanner processes: one a shard */
    double scanner_cores; /* the scanners' own CPU, all of them */
    double claims_per_s;  /* claim calls per second, all shards */
    double ids_per_shard; /* IDs per shard */
    double fires_per_shard;
    double node_ids;                    /* IDs on the busiest node */
    double new_us, reset_us, extend_us; /* the write costs charged: at node_ids */
};

/* The defaults of docs/benchmarks.md ("Per-operation costs"): measured by
 * plan --calibrate on the machine and day it names. */
void lapse_plan_costs_default(struct lapse_plan_costs *c);

/* The documented limits (docs/operating.md, "Sizing: lapse-scale plan"). */
void lapse_plan_limits_default(struct lapse_plan_limits *l);

/*
 * The plan for `load` under `limits` with `costs`. With load->nodes given
 * (--nodes: the nodes one has), the figures for that many whatever the
 * limits say (per_node against limits shows how far over), needing
 * load->shards (each node holds one at least). Returns 0 with *out filled,
 * or -1 with errstr (a load out of range: no IDs, a negative rate, a
 * --shards that is no power of two, --nodes without --shards or above it;
 * or one no number of nodes up to LAPSE_PLAN_MAX_NODES can carry), *out
 * then unspecified.
 */
#define LAPSE_PLAN_MAX_NODES 4096
#define LAPSE_PLAN_MAX_SHARDS 65536
int lapse_plan_make(const struct lapse_plan_costs *costs, const struct lapse_plan_load *load,
                    const struct lapse_plan_limits *limits, struct lapse_plan *out, char *errstr,
                    size_t size);

/* costs->form[form] with its three writes at node_ids IDs on the node
 * (plan_fit.h): what lapse_plan_make charges the busiest node's. Why the
 * node's IDs and not its shard's: the bench's writes cost the same into
 * one set of 250,000 as into four of 62,500 on one node, and more into
 * four of 250,000 (docs/benchmarks.md, "lapse-scale plan against measured
 * Redis CPU"): what grows is the memory the writes spread over. */
struct lapse_plan_form_costs lapse_plan_costs_at(const struct lapse_plan_costs *costs, int form,
                                                 double node_ids);

/* Redis memory per pending ID of `form` for IDs of id_bytes, from costs
 * measured with costs->id_bytes (the difference charged at the slope the
 * bench's 11- and 16-byte IDs gave). */
double lapse_plan_bytes_per_id(const struct lapse_plan_costs *costs, int form, int id_bytes);

/* The name of a form ("one_zset", "small_keys") or a reason ("ids_per_shard",
 * ...), as --json spells them. */
const char *lapse_plan_form_name(int form);
const char *lapse_plan_why_name(int why);

/* The plan as JSON (docs/protocol.md, "lapse-scale plan --json"): a new
 * object the caller frees with json_decref, or NULL when out of memory. */
json_t *lapse_plan_json(const struct lapse_plan_costs *costs, const struct lapse_plan_load *load,
                        const struct lapse_plan_limits *limits, const struct lapse_plan *p);

/* The plan as text for people: a malloc'd string the caller frees, or
 * NULL when out of memory. */
char *lapse_plan_text(const struct lapse_plan_costs *costs, const struct lapse_plan_load *load,
                      const struct lapse_plan_limits *limits, const struct lapse_plan *p);

/* Reads back the costs of a plan's --json output (its "costs" object, as
 * --calibrate --json wrote them) from `path`. The slopes, size_ids and
 * spreads may be missing (files written before they were measured): then
 * 0, flat costs as those files meant. 0, or -1 with errstr naming the file
 * and what is wrong; *c is then unspecified. */
int lapse_plan_costs_read(const char *path, struct lapse_plan_costs *c, char *errstr, size_t size);

/*
 * The command line's plan options, as given (tools/scale/main.c hands each
 * to lapse_plan_opt by its letter), and what they become.
 */
struct lapse_plan_args {
    struct lapse_plan_load load;
    double node_memory; /* --node-memory, bytes (0: the node's maxmemory, else the default) */
    int has_ids;        /* --ids was given */
    int calibrate;      /* --calibrate */
    const char *costs;  /* --costs FILE, or NULL */
};

/* The defaults of the options (no --ids yet: lapse_plan_args_check wants
 * one). */
void lapse_plan_args_init(struct lapse_plan_args *a);

/* One option, by its letter in lapse-scale's table (LAPSE_PLAN_OPTS); arg
 * its value. 0, or -1 with errstr ("--ids: \"x\" is not a number ..."). */
#define LAPSE_PLAN_OPTS "ISRFNPBHGCKE"
int lapse_plan_opt(struct lapse_plan_args *a, int letter, const char *arg, char *errstr,
                   size_t size);

/* Whether the options make a question: --ids given, --calibrate and --costs
 * not both, --nodes with --shards of at least as many. 0, or -1 with
 * errstr. */
int lapse_plan_args_check(const struct lapse_plan_args *a, char *errstr, size_t size);

#endif
