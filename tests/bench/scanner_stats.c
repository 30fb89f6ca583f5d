/*
 * lapse-bench-scanner-stats: lateness figures of lapse events for `make
 * bench-scanner` (tests/bench/scanner-run).
 *
 *   lapse-bench-scanner-stats [NAME FROM_MS TO_MS]... < EVENTS
 *
 * EVENTS: one lapse event (JSON) a line, as `lapse-tail` prints them. For all
 * events, and for each NAME the events whose deadline_ms lies in [FROM_MS,
 * TO_MS), prints one JSON object a line:
 *
 *   {"name":..,"events":N,"distinct":N,"duplicates":N,"early":N,
 *    "p50_ms":..,"p90_ms":..,"p99_ms":..,"p999_ms":..,"max_ms":..,"mean_ms":..,
 *    "first_fired_ms":..,"last_fired_ms":..,"events_per_s":..,
 *    "max_1s":..,"min_1s":..}
 *
 * lateness = fired_ms - deadline_ms; percentiles by nearest rank. distinct
 * counts (id, deadline_ms) pairs (a redelivery repeats both); early counts
 * events fired before their deadline (never expected). events_per_s is
 * events / (last fired - first fired); max_1s / min_1s are the most and
 * fewest events fired in one whole second (from the first fired on; the last,
 * partial second is left out). The first line is "all".
 *
 * Fields are found by name in the line (lapse's encoder writes each once, and
 * IDs with quotes are not used by the bench). Lines that are not events are
 * counted on stderr and skipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

#include "glue.h"

#define PROG "lapse-bench-scanner-stats"
#define MAX_GROUPS 16

struct ev {
    int64_t deadline, fired;
    uint64_t key; /* hash of (id, deadline) */
};

struct group {
    const char *name;
    int64_t from, to;
};

static int field_i64(const char *line, const char *name, int64_t *out)
{
    const char *p = strstr(line, name);
    if (!p)
        return -1;
    p += strlen(name);
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno || end == p)
        return -1;
    *out = v;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int64_t rank(const int64_t *v, size_t n, double q) /* nearest rank, v sorted */
{
    size_t k = (size_t)(q * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

static int report(const struct ev *evs, size_t n, const struct group *g)
{
    int64_t *late = malloc((n + 1) * sizeof *late);
    uint64_t *keys = malloc((n + 1) * sizeof *keys);
    if (!late || !keys) {
        free(late);
        free(keys);
        return -1;
    }
    size_t m = 0, early = 0;
    int64_t first = INT64_MAX, last = INT64_MIN;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (g->from >= 0 && (evs[i].deadline < g->from || evs[i].deadline >= g->to))
            continue;
        late[m] = evs[i].fired - evs[i].deadline;
        keys[m] = evs[i].key;
        early += late[m] < 0;
        sum += (double)late[m];
        if (evs[i].fired < first)
            first = evs[i].fired;
        if (evs[i].fired > last)
            last = evs[i].fired;
        m++;
    }
    printf("{\"name\":\"%s\",\"events\":%zu", g->name, m);
    if (m == 0) {
        printf("}\n");
        free(late);
        free(keys);
        return 0;
    }
    qsort(late, m, sizeof *late, cmp_i64);
    qsort(keys, m, sizeof *keys, cmp_u64);
    size_t distinct = 1;
    for (size_t i = 1; i < m; i++)
        distinct += keys[i] != keys[i - 1];
    /* events per whole second from the first fired on */
    size_t secs = (size_t)((last - first) / 1000);
    int64_t max1 = -1, min1 = -1;
    if (secs > 0) {
        int64_t *per = calloc(secs, sizeof *per);
        if (!per) {
            free(late);
            free(keys);
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            if (g->from >= 0 && (evs[i].deadline < g->from || evs[i].deadline >= g->to))
                continue;
            size_t s = (size_t)((evs[i].fired - first) / 1000);
            if (s < secs)
                per[s]++;
        }
        max1 = min1 = per[0];
        for (size_t s = 1; s < secs; s++) {
            if (per[s] > max1)
                max1 = per[s];
            if (per[s] < min1)
                min1 = per[s];
        }
        free(per);
    }
    printf(",\"distinct\":%zu,\"duplicates\":%zu,\"early\":%zu,\"p50_ms\":%" PRId64
           ",\"p90_ms\":%" PRId64 ",\"p99_ms\":%" PRId64 ",\"p999_ms\":%" PRId64
           ",\"max_ms\":%" PRId64 ",\"mean_ms\":%.2f,\"first_fired_ms\":%" PRId64
           ",\"last_fired_ms\":%" PRId64 ",\"events_per_s\":%.1f,\"max_1s\":%" PRId64
           ",\"min_1s\":%" PRId64 "}\n",
           distinct, m - distinct, early, rank(late, m, 0.50), rank(late, m, 0.90),
           rank(late, m, 0.99), rank(late, m, 0.999), late[m - 1], sum / (double)m, first, last,
           last > first ? (double)m * 1000.0 / (double)(last - first) : 0.0, max1, min1);
    free(late);
    free(keys);
    return 0;
}

int main(int argc, char **argv)
{
    struct group groups[MAX_GROUPS + 1] = {{"all", -1, -1}};
    size_t ngroups = 1;
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: " PROG
               " [NAME FROM_MS TO_MS]... < EVENTS (see tests/bench/scanner_stats.c)\n");
        return 0;
    }
    if ((argc - 1) % 3 != 0 || (argc - 1) / 3 > MAX_GROUPS) {
        fprintf(stderr, "usage: " PROG " [NAME FROM_MS TO_MS]... < EVENTS\n");
        return 2;
    }
    for (int i = 1; i < argc; i += 3) {
        struct group *g = &groups[ngroups++];
        g->name = argv[i];
        g->from = strtoll(argv[i + 1], NULL, 10);
        g->to = strtoll(argv[i + 2], NULL, 10);
        if (g->from < 0 || g->to < g->from || strchr(g->name, '"') || strchr(g->name, '\\')) {
            fprintf(stderr, PROG ": bad group %s %s %s\n", argv[i], argv[i + 1], argv[i + 2]);
            return 2;
        }
    }
    size_t n = 0, cap = 1 << 16, bad = 0;
    struct ev *evs = malloc(cap * sizeof *evs);
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while (evs && (len = getline(&line, &lcap, stdin)) >= 0) {
        struct ev e;
        const char *id = strstr(line, "\"id\":\"");
        const char *idend = id ? strchr(id + 6, '"') : NULL;
        if (!idend || field_i64(line, "\"deadline_ms\":", &e.deadline) < 0 ||
            field_i64(line, "\"fired_ms\":", &e.fired) < 0) {
            bad++;
            continue;
        }
        e.key = lapse_hash(id + 6, (size_t)(idend - id - 6)) ^
                ((uint64_t)e.deadline * 0x9E3779B97F4A7C15ULL);
        if (n == cap) {
            struct ev *more = realloc(evs, 2 * cap * sizeof *evs);
            if (!more) {
                free(evs);
                evs = NULL;
                break;
            }
            evs = more, cap *= 2;
        }
        evs[n++] = e;
    }
    free(line);
    if (!evs) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    if (bad)
        fprintf(stderr, PROG ": %zu lines were not events\n", bad);
    for (size_t g = 0; g < ngroups; g++)
        if (report(evs, n, &groups[g]) < 0) {
            fprintf(stderr, PROG ": out of memory\n");
            return 1;
        }
    free(evs);
    return 0;
}
