/*
 * layout — the shard layout record of a namespace, and the Redis key names.
 *
 * The record is the hash NS:layout on the first configured Redis node:
 *   shards       N, a power of two
 *   prev_shards  N before the change under way (= N when stable): N/2 while
 *                splitting, 2N while merging
 *   epoch        bumped by every layout change
 *   state        "stable", "splitting" or "merging" (any other is refused:
 *                lapse_layout_read)
 *   retired      (once a merge finished) the most shards the namespace had:
 *                shards from the count up to it were retired by a merge
 *   nodes        the node of each shard, comma-separated, in shard order (of
 *                both counts' larger, lapse_layout_span, during a change): its
 *                name (lapse_node_name), "host:port" for a plain node, the
 *                master name for a Sentinel one, so a failover changes nothing
 * Shard I's data lives on its node under NS:z:I (zset ID -> deadline ms),
 * NS:p:I (hash ID -> payload), NS:f:I (hash lease -> the IDs leased with
 * it and their deadlines: common/lua/lib/inflight.lua), NS:r:I (hash ID -> "period_ms:fired" of repeating IDs) and,
 * during a split or merge, NS:m:I (IDs moved into shard I); NS:l:I is the lock of
 * its active scanner (token, with a PX lease) and NS:e:I the layout epoch the
 * shard was fenced at: scripts refuse callers with an older layout. NS:s:I
 * and NS:b:I let an idle scanner sleep until it is due or woken (sleep.lua,
 * lib/wake.lua; scripts name them from NS:z:I, so their letters are fixed).
 * Producers and scanners read the record; lapse-scale writes it.
 *
 * The whole key table (every key, its type and contents, the Cluster hash
 * tags, small keys) is docs/protocol.md, "Redis keys": a key added or
 * changed here is added or changed there.
 */
#ifndef LAPSE_LAYOUT_H
#define LAPSE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "hash.h"
#include "redis.h"

enum lapse_layout_state {
    LAPSE_LAYOUT_STABLE,
    LAPSE_LAYOUT_SPLITTING, /* shards = 2 prev_shards: IDs move from i to i + prev_shards */
    LAPSE_LAYOUT_MERGING,   /* prev_shards = 2 shards: IDs move from j to j - shards */
};

struct lapse_layout {
    uint32_t shards;      /* N: the shards once the change under way is done */
    uint32_t prev_shards; /* N before the change under way, else N */
    int64_t epoch;        /* layout version */
    enum lapse_layout_state state;
    uint16_t *node_of; /* lapse_layout_span entries: index into cfg->nodes */
    uint32_t retired;  /* shards [span, retired) were retired by a merge ("retired"
                             field; 0: none ever was) */
    int small_keys;    /* field keys = "small": new shards start in small keys
                             (bucket.h; init --small-keys) */
};

/*
 * A layout change in terms of homes, which is how routing and checks ask
 * about it (never by the shard counts): an ID of hash h lived in its old
 * home before the change and lives in its new home after; the two differ
 * for the IDs that move, and never while stable. The shards pair up: each
 * shard that gives moving IDs away gives them all to one other, its pair
 * (s XOR the smaller count). A split N -> 2N moves the IDs whose hash has
 * bit N set from shard i to its pair i + N (docs/design.md, "Splits: how
 * they stay exact"); a merge 2N -> N, the same change run backwards, moves
 * every ID of shard j = i + N into its pair i ("Merges").
 */

/* A split or a merge is under way. */
static inline int lapse_layout_changing(const struct lapse_layout *l)
{
    return l->state != LAPSE_LAYOUT_STABLE;
}

/* "stable", "splitting" or "merging": the record's word, and the displays'. */
const char *lapse_layout_state_name(enum lapse_layout_state state);

static inline uint32_t lapse_layout_old_home(const struct lapse_layout *l, uint64_t h)
{
    return lapse_shard_of(h, lapse_layout_changing(l) ? l->prev_shards : l->shards);
}

static inline uint32_t lapse_layout_new_home(const struct lapse_layout *l, uint64_t h)
{
    return lapse_shard_of(h, l->shards);
}

static inline int lapse_layout_moves(const struct lapse_layout *l, uint64_t h)
{
    return lapse_layout_changing(l) && lapse_layout_old_home(l, h) != lapse_layout_new_home(l, h);
}

