/*
 * producer_priv — the producer's internals, shared by its files and no others:
 * producer.c (the queue, coalescing, the public API), flight.c (the ring of
 * batches in flight), send.c (sending a batch the careful way: rounds of
 * phases, retries, the split protocol), send_pipe.c (pipelines, replies,
 * the pipelined send), send_fail.c (what a send reports failed, judged per
 * node and primary), send_plan.c (turning a batch into Redis calls),
 * send_split.c (what a split's replies say, the moved-ID cache),
 * confirm.c, degrade.c (nodes that do not answer, primaries short of
 * replicas) and probe.c. Calls go one way, from each file to those after
 * it in producer.c, flight.c, send.c, send_pipe.c, send_fail.c,
 * send_plan.c, send_split.c (confirm.c is called from flight.c and
 * send_pipe.c, degrade.c from send_pipe.c and send_fail.c; they call none
 * of them); only the queue's arena (producer_arena_put) is called back.
 * Not installed; not part of the library's API.
 */
#ifndef LAPSE_PRODUCER_PRIV_H
#define LAPSE_PRODUCER_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "layout.h"
#include "line.h"
#include "producer.h"
#include "redis.h"
#include "slack.h"

#define APPLY_CHUNK 256             /* ops per Lua call: keeps each call short for Redis */
#define FLIGHTS 16                  /* batches sent and not confirmed yet, at most (ring size) */
#define PIPELINE 4                  /* of those, sent and not read yet, at most */
#define MOVED_SLOTS (1u << 18)      /* moved-ID cache (send_split.c): table slots, a power of two */
#define MOVED_MAX (MOVED_SLOTS / 2) /* IDs it holds at most: probes stay short */
#define MOVED_BYTES (MOVED_MAX * 32) /* ID bytes it holds at most */
#define LAYOUT_REREAD_MS 1000        /* a send reads a layout this old again (send.c) */

/* producer_op.twin of an op taken whose seed call failed (the twin is left
 * to its lease) */
#define SEND_TWIN_UNSEEDED 'f'

struct producer_op {
    uint64_t hash; /* lapse_hash of the ID */
    char op;       /* enum lapse_apply_op (script.h): apply.lua's head */
    int recover;   /* with 'e': a watch, recovery on (apply.lua's flag W) */
    int has_payload;
    enum lapse_when_kind kind; /* of when_ms */
    int64_t when_ms;           /* as sent (slack included) */
    int64_t period_ms;         /* repeat only */
    size_t id_off, id_len;     /* in the arena */
    size_t pl_off, pl_len;     /* in the arena */
    size_t slot;               /* its position in the index, cleared at flush */
    uint64_t tag;
    int shared; /* another op of the same ID is in the batch */
    int done;   /* producer_send: applied (confirmed), or reported (send_fail.c) */
    int sent;   /* sent before (send_build): maybe applied, answered or not
                    (a batch in flight sent again after a disconnect): a repeat
                    sent again says so (apply.lua's flag G) and keeps its count */
    /* set for the current layout by send_plan.c (routing), send_split.c (twin): */
    uint32_t shard;        /* where the op applies */
    uint32_t old_shard;    /* during a split or merge: the ID's shard before it */
    int moving;            /* during a split or merge: shard != old_shard */
    int local;             /* moving, and both shards on one node: apply.lua
                                  finds the twin itself ("M ?"), no take/seed/drop */
    char twin;             /* take.lua's verdict: 0 not asked, enum lapse_take_state
                                  (script.h), or SEND_TWIN_UNSEEDED */
    int64_t twin_deadline; /* 't'/'b': the twin's deadline */
    int twin_has_pl;       /* 't': the twin's payload, repeat and lease */
    size_t twin_pl_off, twin_pl_len, twin_rep_off, twin_rep_len, lease_off, lease_len;
    size_t inherit_off, inherit_len; /* 'b': "1" + the twin's payload, or empty */
    int has_watch;                   /* drop gets watch_off: "o" and the ID's watch record */
    size_t watch_off, watch_len;     /* take.lua found in the old shard (it also goes to the
                                        new one: apply's flag O), or, for an op that forgets
                                        (send_forgets), "f" and that record or none */
};

struct moved_slot {
    uint64_t hash;     /* lapse_hash of the ID */
    uint32_t off, len; /* its bytes in moved_ids; len 0: empty slot */
};

/*
 * What send_plan.c derives from the layout, in one allocation, so that
 * lapse_producer_free releases all of it with free(p->keys): the shard key
 * names and, while splitting or merging, the moved-ID cache of the change (its table and
 * ID bytes follow the key names; see send_split.c). Replaced when the shard
 * count or the state changes; the cache is emptied when the epoch
 * does.
 */
