/*
 * producer — the library a pipeline links to set, reset and cancel deadlines.
 *
 *   char err[256];
 *   lapse_producer *p = lapse_producer_open("lapse.conf", on_error, ctx, err, sizeof err);
 *   lapse_producer_extend(p, "dev-42", 6, LAPSE_WHEN_REL, 60000, NULL, 0, tag, err, sizeof err);
 *   ...                                   // queued: nothing waits for Redis
 *   lapse_producer_flush(p, err, sizeof err);  // everything queued is applied
 *   lapse_producer_free(p);
 *
 * Operations are queued per shard and sent as one Lua call per shard and
 * chunk, pipelined per Redis node; per ID they apply in submission order.
 * Within one batch only the net effect per ID goes to Redis (coalescing:
 * touch, touch, touch -> the last touch; extend +5 s, extend +9 s ->
 * extend +9 s), with the same result as applying every operation. Queueing
 * never blocks, except that reaching producer.batch queued operations sends
 * them: that batch goes out without waiting for Redis's answer; up to four
 * such batches are in flight, their answers read oldest first, so Redis
 * applies earlier batches while later ones are queued (with
 * redis.wait_replicas, read batches are kept, up to 16 in all, until a WAIT
 * confirmed them). Callers that stream should flush whenever no more input
 * is waiting, so a lone operation is not held back; lapse_producer_flush
 * returns only once everything submitted before it is applied (and, with
 * redis.wait_replicas, confirmed).
 *
 * With producer.slack_ms > 0, extends are coalesced across batches too
 * (operating.md, "Bounded slack"): an extend already covered by what this
 * producer wrote is absorbed without a Redis write, and a write stores
 * deadline + slack. Never early, at most slack_ms late — provided this
 * producer is the only writer of those IDs (another writer's cancel is not
 * seen by the memory of what was written until that deadline passes).
 *
 * Errors: an operation the library refuses (bad ID, time out of range) fails
 * at once with errstr; one Redis refuses is reported through the on_error
 * callback with the caller's tag. Connection failures are retried with
 * back-off (every operation is idempotent, so re-sending is safe) for up to
 * redis.retry_timeout_ms, after which flush fails and reports every queued
 * operation through on_error. With redis.wait_replicas, each primary is
 * judged on its own: only the operations on a primary whose WAIT saw too
 * few replicas are retried and then reported; that primary's window is
 * shared by every batch, so once it has run out its operations are
 * reported at once (operating.md, "Durable acknowledgement").
 *
 * Threads: a handle is not thread-safe; use one per thread (each has its own
 * Redis connections), or serialise calls.
 *
 * The documents named here, library.md (this library), protocol.md (the
 * operations, the event, the guarantees) and operating.md, are installed
 * with lapse in share/doc/lapse/ under its prefix. Installed, this header
 * is lapse/producer.h, beside lapse/line.h, the one header it includes.
 *
 * The library's ABI is this header and line.h: the configuration is an
 * opaque handle (lapse_config_open), so a config key of the scanner or the
 * ingress never changes what a program compiled against the library sees.
 */
#ifndef LAPSE_PRODUCER_H
#define LAPSE_PRODUCER_H

#include <stddef.h>
#include <stdint.h>

#include "line.h"

typedef struct lapse_producer lapse_producer;

/* A loaded configuration file (lapse.conf(5)): opaque to programs. */
struct lapse_config;

/* Loads and checks the config file at `path`; NULL with errno EINVAL (or
 * ENOMEM) and the reasons in errstr (file, line and key) when it cannot. */
struct lapse_config *lapse_config_open(const char *path, char *errstr, size_t size);

/* Frees what lapse_config_open returned (NULL: nothing). */
void lapse_config_close(struct lapse_config *cfg);

/* Called for each operation Redis did not apply; `reason` is valid only
 * during the call. */
typedef void lapse_producer_error_cb(void *ctx, uint64_t tag, const char *reason);