/* How many shards exist during the change: both counts' larger. */
static inline uint32_t lapse_layout_span(const struct lapse_layout *l)
{
    return l->shards > l->prev_shards ? l->shards : l->prev_shards;
}

/* Shard s gives moving IDs away (it is their old home): while splitting,
 * every old shard (some of its IDs); while merging, each retiring one (all
 * of its IDs). */
static inline int lapse_layout_gives(const struct lapse_layout *l, uint32_t s)
{
    return (l->state == LAPSE_LAYOUT_SPLITTING && s < l->prev_shards) ||
           (l->state == LAPSE_LAYOUT_MERGING && s >= l->shards && s < l->prev_shards);
}

/* Shard s receives moving IDs (it is their new home). */
static inline int lapse_layout_receives(const struct lapse_layout *l, uint32_t s)
{
    return (l->state == LAPSE_LAYOUT_SPLITTING && s >= l->prev_shards && s < l->shards) ||
           (l->state == LAPSE_LAYOUT_MERGING && s < l->shards);
}

/* The other shard of s's pair in the change (s gives or receives). */
static inline uint32_t lapse_layout_pair(const struct lapse_layout *l, uint32_t s)
{
    return s ^ (l->shards < l->prev_shards ? l->shards : l->prev_shards);
}

/* Shard s existed and a merge retired it: its scanner stops by itself, exit
 * 0 (scanner/lease.c); a shard past every count the namespace had is a
 * mistake instead. */
static inline int lapse_layout_retired(const struct lapse_layout *l, uint32_t s)
{
    return s >= lapse_layout_span(l) && s < l->retired;
}

enum lapse_key_kind {
    LAPSE_KEY_DUE = 'z',      /* zset ID -> deadline */
    LAPSE_KEY_PAYLOAD = 'p',  /* hash ID -> payload */
    LAPSE_KEY_INFLIGHT = 'f', /* hash lease -> record of its IDs and deadlines */
    LAPSE_KEY_REPEAT = 'r',   /* hash ID -> "period_ms:fired" of a repeating ID */
    LAPSE_KEY_MOVED = 'm',    /* set: IDs written in this new shard during a split */
    LAPSE_KEY_LOCK = 'l',     /* string: token of the shard's active scanner */
    LAPSE_KEY_EPOCH = 'e',    /* string: the layout epoch this shard has seen */
    LAPSE_KEY_LEASE =
        'c', /* string: the shard's last claim lease, when its first record runs out (claim.lua only) */
    LAPSE_KEY_WAIT = 'w',         /* counter per node (not shard), INCRed before each
                                 WAIT so that it covers every earlier write (redis.h) */
    LAPSE_KEY_SLEEP = 's',        /* string: the lowest score the shard's idle scanner saw
                                 ("inf": none); it sleeps until then at most (sleep.lua) */
    LAPSE_KEY_BELL = 'b',         /* list: a write below that mark pushes a token here,
                                 waking the scanner blocked on it (lib/wake.lua) */
    LAPSE_KEY_INDEX = 'x',        /* zset bucket -> a lower bound of its lowest score,
                                 of a shard in small keys (bucket.h) */
    LAPSE_KEY_BUCKETS = 'k',      /* string "b s" [flags]: the shard is in small keys
                                 (bucket.h); absent: it is one zset */
    LAPSE_KEY_WATCH = 'o',        /* hash ID -> "" (recovery on) or "D F" (offline: its timeout
                                 for deadline D fired, Kafka took it at F), lib/watch.lua */
    LAPSE_KEY_OFFLINE = 'n',      /* string: how many IDs of the shard are offline */
    LAPSE_KEY_WATCH_HASHES = 'v', /* string "b s c": a shard in one zset keeps its watch
                                     records in small hashes NS:o:I:wJ, 2^b + s of them,
                                     c records (lib/bucket.lua) */
    LAPSE_KEY_PROBE = 'q',        /* never written: scripts of a shard in small keys ask
                                 for it to learn that its slot is migrating (a Redis
                                 Cluster refuses a missing key then; lib/bucket.lua) */
};

/* A key's length at most, with its NUL (lapse_key, lapse_key_layout). */
#define LAPSE_KEY_MAX (2 * LAPSE_NS_MAX + 32)

