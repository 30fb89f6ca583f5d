/*
 * script — the server-side Lua scripts lapse runs (the .lua files of common/lua, embedded
 * at build time). Each is loaded once per connection with SCRIPT LOAD and
 * called by SHA; lapse_redis reloads them after a reconnect or NOSCRIPT.
 */
#ifndef LAPSE_SCRIPT_H
#define LAPSE_SCRIPT_H

#include <stddef.h>

enum lapse_script {
    LAPSE_SCRIPT_APPLY = 0, /* producer ops on one shard (apply.lua) */
    LAPSE_SCRIPT_CLAIM,     /* take due IDs for dispatch (claim.lua) */
    LAPSE_SCRIPT_ACK,       /* compare-and-delete after Kafka ack (ack.lua) */
    LAPSE_SCRIPT_ACQUIRE,   /* become a shard's active scanner (acquire.lua) */
    LAPSE_SCRIPT_RELEASE,   /* give the shard up on shutdown (release.lua) */
    LAPSE_SCRIPT_TAKE,      /* split: reserve old-shard twins (take.lua) */
    LAPSE_SCRIPT_SEED,      /* split: copy twins into the new shard (seed.lua) */
    LAPSE_SCRIPT_DROP,      /* split: remove stale twins (drop.lua) */
    LAPSE_SCRIPT_SLEEP,     /* idle scanner: renew the lock, mark its nap (sleep.lua) */
    LAPSE_SCRIPT_MOVED,     /* split: which IDs a new shard holds markers of (moved.lua) */
    LAPSE_SCRIPT_FORGET,    /* scanner: offline IDs past the retention (forget.lua) */
    LAPSE_SCRIPT_COUNT
};

/* apply.lua's op heads (its header): an op's one tag from the producer's
 * API (enum lapse_op, mapped once when submitted) to the script. */
enum lapse_apply_op {
    LAPSE_APPLY_TOUCH = 't',
    LAPSE_APPLY_EXTEND = 'e', /* a watch too, with the flag W */
    LAPSE_APPLY_REPEAT = 'r',
    LAPSE_APPLY_CANCEL = 'c',
};

/* apply.lua's reply when it is an array (else the number of ops that
 * changed something), by name; read by lapse_apply_read only: */
enum lapse_apply_part {
    LAPSE_APPLY_CHANGED, /* the number of ops that changed something */
    LAPSE_APPLY_MOVED,   /* with the old shard's keys: a flag per "M ?" op, else "" */
    LAPSE_APPLY_NOW,     /* when an op's time was relative: the shard's clock, ms */
};

/* take.lua's state of a twin (LAPSE_TAKE_STATE below) */
enum lapse_take_state {
    LAPSE_TAKE_TAKEN = 't',  /* taken: leased to the caller, to seed then drop */
    LAPSE_TAKE_BUSY = 'b',   /* in flight: a scanner's claim holds it */
    LAPSE_TAKE_ABSENT = 'a', /* not in the old shard */
};

/* take.lua's reply, by name: the lease (element 0), then for each ID asked
 * LAPSE_TAKE_PARTS elements (its header says what each holds). */
enum lapse_take_part {
    LAPSE_TAKE_STATE,    /* "t" taken, "b" busy (in flight), "a" absent */
    LAPSE_TAKE_DEADLINE, /* the twin's deadline (t, b) */
    LAPSE_TAKE_PAYLOAD,  /* its payload, or nil */
    LAPSE_TAKE_REPEAT,   /* its repeat record, or nil */
    LAPSE_TAKE_WATCH,    /* its watch record (lib/watch.lua), or nil */
    LAPSE_TAKE_PARTS
};

/* The Lua source of script `s`. */
const char *lapse_script_source(enum lapse_script s);

/*
 * The fences, one convention for every script. A script that checks the
 * shard's layout epoch (apply, take, seed, claim, sleep) answers the error
 * "STALE <epoch>" (the shard's, newer than the caller's) and changes
 * nothing: the caller reloads the layout and routes again. A script that
 * checks the shard's lock (claim, sleep, ack, forget) answers the error
 * "FENCED lock not held" and changes nothing: the caller lost the shard. Decoded here
 * only.
 */
enum lapse_fence {
    LAPSE_FENCE_NONE = 0, /* no fence: the script's own reply (or another error) */
    LAPSE_FENCE_STALE,    /* the layout changed: *epoch is the shard's */
    LAPSE_FENCE_LOCK,     /* the lock is not the caller's */
};

struct redisReply;

/*
 * The arguments of a split's scripts, built here for both of their callers
 * (the producer's send_plan.c and lapse-scale's split_move.c), so a change
 * of the scripts' forms is made once. Each appends at v[n], l[n] and
 * returns the new n; the strings must live until the call is sent.
 */

/* What an apply call's reply r (not an error) says beyond its count: the
 * "M ?" ops' flags ('1': the ID settled here; *moved "" when none) and the
 * shard's clock in ms that its relative times resolved to (*now -1: none). */
void lapse_apply_read(const struct redisReply *r, const char **moved, size_t *nmoved,
                      long long *now);

/* take.lua's first two: the caller's layout epoch, the lease in ms (then
 * one argument an ID, appended by the caller) */
int lapse_take_head(const char **v, size_t *l, int n, const char *epoch, const char *lease_ms);

/* An ID's twin as take.lua answered it (lapse_take_twin); seeded when
 * TAKEN (lapse_seed_twin). Its strings point into the reply. */
struct lapse_twin {
    const char *id; /* set by the caller: take's reply does not repeat it */
    size_t id_len;
    char state;         /* enum lapse_take_state */
    long long deadline; /* TAKEN: its deadline; BUSY: the one being dispatched (0: none) */
    int has_payload;
    const char *payload; /* has_payload: its bytes (TAKEN, BUSY) */
    size_t payload_len;
    const char *repeat; /* TAKEN: its repeat record, or "" */
    size_t repeat_len;
    int has_watch;
    const char *watch; /* has_watch: its watch record (lib/watch.lua) */
    size_t watch_len;
};

/* take.lua's reply to a call for `count` IDs: 0 when it is one (every part
 * of the type its header says), else -1. */
int lapse_take_check(const struct redisReply *r, size_t count);

/* Of a reply lapse_take_check accepted: the lease its taken twins are held
 * under, and the twin of the k-th ID asked (its id left unset). */
const struct redisReply *lapse_take_lease(const struct redisReply *r);
void lapse_take_twin(const struct redisReply *r, size_t k, struct lapse_twin *t);

/* seed.lua's five for one twin (after its first argument, the epoch);
 * num holds the deadline's digits */
int lapse_seed_twin(const char **v, size_t *l, int n, const struct lapse_twin *t, char num[32]);

/* drop.lua's two for one twin taken under `lease` (take.lua's first part) */
int lapse_drop_taken(const char **v, size_t *l, int n, const char *id, size_t id_len,
                     const char *lease, size_t lease_len);

/* Which fence, if any, reply r is; with LAPSE_FENCE_STALE and `epoch`,
 * the shard's epoch in *epoch (0 when the reply does not say). r may be
 * NULL (no reply: no fence). */
enum lapse_fence lapse_script_fence(const struct redisReply *r, long long *epoch);

#endif
