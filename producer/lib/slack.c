/*
 * slack — see slack.h. An open-addressing hash table keyed by the ID's XXH64
 * (which the producer computes anyway to find the shard), with linear
 * probing over an array of one-cache-line slots.
 *
 * Why: the table is looked up once per incoming signal, millions of times a
 * second, and with 100k+ IDs it is far larger than the caches. A chained
 * table costs two dependent misses per lookup (bucket, then entry) and a
 * malloc/free per entry. Here a slot holds the hash, the deadline and the ID
 * itself (when it fits, as device IDs mostly do), so a lookup usually reads
 * one cache line; a probe run continues into the next lines, which the
 * hardware prefetcher fetches in sequence. The slot array is 64-byte aligned
 * so a slot never straddles two lines, and a large one asks for transparent
 * huge pages, which spares a TLB miss per lookup.
 *
 * Invariants:
 *   - a slot is empty iff its hash is 0; a real hash of 0 is stored as
 *     SLACK_HASH0 (lookups map it the same way). Hashes only narrow the
 *     search: an ID matches only when its length and bytes are equal, since
 *     a false "covered" would fire a deadline early;
 *   - every entry lies on the probe run from its home slot (hash & mask)
 *     with no empty slot in between: deletion shifts the following entries
 *     back (no tombstones), so a lookup stops at the first empty slot;
 *   - at most SLACK_LOAD_NUM/SLACK_LOAD_DEN of the slots are in use, so runs
 *     stay short and some slot is always empty (lookups end);
 *   - an ID longer than SLACK_INLINE bytes lives in a malloc'd copy owned by
 *     its slot, freed when the entry is forgotten, swept or the table freed.
 *
 * When a new ID would pass the load limit, the live entries (deadline >=
 * now) are moved into a fresh array — twice as large if they still fill a
 * quarter of the old one, else of the same size — and the expired ones are
 * dropped. The new array is allocated before anything changes, so a failure
 * leaves the table as it was.
 */
#include "slack.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ID bytes kept in the slot itself; longer IDs are stored out of line. */
#define SLACK_INLINE 40
/* What a real hash of 0 is stored as (0 marks an empty slot). */
#define SLACK_HASH0 0x9e3779b97f4a7c15ULL
/* The most slots in use before the table is swept or grown: 13/16. High for
 * linear probing, on purpose: a lookup is one miss either way (a run of
 * slots is a run of adjacent lines, which the prefetcher streams), and what
 * sets that miss's cost is the array's size, which a lower limit doubles
 * (measured: 100k IDs in 8 MiB look up about twice as fast as in 16 MiB). */
#define SLACK_LOAD_NUM 13
#define SLACK_LOAD_DEN 16
#define SLACK_MIN_SLOTS 256
/* From this size on, the slot array is aligned to a huge page and asks the
 * kernel for transparent huge pages. */
#define SLACK_HUGE ((size_t)2 << 20)

struct slack_slot {
    uint64_t hash;    /* the ID's XXH64 (SLACK_HASH0 for 0); 0: empty */
    int64_t deadline; /* what was written, absolute ms */
    uint32_t len;     /* the ID's length, 1..512 */
    uint32_t mark;    /* the caller's, given with the deadline */
    /* The ID when len <= SLACK_INLINE; else the first bytes hold a char *
     * to a malloc'd copy (copied with memcpy: the field is not aligned). */
    char id[SLACK_INLINE];
};
_Static_assert(sizeof(struct slack_slot) == 64, "a slot is one cache line");

struct lapse_slack {
    struct slack_slot *slots; /* nslots slots, 64-byte aligned */
    size_t nslots;            /* a power of two */
    size_t count;             /* slots in use */
};

static uint64_t slack_key(uint64_t hash)
{
    return hash ? hash : SLACK_HASH0;
}

/* The out-of-line copy of a long ID. */
static char *slot_ext(const struct slack_slot *sl)
{
    char *p;
    memcpy(&p, sl->id, sizeof p);
    return p;
}

static const char *slot_id(const struct slack_slot *sl)
{
    return sl->len <= SLACK_INLINE ? sl->id : slot_ext(sl);
}

/* Frees what an entry owns, before its slot is emptied or overwritten. */
static void slot_release(struct slack_slot *sl)
{
    if (sl->len > SLACK_INLINE)
        free(slot_ext(sl));
}

/* A zeroed (all empty) array of n slots, or NULL. */
static struct slack_slot *slack_alloc(size_t n)
{
    size_t size = n * sizeof(struct slack_slot);
    void *p;
    if (posix_memalign(&p, size >= SLACK_HUGE ? SLACK_HUGE : 64, size) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (size >= SLACK_HUGE)
        (void)madvise(p, size, MADV_HUGEPAGE); /* only a hint: fine without */
#endif
    memset(p, 0, size); /* after madvise, so the pages fault in huge */
    return p;
}

lapse_slack *lapse_slack_new(void)
{
    lapse_slack *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->nslots = SLACK_MIN_SLOTS;
    if (!(s->slots = slack_alloc(s->nslots))) {
        free(s);
        return NULL;
    }
    return s;
}

void lapse_slack_free(lapse_slack *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i].hash)
            slot_release(&s->slots[i]);
    free(s->slots);
    free(s);
}