/* The keys every shard script takes, in this order (see common/lua). */
#define LAPSE_SHARD_NKEYS 7
extern const enum lapse_key_kind lapse_shard_keys[LAPSE_SHARD_NKEYS];

/* cfg->nodes[index]'s handle (lapse_redis_new), its WAIT key in the
 * namespace: NS:w:<index> (on a cluster NS:w:{<tag>}, a key per primary).
 * NULL on allocation failure. */
lapse_redis *lapse_node_open(const struct lapse_config *cfg, size_t index);

/* Writes "NS:K:SHARD" into buf; returns its length. */
int lapse_key_shard(char *buf, size_t size, const char *ns, enum lapse_key_kind kind,
                    uint32_t shard);

/* The same key with the shard's hash tag, "NS:K:{NS:SHARD}", as on a Redis
 * Cluster: every key of one shard then hashes to one slot (cluster.h), the
 * one lapse_shard_slot returns. Returns its length. */
int lapse_key_tagged(char *buf, size_t size, const char *ns, enum lapse_key_kind kind,
                     uint32_t shard);
uint16_t lapse_shard_slot(const char *ns, uint32_t shard);

/* The key lapse uses for shard `shard`'s `kind` in cfg's namespace:
 * lapse_key_tagged on a Redis Cluster (redis.cluster), lapse_key_shard on
 * plain and Sentinel nodes (their keys keep the names they always had, so
 * no data moves). Returns its length. */
int lapse_key(char *buf, size_t size, const struct lapse_config *cfg, enum lapse_key_kind kind,
              uint32_t shard);

/* The key of layout record `which` ("layout" or "layout:next"): NS:which,
 * and NS:which:{NS} on a cluster, where both records must share a slot (a
 * split publishes one into the other in one script). Returns its length. */
int lapse_key_layout(char *buf, size_t size, const struct lapse_config *cfg, const char *which);

/*
 * Reads the layout of cfg->ns through `home` (the connection to
 * cfg->nodes[0]) into `out`. Returns 0; 1 if the namespace has no layout yet
 * (not initialised); -2 with errstr when no reply came (a lost connection,
 * a failover, a cluster slot moving: trying again may help); -1 with it on
 * an error reply or a malformed record (including a node the config does
 * not list). `out` is left empty unless 0
 * is returned; free it with lapse_layout_free.
 */
int lapse_layout_load(lapse_redis *home, const struct lapse_config *cfg, struct lapse_layout *out,
                      char *errstr, size_t size);

/* The same for another record of the namespace: which = "layout" or
 * "layout:next" (an interrupted split's target, see split.h). */
int lapse_layout_read(lapse_redis *home, const struct lapse_config *cfg, const char *which,
                      struct lapse_layout *out, char *errstr, size_t size);

/* The "nodes" field of `l`: a node name per shard, comma-separated. A
 * malloc'd string the caller frees; NULL if out of memory. */
char *lapse_layout_nodes(const struct lapse_config *cfg, const struct lapse_layout *l);

/*
 * Creates the layout with `shards` shards (a power of two) placed round-robin
 * on the configured nodes, atomically. Returns 0 if created, 1 if the
 * namespace already has exactly that many shards (nothing changed), -1 with
 * errstr otherwise (already initialised with another count, Redis error).
 */
enum lapse_init_form {
    LAPSE_INIT_ONE_ZSET, /* a new namespace in one zset a shard */
    LAPSE_INIT_CONVERT,  /* a new namespace in small keys (bucket.h), and an existing
                            one marked so (its shards are then converted:
                            lapse_layout_small_keys) */
};
int lapse_layout_init(lapse_redis *home, const struct lapse_config *cfg, uint32_t shards,
                      enum lapse_init_form form, char *errstr, size_t size);

/*
 * Starts shards from..l->shards-1 of `l` in small keys (bucket.h): writes
 * each one's state key on its node unless it has one: "0 0" for a fresh
 * shard; for one holding IDs in one zset, as many buckets as fit them, and
 * the programs then move the IDs into buckets as they run (online, nothing
 * stops). Idempotent; waits for wait_replicas. Returns 0, or -1 with errstr.
 */
int lapse_layout_small_keys(lapse_redis **nodes, const struct lapse_config *cfg,
                            const struct lapse_layout *l, uint32_t from, char *errstr, size_t size);

void lapse_layout_free(struct lapse_layout *l); /* accepts an all-zero layout */

#endif