struct producer_routes {
    struct moved_slot *moved;                      /* MOVED_SLOTS slots; NULL when stable */
    char *moved_ids;                               /* MOVED_BYTES bytes */
    size_t moved_n;                                /* IDs held */
    size_t moved_len;                              /* bytes of moved_ids used */
    char keys[][LAPSE_SHARD_NKEYS][LAPSE_KEY_MAX]; /* per shard: the keys of common/lua */
};

/* A batch's buffers: its ops and the bytes they point into. */
struct producer_batch {
    struct producer_op *ops;
    size_t nops, cap_ops;
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t seq; /* which batch it is (slack marks) */
};

/* An extend bounded slack absorbed while the write covering it (batch seq)
 * was not settled: if that write fails, the extend is reported with it. */
struct producer_absorbed {
    uint64_t hash, tag;
    uint32_t seq;
    uint32_t reported;
};

struct lapse_producer {
    const struct lapse_config *cfg;
    struct lapse_config *owned_cfg; /* lapse_producer_open's, freed with the handle; or NULL */
    lapse_redis **nodes;            /* one per cfg->nodes entry */
    int several_servers; /* the node is several servers (a cluster: lapse_redis_one_server) */
    struct lapse_layout layout;
    int64_t layout_read_ms;       /* monotonic: when the layout was read */
    struct producer_routes *keys; /* key names and moved-ID cache (see above) */
    struct producer_op *ops;
    size_t nops, cap_ops;
    uint32_t *index;   /* op index + 1 of the latest op per ID; 0 = empty */
    size_t index_mask; /* slots - 1 (a power of two >= 2 * batch) */
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t seq, last_seq; /* the queue's batch number; the last one given */
    /* Full batches sent and not confirmed yet (flight.c): a ring, oldest at
     * flight_first, nflight of them, the oldest nread of which were read
     * (applied; with redis.wait_replicas waiting for confirm.c).
     * sending[k] holds flight[k]'s calls while unread (send_pipe.c), read_no[k]
     * its number among the batches read, witness[k * nnodes + n] what
     * confirm_witness gave node n when it was sent (0: no write there).
     * Slots not in use keep their (empty) buffers. */
    struct producer_batch flight[FLIGHTS];
    struct send *sending[FLIGHTS];
    uint64_t read_no[FLIGHTS];
    uint64_t *witness;
    uint64_t
        upto[FLIGHTS]; /* flight[k]: stats.submitted when it was cut (lapse_producer_settled) */
    uint64_t settled;  /* lapse_producer_settled */
    size_t flight_first, nflight, nread;
    uint64_t reads;                   /* batches read so far */
    struct confirm_waiter *waiters;   /* per node, with redis.wait_replicas (confirm.c) */
    struct degrade_primary *degraded; /* primaries down or short of WAIT (degrade.c) */
    size_t ndegraded, cap_degraded;
    lapse_slack *slack;                 /* NULL unless producer.slack_ms > 0 */
    struct producer_absorbed *absorbed; /* while their covering write is unsettled */
    size_t nabsorbed, cap_absorbed;
    struct lapse_producer_stats stats;
    lapse_producer_error_cb *on_error;
    void *ctx;
};

/* Appends bytes to the arena; their offset in *off. 0 or -1 (no memory). */
int producer_arena_put(lapse_producer *p, const char *b, size_t len, size_t *off);

/* (Re)reads the layout and the shard key names (send_plan.c). 0, or -1
 * with errstr. */
int producer_load_layout(lapse_producer *p, char *errstr, size_t size);

/* flight.c: the ring of batches in flight (see each definition). */
void producer_swap(lapse_producer *p, struct producer_batch *b);
void producer_settled(lapse_producer *p, int rc);
int producer_read_one(lapse_producer *p, char *errstr, size_t size);
int producer_confirm_one(lapse_producer *p, char *errstr, size_t size);
int producer_collect(lapse_producer *p, char *errstr, size_t size);

/* Applies every queued op (send.c), reading each reply as it comes: no
 * reply of a producer_send_start may still be due on the connections (read
 * them first, or drop the connections). 0, or -1 with errstr after
 * reporting each op that could not be applied through on_error. */
int producer_send(lapse_producer *p, char *errstr, size_t size);

