/*
 * config_walk — checks the settings of a libconfig file against the key
 * tables (config_keys.c) and stores them: type and bounds of each value, the
 * lists (redis.nodes, ingress.rules, properties, addresses) element by
 * element, and what one key alone cannot say about a node or a rule. Errors
 * are one line, "FILE:LINE: key: reason".
 *
 * Invariants (config.c relies on them):
 *  - Problems are found in file order, then missing keys in table order;
 *    each setting's first problem is reported, one line each, and the walk
 *    goes on to the next setting (an element of a list stops at its first:
 *    what follows in the same list would be compared with a half-read
 *    one). What several keys say together is checked only when no value
 *    was wrong (unknown keys set nothing): config.c's checks when only
 *    unknown keys were reported, check_node and the nodes' comparison when
 *    nothing was, so that no problem is reported as a consequence of
 *    another.
 *  - Every string stored is a strdup'd copy, so nothing points into the
 *    libconfig object once config.c destroys it.
 *  - Arrays are allocated zeroed with their count set at once, so a failure
 *    half-way through filling one frees cleanly (lapse_config_free).
 *  - Nothing here prints or exits.
 */
#include "config_priv.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes "FILE:LINE: key: reason" (or "FILE: key: reason" when `s` is NULL
 * or has no line) into the caller's errstr; returns -1 for
 * `return config_fail()`. */
int config_fail(struct ctx *x, const config_setting_t *s, const char *key, const char *fmt, ...)
{
    if (x->err == NULL || x->errsize == 0) {
        x->problems++;
        return -1;
    }
    if (x->problems++ > 0) {
        if (x->used + 2 >= x->errsize)
            return -1; /* no room for another line */
        x->err[x->used++] = '\n';
    }
    char *out = x->err + x->used;
    size_t room = x->errsize - x->used;
    const char *file = x->path;
    unsigned line = 0;
    if (s != NULL) {
        line = config_setting_source_line(s);
        if (config_setting_source_file(s) != NULL) /* an @include'd file */
            file = config_setting_source_file(s);
    }
    int n = line ? snprintf(out, room, "%s:%u: %s: ", file, line, key)
                 : snprintf(out, room, "%s: %s: ", file, key);
    if (n >= 0 && (size_t)n < room) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(out + n, room - (size_t)n, fmt, ap);
        va_end(ap);
    }
    x->used += strlen(out);
    return -1;
}

int config_oom(struct ctx *x, const char *key)
{
    x->oom = 1;
    return config_fail(x, NULL, key, "out of memory");
}

/* Appends `s` to the key path in `out` (CONFIG_PATH_MAX bytes), cutting what does
 * not fit: a cut path only shortens an error message; it cannot match a
 * (much shorter) table entry. */
static void append(char *out, const char *s)
{
    size_t len = strlen(out);
    while (*s && len < CONFIG_PATH_MAX - 1)
        out[len++] = *s++;
    out[len] = '\0';
}

/* "prefix.name", or "name" at the top. */
void config_join(char *out, const char *prefix, const char *name)
{
    out[0] = '\0';
    append(out, prefix);
    if (prefix[0])
        append(out, ".");
    append(out, name);
}

/* "full[i]", for the elements of a list. */
void config_index_path(char *out, const char *full, int i)
{
    char num[16];
    snprintf(num, sizeof num, "[%d]", i);
    out[0] = '\0';
    append(out, full);
    append(out, num);
}

int config_find(const struct key *tab, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(tab[i].path, path) == 0)
            return (int)i;
    return -1;
}

/* Edit distance (insertions, deletions, substitutions and swaps of two
 * neighbours: "bacth" is 1 from "batch") between a and b, or cap + 1 once it
 * is known to exceed cap. Key paths are short: anything longer than
 * CONFIG_PATH_MAX is not compared. */
static size_t distance(const char *a, const char *b, size_t cap)
{
    size_t m = strlen(a), n = strlen(b);
    if (m >= CONFIG_PATH_MAX || n >= CONFIG_PATH_MAX || (m > n ? m - n : n - m) > cap)
        return cap + 1;
    size_t rows[3][CONFIG_PATH_MAX + 1]; /* rows i-2, i-1, i of the table */
    for (size_t j = 0; j <= n; j++)
        rows[1][j] = j;
    for (size_t i = 1; i <= m; i++) {
        size_t *cur = rows[(i + 1) % 3], *prev = rows[i % 3], *pp = rows[(i + 2) % 3];
        size_t best = cur[0] = i;
        for (size_t j = 1; j <= n; j++) {
            size_t d = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < d)
                d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < d)
                d = pp[j - 2] + 1;
            cur[j] = d;
            if (d < best)
                best = d;
        }
        if (best > cap)
            return cap + 1;
    }
    return rows[(m + 1) % 3][n];
}

