/*
 * producer — the library a pipeline links to set, reset and cancel deadlines.
 *
 *   lapse_producer *p = lapse_producer_new(&cfg, on_error, ctx, err, sizeof err);
 *   lapse_producer_submit(p, &cmd, tag);   // queue; never waits for Redis
 *   ...                                    // (unless the batch is full)
 *   lapse_producer_flush(p);               // everything queued is applied
 *   lapse_producer_free(p);
 *
 * Operations are queued per shard and sent as one Lua call per shard and
 * batch, pipelined per Redis node; within a shard they apply in submission
 * order. submit() flushes by itself when producer.batch operations are
 * queued, so memory stays bounded. Callers that stream should flush whenever
 * no more input is waiting, so a lone operation is not held back.
 *
 * Errors: an operation Redis refuses is reported through the on_error
 * callback with the caller's tag; connection failures are retried with
 * back-off (every operation is idempotent, so re-sending is safe) for up to
 * redis.command_timeout_ms, after which flush fails. Not thread-safe: use one
 * handle per thread.
 */
#ifndef LAPSE_PRODUCER_H
#define LAPSE_PRODUCER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "line.h"

typedef struct lapse_producer lapse_producer;

/* Called for each operation that could not be applied; `reason` is valid
 * only during the call. */
typedef void lapse_producer_error_cb(void *ctx, uint64_t tag, const char *reason);

/*
 * Connects to the nodes of `cfg` and reads the namespace's layout. `cfg` must
 * outlive the handle. Returns NULL with errstr set if Redis is unreachable or
 * the namespace is not initialised.
 */
lapse_producer *lapse_producer_new(const struct lapse_config *cfg, lapse_producer_error_cb *on_error,
                                   void *ctx, char *errstr, size_t size);
void lapse_producer_free(lapse_producer *p); /* accepts NULL; does not flush */

/*
 * Queues `cmd` (its bytes are copied). Returns 0, or -1 with errstr if the
 * command cannot be queued (unsupported op) or an automatic flush failed.
 */
int lapse_producer_submit(lapse_producer *p, const struct lapse_cmd *cmd, uint64_t tag,
                          char *errstr, size_t size);

/* Applies everything queued. Returns 0, or -1 with errstr when Redis stayed
 * unreachable; the queue is then dropped and each operation reported. */
int lapse_producer_flush(lapse_producer *p, char *errstr, size_t size);

/* Operations queued and not yet applied. */
size_t lapse_producer_pending(const lapse_producer *p);

#endif