/* Sends every queued op without waiting for the replies, when nothing
 * needs a careful send (a fresh layout; during a split, no moving ID whose
 * old shard is on another node, unless the moved-ID cache knows it settled)
 * and, with redis.wait_replicas, every node it writes has a witness
 * (confirm_witness). Returns what producer_send_finish takes, or NULL when
 * the caller should use producer_send (then every batch in flight must be
 * sent again: the connections may have been dropped). Calls of several such
 * sends may be in flight at once; their replies are read in the order they
 * were sent. */
struct send *producer_send_start(lapse_producer *p);

/* Reads the replies of what producer_send_start sent (s; freed), with those
 * ops queued again (the batch swapped back in), and leaves in witness[n]
 * the witness of each node it wrote (0 for the others). Returns 0 when it
 * was applied (with redis.wait_replicas, not yet confirmed: confirm.c), or
 * -1 when anything fell short: then the connections were dropped, with the
 * replies of every later send in flight, and every unconfirmed batch must
 * be sent again with producer_send. */
int producer_send_finish(lapse_producer *p, struct send *s, uint64_t *witness);

/* Forgets what producer_send_start sent without reading its replies
 * (frees s; accepts NULL). */
void producer_send_abandon(struct send *s);

/*
 * The scratch memory of one send and the calls it plans: shared by send.c
 * (which runs the phases), send_pipe.c (which sends the calls and reads
 * the replies), send_plan.c (which plans them), send_fail.c (which judges
 * them) and send_split.c (which reads a split's replies into the ops).
 */
enum {
    SEND_OK = 0,
    SEND_RETRY = -1,
    SEND_STALE = -2,
    SEND_SHORT = -3 /* some primaries'
    WAITs saw too few replicas, or some nodes failed (send->short_shard, down); the
    others applied theirs */
};

struct send_call {
    enum lapse_script script;
    uint32_t shard;    /* whose keys the call takes */
    int with_old;      /* apply: also the old shard's keys (a local move) */
    const size_t *ops; /* the op indices it carries (into order or picked) */
    size_t count;
};

/* Scratch memory of one send, sized for the batch. */
struct send {
    lapse_producer *p;
    size_t *order;  /* op indices grouped by shard */
    size_t *picked; /* op indices of filtered calls (seed, drop) */
    size_t npicked;
    size_t *start; /* per shard: first index in order[] (+1 entry) */
    struct send_call *calls;
    size_t ncalls;
    const char **argv;
    size_t *argvlen;
    char (*nums)[3][32];        /* per op of a call: number strings */
    size_t *sent;               /* per node: calls sent, replies not yet read */
    unsigned char *waits;       /* per node: a WAIT follows them */
    int confirm;                /* append WAITs (redis.wait_replicas); not when pipelined */
    uint64_t *witness;          /* pipelined: per node, confirm_witness() when sent */
    uint64_t *conn;             /* pipelined: per node, the connection the calls went out
                               on (lapse_redis_reconnects) */
    unsigned char *short_shard; /* per shard: its primary's WAIT saw too few replicas,
                                   or (down) its node's calls failed */
    unsigned char *down;        /* per node: its calls failed this round (send_calls) */
    char (*down_why)[256];      /* per node: why (lapse_redis_errstr then) */
    char epoch[24];
    char plain[24]; /* apply.lua's count of plain pairs */
};

/* send_pipe.c: a send's scratch memory (send_new: NULL if out of memory;
 * send_free accepts NULL), and its planned calls sent, one pipeline per
 * node, their replies read (send_calls: SEND_OK, SEND_STALE or SEND_SHORT). */
struct send *send_new(lapse_producer *p);
void send_free(struct send *s);
int send_calls(struct send *s);

/* send_plan.c: turning the queue into calls (see each definition). */
void send_route(lapse_producer *p);
int send_taking(const struct producer_op *op);
int send_forgets(const struct producer_op *op);
size_t send_group(struct send *s, int old, int moving);
void send_plan(struct send *s, enum lapse_script script, int (*want)(const struct producer_op *));
int send_build(struct send *s, const struct send_call *c);

/* send_fail.c: reporting ops failed, judging them per node and primary
 * (see each definition). */
void send_report(struct send *s, const struct send_call *c, const char *reason);
void send_fail_ops(struct send *s, size_t *ops, size_t count, const char *reason, size_t *failed);
size_t send_gate(struct send *s, size_t *failed, char *errstr, size_t size);
size_t send_judge(struct send *s, size_t *failed, char *errstr, size_t size);
void send_take_down(struct send *s, size_t *failed, char *errstr, size_t size);

/* send_split.c: the moved-ID cache and a split's replies (see each
 * definition). */
