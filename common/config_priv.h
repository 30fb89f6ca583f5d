/*
 * config_priv — the config module's own: the shape of a key table entry, the
 * tables (config_keys.c) and what the loader's files share. Included by
 * config.c, config_keys.c, config_walk.c and config_lists.c only.
 *
 * Calls go one way: config.c (the file, the cross-key checks, free) ->
 * config_walk.c (each setting against its table; the lists' elements in
 * config_lists.c, which walks each element's group again) -> the tables, which are
 * data and call nothing.
 */
#ifndef LAPSE_CONFIG_PRIV_H
#define LAPSE_CONFIG_PRIV_H

#include <libconfig.h>
#include <stddef.h>

#include "config.h"

#define NODES_MAX 64  /* redis.nodes upper bound */
#define SEEN_MAX 80   /* entries a table may have (seen[] is on the stack) */
#define RULES_MAX 256 /* ingress.rules upper bound */

#define COUNT_OF(t) (sizeof(t) / sizeof((t)[0]))

enum ktype {
    K_GROUP, /* a group whose keys are further entries of the same table */
    K_INT,   /* int field; value within min..max */
    K_STR,   /* char * field; length within min..max bytes (max 0: no limit) */
    K_NAME,  /* K_STR restricted to [A-Za-z0-9_.-] (Redis prefix, topic) */
    K_LEVEL, /* log level name, stored as an int (enum lapse_log_level) */
    K_NODES, /* redis.nodes: a list of groups checked against config_node_keys */
    K_PROPS, /* a list of ("name", value) pairs: off = the struct lapse_kv *
              * field, def = the offset of its size_t count */
    K_TIME,  /* "arrival", "kafka" or "field", stored as an int
              * (enum lapse_time_source) */
    K_RULES, /* ingress.rules: a list of groups checked against config_rule_keys */
    K_BOOL,  /* true or false, stored as an int 0/1 (def: the default) */
    K_ADDRS, /* a list of "host:port" strings: off = the char ** field, def =
              * the offset of its size_t count, min..max = how many */
    K_HOSTS, /* K_ADDRS of host names or addresses without a port */
};

struct key {
    const char *path; /* dotted path, relative to the table's root */
    enum ktype type;
    int required;        /* missing is an error (else the default applies) */
    long long def;       /* K_INT default */
    const char *sdef;    /* K_STR/K_NAME/K_LEVEL default (NULL: none) */
    long long min, max;  /* K_INT value bounds; string length bounds */
    size_t off;          /* field offset in the table's struct */
    const char *comment; /* what it is for: the example config says the same */
};

/* config_keys.c: the top-level keys, one element of redis.nodes, one element
 * of ingress.rules; each with its number of entries (at most SEEN_MAX). */
extern const struct key config_keys[];
extern const size_t config_nkeys;
extern const struct key config_node_keys[];
extern const size_t config_nnode_keys;
extern const struct key config_rule_keys[];
extern const size_t config_nrule_keys;

/* What one load is working on. */
struct ctx {
    struct lapse_config *cfg;
    const char *path; /* file named in messages when a setting has none */
    char *err;        /* caller's errstr */
    size_t errsize;
    size_t used;  /* bytes of err written: the problems so far, a line each */
    int problems; /* how many config_fail reported */
    int unknown;  /* how many of them were unknown keys (they set nothing) */
    int oom;      /* 1 once out of memory: the walk stops there */
};

/* config_walk.c: adds the line "FILE:LINE: key: reason" (or "FILE: key:
 * reason" when `s` is NULL or has no line) to the caller's errstr, after a
 * '\n' when it holds problems already (what does not fit is cut); returns
 * -1 for `return config_fail()`. config_oom says "out of memory" the same
 * way and stops the walk. */
int config_fail(struct ctx *x, const config_setting_t *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int config_oom(struct ctx *x, const char *key);

/* config_walk.c: "FILE:LINE" of setting `s` (the file an @include names, or
 * the config's) into a new string at *where. 0, or -1 with errstr set. */
int config_where(struct ctx *x, const config_setting_t *s, char **where);

/* config_walk.c: checks every setting of group `grp`, in file order, against
 * `tab` (n entries), marking each found in seen[] and storing it into the
 * struct at base; `rel` is the group's path within the table, `full` its
 * path in the file. A setting that is wrong is reported and the walk goes
 * on to the next, so that every unknown key and every bad value is named
 * at once. 0, or -1 with errstr set when it found any problem. */
int config_walk(struct ctx *x, const config_setting_t *grp, const struct key *tab, size_t n,
                unsigned char *seen, void *base, const char *rel, const char *full);

/* config_walk.c: after a walk, a required key not seen is an error (each
 * one reported), others get their defaults. 0, or -1 with errstr set. */
int config_fill(struct ctx *x, const struct key *tab, size_t n, const unsigned char *seen,
                void *base, const char *full);

#define CONFIG_PATH_MAX 256 /* longest dotted key path spelled in a message */

/* config_walk.c: key paths for messages, cut at CONFIG_PATH_MAX: out is
 * "prefix.name" ("name" at the top), or "full[i]" for a list's element. */
void config_join(char *out, const char *prefix, const char *name);
void config_index_path(char *out, const char *full, int i);

/* config_walk.c: the index of `path` in table `tab` (n entries), or -1. */
int config_find(const struct key *tab, size_t n, const char *path);

/* config_lists.c: the settings that are lists (K_ADDRS, K_HOSTS, K_NODES, K_PROPS,
 * K_RULES), checked element by element and stored. 0, or -1 with errstr. */
int config_load_addrs(struct ctx *x, const config_setting_t *s, const struct key *k, void *base,
                      const char *full);
int config_load_nodes(struct ctx *x, const config_setting_t *s, const char *full);
int config_load_props(struct ctx *x, const config_setting_t *s, const struct key *k,
                      const char *full);
int config_load_rules(struct ctx *x, const config_setting_t *s, const char *full);

/* config_scale.c: what the scale group's keys must say together (the
 * hysteresis rule, min_shards <= max_shards, powers of two). 0, or -1 with
 * errstr set. */
int config_check_scale(struct ctx *x, const config_t *lc);

#endif