/*
 * Connects to the nodes of `cfg` and reads the namespace's layout. `cfg` must
 * outlive the handle. A Redis that does not answer (not up yet, a failover
 * under way: the sentinels still name the dead primary) is waited for, with
 * back-off, for up to redis.retry_timeout_ms, as flush waits (in
 * lapse-producer, whose SIGTERM/SIGINT handler is lapse's own, those
 * signals cut the wait short). Returns NULL with errstr set and errno
 * saying what kind of failure it was: EACCES when Redis refused us (a wrong password or
 * user, an ACL denial, a TLS certificate that fails verification: trying
 * again cannot help), ETIMEDOUT when Redis stayed unreachable, EINTR when
 * stopped by a signal, EINVAL for a config lapse_producer_open could not
 * load, ENOMEM, or EIO for anything else (the namespace not initialised).
 */
lapse_producer *lapse_producer_new(const struct lapse_config *cfg,
                                   lapse_producer_error_cb *on_error, void *ctx, char *errstr,
                                   size_t size);

/* Called by lapse_producer_new_waiting before each wait for Redis at start:
 * why the last attempt failed and how long it waits now (ms). */
typedef void lapse_producer_wait_cb(void *ctx, const char *why, int wait_ms);

/* lapse_producer_new, calling on_wait (may be NULL) with ctx before each
 * wait for Redis, so the caller can say why it has not started yet. */
lapse_producer *lapse_producer_new_waiting(const struct lapse_config *cfg,
                                           lapse_producer_error_cb *on_error,
                                           lapse_producer_wait_cb *on_wait, void *ctx, char *errstr,
                                           size_t size);

/* The same from a config file, which the handle loads and owns (errno
 * EINVAL when it cannot: errstr names the file, line and key). */
lapse_producer *lapse_producer_open(const char *path, lapse_producer_error_cb *on_error, void *ctx,
                                    char *errstr, size_t size);

/* Accepts NULL. Does not flush: what is queued is dropped, and a batch in
 * flight may or may not have been applied. */
void lapse_producer_free(lapse_producer *p);

/*
 * Queues `cmd` (its bytes are copied; the caller keeps ownership). Returns 0;
 * -1 with errstr if the command breaks a rule of the line protocol (nothing
 * queued); or -2 with errstr if it was queued and an automatic send failed
 * (as lapse_producer_flush: every operation of the failed batch, the one in
 * flight or this one's, was reported through on_error).
 */
int lapse_producer_submit(lapse_producer *p, const struct lapse_cmd *cmd, uint64_t tag,
                          char *errstr, size_t size);

/* A hint, for callers that see several operations ahead (e.g. a read
 * buffer of lines): the ID will be submitted soon. With producer.slack_ms
 * it starts loading the ID's entry in the slack memory, whose cache misses
 * are most of what an absorbed signal costs; submitting a few IDs after
 * their hints overlaps those misses. Changes nothing visible; no effect
 * without slack. */
void lapse_producer_prefetch(const lapse_producer *p, const char *id, size_t id_len);

/* lapse_producer_submit and lapse_producer_prefetch for a caller that has
 * hashed the ID already (`hash` = XXH64 of its bytes, seed 0: protocol.md,
 * "Where an ID lives"; a recovered event's mark skipped): the same,
 * without hashing it again (the Kafka ingress hashes a message's key once
 * for the prefetch, its ID and the submit). */
int lapse_producer_submit_hashed(lapse_producer *p, const struct lapse_cmd *cmd, uint64_t hash,
                                 uint64_t tag, char *errstr, size_t size);
void lapse_producer_prefetch_hashed(const lapse_producer *p, uint64_t hash);

/* Shorthands for lapse_producer_submit (same returns). `payload` may be
 * NULL (none). */
int lapse_producer_touch(lapse_producer *p, const char *id, size_t id_len,
                         enum lapse_when_kind kind, int64_t when_ms, const char *payload,
                         size_t payload_len, uint64_t tag, char *errstr, size_t size);