int send_moved(lapse_producer *p, const struct producer_op *op);
int send_took(struct send *s, const struct send_call *c, const redisReply *r);
void send_unseeded(struct send *s, const struct send_call *c);
void send_settled(struct send *s, const struct send_call *c, const char *flags, size_t nflags);

/*
 * confirm — durable acknowledgement of pipelined batches (redis.wait_replicas).
 *
 * WAIT holds the connection it runs on until the replicas answered, so a
 * WAIT in the batches' own pipeline would stop Redis from running the
 * batches queued behind it for that long, once per WAIT. Instead each node
 * has a second connection, the waiter, which confirms batches already read:
 * an INCR of NS:w:N (N the node's index) then WAIT; WAIT covers the writes
 * of the connection it runs on, and the INCR is one, made after the
 * batches ran, so it covers everything the server applied before it.
 * That holds only on the server that applied them: a batch counts as
 * confirmed only by a WAIT from a waiter connection that was up, to the
 * address the batch was sent to, before the batch was sent and stayed up
 * until the WAIT answered (so no restart or failover came in between).
 */
struct confirm_waiter {
    lapse_redis *r;         /* the second connection to the node */
    uint64_t asked;         /* reads covered by the WAIT in flight; 0: none */
    uint64_t asked_witness; /* the connection it was sent on */
    uint64_t confirmed;     /* reads covered by the last WAIT that succeeded */
    uint64_t confirmed_witness;
};

/* Connects node n's waiter if needed; returns its witness (which connection
 * it is, never 0), or 0 when it cannot confirm writes sent to the node now
 * (not connected, or not to the address the node's connection is on). */
uint64_t confirm_witness(lapse_producer *p, size_t n);

/* 1 when batch slot k is confirmed on every node it wrote. */
int confirm_done(const lapse_producer *p, size_t k);

/* Makes progress towards confirming batch slot k: asks for a WAIT covering
 * every batch read so far where none is in flight, or else waits for the
 * answer of one in flight. 0, or -1 when the batch can no longer be
 * confirmed (too few replicas, a lost or replaced connection: send it
 * again). */
int confirm_step(lapse_producer *p, size_t k);

/* Asks for a WAIT on each node batch slot k (just read) wrote, where none
 * is in flight, so that it runs while more batches are sent. */
void confirm_kick(lapse_producer *p, size_t k);

void confirm_free(lapse_producer *p); /* the waiters; accepts none */

/*
 * degrade — primaries that do not answer, or whose WAITs see too few
 * replicas (see degrade.c): one retry window per primary, then fail fast,
 * probed with a back-off.
 */
struct degrade_primary;

/* The "host:port" of the primary serving shard (under the current layout;
 * "" when not known yet). */
const char *degrade_addr(lapse_producer *p, uint32_t shard);

/* NULL when writes for node n's primary at addr are to be sent; else the
 * reason (in why) to report them failed at once: its window closed and it
 * is not time to probe it. */
const char *degrade_gate(lapse_producer *p, size_t n, const char *addr, int64_t now, char *why,
                         size_t size);

/* 1 when writes for node n's primary at addr would go out as a probe of a
 * primary that answers but cannot confirm (its window closed, probe time):
 * the caller may first ask it how many replicas it has (send_fail.c). */
int degrade_probing(lapse_producer *p, size_t n, const char *addr, int64_t now);

/* That probe failed without a write: the primary has fewer replicas
 * connected than redis.wait_replicas. degrade_gate fails its writes at
 * once again until the next probe, one back-off step later. */
void degrade_probe_short(lapse_producer *p, size_t n, const char *addr, int64_t now);

/* A WAIT on node n's primary at addr saw too few replicas (reason: what it
 * said). 1 when its window has closed (report those writes failed), 0
 * while it is open (send them again). */
int degrade_short(lapse_producer *p, size_t n, const char *addr, const char *reason, int64_t now);

/* As degrade_short, for a primary that did not answer: the connection
 * failed or was lost (reason: lapse_redis_errstr). */
int degrade_down(lapse_producer *p, size_t n, const char *addr, const char *reason, int64_t now);

/* That primary answered, and a WAIT there (if asked) saw enough
 * replicas: it is fine again; unless node n is a cluster, so is the node
 * (its entries of primaries that did not answer go, e.g. the one a
 * failover replaced). */
void degrade_ok(lapse_producer *p, size_t n, const char *addr);

/* 1 while some primary is failing to answer or to confirm (then batches
 * take the careful way: producer_send judges each primary). */
int degrade_any(lapse_producer *p);

void degrade_free(lapse_producer *p); /* accepts none */

#endif