/* The slot holding the ID, or the empty slot ending its probe run (where it
 * would go). `key` is slack_key(hash). */
static struct slack_slot *slack_find(const lapse_slack *s, uint64_t key, const char *id, size_t len)
{
    size_t mask = s->nslots - 1;
    for (size_t i = key & mask;; i = (i + 1) & mask) {
        struct slack_slot *sl = &s->slots[i];
        if (sl->hash == key) {
            if (sl->len == len && memcmp(slot_id(sl), id, len) == 0)
                return sl;
        } else if (!sl->hash)
            return sl;
    }
}

int lapse_slack_covered(const lapse_slack *s, uint64_t hash, const char *id, size_t len, int64_t at,
                        uint32_t *mark)
{
    const struct slack_slot *sl = slack_find(s, slack_key(hash), id, len);
    if (!sl->hash || sl->deadline < at)
        return 0;
    if (mark)
        *mark = sl->mark;
    return 1;
}

/* Moves the live entries (deadline >= now) into a new array, twice as large
 * if they fill a quarter of the old one, and frees the expired ones.
 * Returns 0, or -1 on allocation failure (the table is unchanged). */
static int slack_rebuild(lapse_slack *s, int64_t now)
{
    size_t live = 0;
    for (size_t i = 0; i < s->nslots; i++)
        live += s->slots[i].hash && s->slots[i].deadline >= now;
    /* A quarter at most: over half of the slots fill before the next
     * rebuild, so sweeping costs O(1) per insert, amortized. */
    size_t n = live >= s->nslots / 4 ? s->nslots * 2 : s->nslots;
    struct slack_slot *b = slack_alloc(n);
    if (!b)
        return -1;
    size_t mask = n - 1;
    for (size_t i = 0; i < s->nslots; i++) {
        struct slack_slot *sl = &s->slots[i];
        if (!sl->hash)
            continue;
        if (sl->deadline < now) {
            slot_release(sl);
            continue;
        }
        size_t j = sl->hash & mask;
        while (b[j].hash)
            j = (j + 1) & mask;
        b[j] = *sl;
    }
    free(s->slots);
    s->slots = b;
    s->nslots = n;
    s->count = live;
    return 0;
}

int lapse_slack_set(lapse_slack *s, uint64_t hash, const char *id, size_t len, int64_t deadline,
                    int64_t now, uint32_t mark)
{
    uint64_t key = slack_key(hash);
    struct slack_slot *sl = slack_find(s, key, id, len);
    if (sl->hash) {
        sl->deadline = deadline;
        sl->mark = mark;
        return 0;
    }
    /* A new ID: its copy first, so a failure to grow needs no undoing. */
    char *copy = NULL;
    if (len > SLACK_INLINE) {
        if (!(copy = malloc(len)))
            return -1;
        memcpy(copy, id, len);
    }
    if ((s->count + 1) * SLACK_LOAD_DEN > s->nslots * SLACK_LOAD_NUM) {
        if (slack_rebuild(s, now) < 0) {
            free(copy);
            return -1;
        }
        sl = slack_find(s, key, id, len);
    }
    sl->hash = key;
    sl->deadline = deadline;
    sl->len = (uint32_t)len;
    sl->mark = mark;
    if (copy)
        memcpy(sl->id, &copy, sizeof copy);
    else
        memcpy(sl->id, id, len);
    s->count++;
    return 0;
}

void lapse_slack_forget(lapse_slack *s, uint64_t hash, const char *id, size_t len)
{
    struct slack_slot *sl = slack_find(s, slack_key(hash), id, len);
    if (!sl->hash)
        return;
    slot_release(sl);
    s->count--;
    /* Backward shift: each later entry of the run that may sit in the hole
     * (its home is not between the hole and itself) moves into it, and its
     * old slot becomes the hole, until the run ends. */
    size_t mask = s->nslots - 1;
    size_t hole = (size_t)(sl - s->slots);
    for (size_t j = (hole + 1) & mask; s->slots[j].hash; j = (j + 1) & mask) {
        size_t home = s->slots[j].hash & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            s->slots[hole] = s->slots[j];
            hole = j;
        }
    }
    s->slots[hole].hash = 0;
}

size_t lapse_slack_count(const lapse_slack *s)
{
    return s->count;
}

void lapse_slack_prefetch(const lapse_slack *s, uint64_t hash)
{
    __builtin_prefetch(&s->slots[slack_key(hash) & (s->nslots - 1)]);
}
