/* slack — see slack.h. A chained hash table keyed by the ID's XXH64, which
 * the producer computes anyway to find the shard. */
#include "slack.h"

#include <stdlib.h>
#include <string.h>

struct slack_entry {
    struct slack_entry *next;
    uint64_t hash;
    int64_t deadline; /* what was written, absolute ms */
    size_t len;
    char id[];
};

struct lapse_slack {
    struct slack_entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;
};

lapse_slack *lapse_slack_new(void)
{
    lapse_slack *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->nbuckets = 1024;
    s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
    if (!s->buckets) {
        free(s);
        return NULL;
    }
    return s;
}

void lapse_slack_free(lapse_slack *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nbuckets; i++)
        for (struct slack_entry *e = s->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(s->buckets);
    free(s);
}

static struct slack_entry **slack_find(const lapse_slack *s, uint64_t hash, const char *id,
                                       size_t len)
{
    struct slack_entry **pe = &s->buckets[hash & (s->nbuckets - 1)];
    for (; *pe; pe = &(*pe)->next)
        if ((*pe)->hash == hash && (*pe)->len == len && memcmp((*pe)->id, id, len) == 0)
            break;
    return pe;
}

int lapse_slack_covered(const lapse_slack *s, uint64_t hash, const char *id, size_t len, int64_t at)
{
    const struct slack_entry *e = *slack_find(s, hash, id, len);
    return e && e->deadline >= at;
}

/* Drops entries whose deadline passed; then doubles the table if it is
 * still fuller than one entry per four buckets. */
static int slack_grow(lapse_slack *s, int64_t now)
{
    for (size_t i = 0; i < s->nbuckets; i++)
        for (struct slack_entry **pe = &s->buckets[i]; *pe;) {
            struct slack_entry *e = *pe;
            if (e->deadline < now) {
                *pe = e->next;
                free(e);
                s->count--;
            } else
                pe = &e->next;
        }
    if (s->count < s->nbuckets / 4)
        return 0;
    size_t n = s->nbuckets * 2;
    struct slack_entry **b = calloc(n, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < s->nbuckets; i++)
        for (struct slack_entry *e = s->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
    return 0;
}

int lapse_slack_set(lapse_slack *s, uint64_t hash, const char *id, size_t len, int64_t deadline,
                    int64_t now)
{
    struct slack_entry **pe = slack_find(s, hash, id, len);
    if (*pe) {
        (*pe)->deadline = deadline;
        return 0;
    }
    if (2 * s->count >= s->nbuckets) { /* short chains: a lookup per signal */
        if (slack_grow(s, now) < 0)
            return -1;
        pe = slack_find(s, hash, id, len);
    }
    struct slack_entry *e = malloc(sizeof *e + len);
    if (!e)
        return -1;
    e->hash = hash;
    e->deadline = deadline;
    e->len = len;
    memcpy(e->id, id, len);
    e->next = *pe;
    *pe = e;
    s->count++;
    return 0;
}

void lapse_slack_forget(lapse_slack *s, uint64_t hash, const char *id, size_t len)
{
    struct slack_entry **pe = slack_find(s, hash, id, len);
    if (*pe) {
        struct slack_entry *e = *pe;
        *pe = e->next;
        free(e);
        s->count--;
    }
}

size_t lapse_slack_count(const lapse_slack *s) { return s->count; }