/* The entry of `tab` an unknown key `rel` most likely meant: the nearest
 * path within a few edits (about one per six characters, at least one), or
 * else the only entry whose last part is the same name in another group
 * ("producer.lease_ms": scanner.lease_ms). NULL when none is near. */
static const char *near_key(const struct key *tab, size_t n, const char *rel)
{
    const char *best = NULL, *last = strrchr(rel, '.');
    size_t best_d = 0, same_name = 0, same = 0;
    last = last ? last + 1 : rel;
    for (size_t i = 0; i < n; i++) {
        size_t cap = 1 + strlen(tab[i].path) / 6;
        size_t d = distance(rel, tab[i].path, best ? best_d - 1 : cap);
        if (d <= cap && (!best || d < best_d))
            best = tab[i].path, best_d = d;
        const char *tl = strrchr(tab[i].path, '.');
        if (strcmp(tl ? tl + 1 : tab[i].path, last) == 0)
            same_name = i, same++;
    }
    if (best)
        return best;
    return same == 1 ? tab[same_name].path : NULL;
}

static int name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

/* Checks a string against a K_STR/K_NAME entry; returns 0 or fails. */
static int check_str(struct ctx *x, const config_setting_t *s, const struct key *k,
                     const char *full, const char *v)
{
    size_t len = strlen(v);
    int ok = len >= (size_t)k->min && (k->max == 0 || len <= (size_t)k->max);
    for (const char *p = v; ok && k->type == K_NAME && *p; p++)
        ok = name_char((unsigned char)*p);
    if (ok)
        return 0;
    if (k->type == K_NAME)
        return config_fail(x, s, full, "must be %lld..%lld bytes of [A-Za-z0-9_.-]", k->min,
                           k->max);
    if (k->max)
        return config_fail(x, s, full, "must be %lld..%lld bytes", k->min, k->max);
    return config_fail(x, s, full, "must not be empty");
}

/* Stores a string (a strdup'd copy) into the char * field at k->off. */
static int store_str(struct ctx *x, const struct key *k, void *base, const char *full,
                     const char *v)
{
    char **field = (char **)((char *)base + k->off);
    if (v == NULL)
        return 0;
    if ((*field = strdup(v)) == NULL)
        return config_oom(x, full);
    return 0;
}

static const char *const time_names[] = {
    [LAPSE_TIME_ARRIVAL] = "arrival",
    [LAPSE_TIME_KAFKA] = "kafka",
    [LAPSE_TIME_FIELD] = "field",
};

static int time_parse(const char *v)
{
    for (int i = 0; i < (int)COUNT_OF(time_names); i++)
        if (strcmp(v, time_names[i]) == 0)
            return i;
    return -1;
}