int lapse_producer_extend(lapse_producer *p, const char *id, size_t id_len,
                          enum lapse_when_kind kind, int64_t when_ms, const char *payload,
                          size_t payload_len, uint64_t tag, char *errstr, size_t size);
int lapse_producer_repeat(lapse_producer *p, const char *id, size_t id_len,
                          enum lapse_when_kind kind, int64_t when_ms, int64_t period_ms,
                          const char *payload, size_t payload_len, uint64_t tag, char *errstr,
                          size_t size);
int lapse_producer_cancel(lapse_producer *p, const char *id, size_t id_len, uint64_t tag,
                          char *errstr, size_t size);
/* An extend with recovery on (LAPSE_OP_WATCH): once the ID's timeout fired,
 * its next write sends a "recovered" event (protocol.md, "Recovered events"). */
int lapse_producer_watch(lapse_producer *p, const char *id, size_t id_len,
                         enum lapse_when_kind kind, int64_t when_ms, const char *payload,
                         size_t payload_len, uint64_t tag, char *errstr, size_t size);

/* Applies everything queued and the batches in flight. Returns 0, or -1 with
 * errstr when some operations could not be applied (their node stayed
 * unreachable, or their primary could not confirm them, for
 * redis.retry_timeout_ms: one window per node, shared by every flush, after
 * which they fail at once until the node answers again): those are dropped
 * and each one reported; the others were applied. */
int lapse_producer_flush(lapse_producer *p, char *errstr, size_t size);

/*
 * How many submissions are settled: lapse_producer_submit calls (those
 * that did not return -1), counted in order from the first, whose
 * operations were all applied (with redis.wait_replicas, confirmed) or,
 * where one failed, reported through on_error. It grows as batches in
 * flight are read, and to the whole count at each flush, so a caller that
 * streams can acknowledge its input in order without flushing: an input
 * whose submission was the k-th (lapse_producer_stats' submitted right
 * after it) is done once this is >= k and on_error reported nothing for
 * it.
 */
uint64_t lapse_producer_settled(const lapse_producer *p);

/* Operations queued and not yet applied. */
size_t lapse_producer_pending(const lapse_producer *p);

/* Counters since the handle was created. */
struct lapse_producer_stats {
    uint64_t submitted; /* operations accepted by submit */
    uint64_t coalesced; /* folded into another operation of the same batch */
    uint64_t absorbed;  /* extends covered by bounded slack: no write */
    uint64_t written;   /* operations sent to Redis */
    uint64_t failed;    /* operations reported through on_error */
    uint64_t flushes;   /* batches sent */
};
void lapse_producer_stats(const lapse_producer *p, struct lapse_producer_stats *out);

/* With redis.wait_replicas: the primaries whose last WAIT saw fewer
 * replicas than that (their writes are retried, then reported failed).
 * Writes the i-th one's "host:port" into addr and returns 1, or returns 0
 * past the last one (i from 0). */
int lapse_producer_unconfirmed(const lapse_producer *p, size_t i, char *addr, size_t size);

/* PINGs every node. Returns how many did not answer (0: all up), with the
 * nodes' reconnects so far in *reconnects (may be NULL); or -1, touching
 * nothing, while operations are queued or in flight (call it after a
 * flush). A node in its reconnect back-off counts as down without a
 * connection attempt. */
int lapse_producer_probe(lapse_producer *p, uint64_t *reconnects);

/* What the program should log about its nodes' maxmemory-policy (an
 * evicting policy accepted with redis.accept_eviction, or found at a
 * reconnect; a policy the ACL does not let it read): a line when one is due
 * (hourly while it stands), with *error set to 1 when it is to be logged as
 * an error; NULL when nothing is due. Call it now and then. */
const char *lapse_producer_notice(lapse_producer *p, int *error);

#endif