/* Checks one setting against its table entry and stores it. */
static int set_one(struct ctx *x, const config_setting_t *s, const struct key *k,
                   const struct key *tab, size_t n, unsigned char *seen, void *base,
                   const char *rel, const char *full)
{
    int t = config_setting_type(s);
    switch (k->type) {
    case K_GROUP:
        if (t != CONFIG_TYPE_GROUP) {
            /* its keys are not missing too: this one line says it all */
            size_t rl = strlen(rel);
            for (size_t i = 0; i < n; i++)
                if (strncmp(tab[i].path, rel, rl) == 0 && tab[i].path[rl] == '.')
                    seen[i] = 1;
            return config_fail(x, s, full, "expected a group { ... }");
        }
        return config_walk(x, s, tab, n, seen, base, rel, full);
    case K_INT: {
        if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
            return config_fail(x, s, full, "expected an integer");
        /* libconfig 1.5 wraps an unsuffixed literal beyond 32 bits into an
         * int (4294967297 reads as 1) and gives us no way to tell; only
         * "L"-suffixed literals arrive as INT64 with their real value. */
        long long v = config_setting_get_int64(s);
        if (v < k->min || v > k->max)
            return config_fail(x, s, full, "must be %lld..%lld (got %lld)", k->min, k->max, v);
        *(int *)((char *)base + k->off) = (int)v;
        return 0;
    }
    case K_STR:
    case K_NAME:
    case K_LEVEL:
    case K_TIME: {
        if (t != CONFIG_TYPE_STRING)
            return config_fail(x, s, full, "expected a string");
        const char *v = config_setting_get_string(s);
        if (k->type == K_TIME) {
            int ts = time_parse(v);
            if (ts < 0)
                return config_fail(x, s, full, "must be one of arrival, kafka, field");
            *(int *)((char *)base + k->off) = ts;
            return 0;
        }
        if (k->type != K_LEVEL)
            return check_str(x, s, k, full, v) < 0 ? -1 : store_str(x, k, base, full, v);
        int level = lapse_log_level_parse(v);
        if (level < 0)
            return config_fail(x, s, full, "must be one of debug, info, warn, error");
        *(int *)((char *)base + k->off) = level;
        return 0;
    }
    case K_BOOL:
        if (t != CONFIG_TYPE_BOOL)
            return config_fail(x, s, full, "expected true or false");
        *(int *)((char *)base + k->off) = config_setting_get_bool(s);
        return 0;
    case K_NODES:
        return config_load_nodes(x, s, full);
    case K_PROPS:
        return config_load_props(x, s, k, full);
    case K_ADDRS:
    case K_HOSTS:
        return config_load_addrs(x, s, k, base, full);
    case K_RULES:
        return config_load_rules(x, s, full);
    }
    return config_fail(x, s, full, "internal error: bad table entry");
}

/* Checks every setting of group `grp`, in file order, against `tab`; `rel`
 * is the group's path within the table, `full` its path in the file. */
int config_walk(struct ctx *x, const config_setting_t *grp, const struct key *tab, size_t n,
                unsigned char *seen, void *base, const char *rel, const char *full)
{
    int len = config_setting_length(grp), before = x->problems;
    for (int i = 0; i < len && !x->oom; i++) {
        const config_setting_t *s = config_setting_get_elem(grp, (unsigned)i);
        char relp[CONFIG_PATH_MAX], fullp[CONFIG_PATH_MAX];
        config_join(relp, rel, config_setting_name(s));
        config_join(fullp, full, config_setting_name(s));
        int k = config_find(tab, n, relp);
        if (k < 0) {
            const char *near = near_key(tab, n, relp);
            x->unknown++;
            if (!near) {
                config_fail(x, s, fullp, "unknown key");
                continue;
            }
            /* the table's paths are relative: the file's path of the group
             * the table describes goes before (full ends with rel) */
            char nearp[CONFIG_PATH_MAX], root[CONFIG_PATH_MAX];
            size_t fl = strlen(full), rl0 = strlen(rel);
            snprintf(root, sizeof root, "%.*s", (int)(fl > rl0 ? fl - rl0 : 0), full);
            size_t rl = strlen(root);
            if (rl && root[rl - 1] == '.')
                root[rl - 1] = '\0';
            config_join(nearp, root, near);
            config_fail(x, s, fullp, "unknown key (did you mean %s?)", nearp);
            continue;
        }
        seen[k] = 1;
        set_one(x, s, &tab[k], tab, n, seen, base, relp, fullp); /* reported; on to the next */
    }
    return x->problems > before ? -1 : 0;
}

/* After a walk: a required key not seen is an error, others get defaults. */
int config_fill(struct ctx *x, const struct key *tab, size_t n, const unsigned char *seen,
                void *base, const char *full)
{
    int before = x->problems;
    for (size_t i = 0; i < n && !x->oom; i++) {
        const struct key *k = &tab[i];
        char fullp[CONFIG_PATH_MAX];
        if (seen[i])
            continue;
        config_join(fullp, full, k->path);
        if (k->required) {
            config_fail(x, NULL, fullp, "missing");
            continue;
        }
        if (k->type == K_INT || k->type == K_BOOL)
            *(int *)((char *)base + k->off) = (int)k->def;
        else if (k->type == K_LEVEL)
            *(int *)((char *)base + k->off) = lapse_log_level_parse(k->sdef);
        else if (k->type == K_TIME)
            *(int *)((char *)base + k->off) = time_parse(k->sdef);
        else if ((k->type == K_STR || k->type == K_NAME) &&
                 store_str(x, k, base, fullp, k->sdef) < 0)
            return -1;
    }
    return x->problems > before ? -1 : 0;
}
