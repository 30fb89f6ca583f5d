/*
 * ingress — lapse-producer --from-kafka: a consumer-group loop that applies
 * command messages and watchdog signals (docs/protocol.md, "Kafka ingress").
 *
 *   lapse_ingress *ing = lapse_ingress_new(&cfg, err, sizeof err);
 *   lapse_producer *p = lapse_producer_new(&cfg, lapse_ingress_on_error, ing, ...);
 *   lapse_ingress_serve(ing, p, &stop);   // until *stop; logs as it goes
 *   lapse_producer_free(p);
 *   lapse_ingress_free(ing);
 *
 * The commit rule (at least once): a message's offset is committed only
 * after everything it caused is done — its writes applied in Redis (the
 * flush of its batch returned 0) or, for a message not understood, its
 * dead-letter copy acknowledged by Kafka. Each message's op is submitted
 * as it is taken; the producer library sends each full write batch without
 * waiting for it (pipelined: producer.h), and as it reads their replies,
 * the longest run of the first messages not committed whose writes are all
 * applied is committed, asynchronously, while reading goes on (no flush).
 * The messages not committed yet are the batch: it is settled (flush,
 * dead-letter acks, commit) as soon as the consumer has nothing more ready,
 * so a lone message is not held back, or when it holds 32 x producer.batch
 * messages. When a batch cannot be settled (Redis unreachable past
 * redis.command_timeout_ms, an op refused with a transient error such as
 * OOM/BUSY/LOADING/READONLY, a dead-letter copy not acknowledged), nothing of
 * it is committed: the consumer seeks every partition of the batch back to
 * its first message and reads it again after a back-off (up to 5 s), for as
 * long as it takes. When only some of its writes failed (their node did not
 * answer, or their primary could not confirm them, for its whole retry
 * window), each partition is committed up to its first message whose write
 * failed and read again from there (ingress_batch.c). Re-applying is safe: extend with an absolute time is
 * idempotent, touch/cancel converge, and a relative time is counted again
 * from the retry (at least once, never early).
 *
 * Not understood: no valid command and no matching watchdog rule, or an op
 * Redis refuses for good (its error is not transient). Such a message is
 * counted, logged (rate-limited) as "ingress: TOPIC/PARTITION/OFFSET:
 * reason", copied to ingress.dead_letter_topic when set, and committed like
 * the others: it never stops the stream.
 *
 * Rebalances: on revoke the batch is settled and committed synchronously
 * before the partitions go; on a stop request (SIGTERM) polling stops, the
 * batch is settled, the offsets are committed synchronously and the consumer
 * leaves its group (rd_kafka_consumer_close).
 *
 * Not thread-safe: one ingress, one thread.
 */
#ifndef LAPSE_INGRESS_H
#define LAPSE_INGRESS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "producer.h"

typedef struct lapse_ingress lapse_ingress;

/* Counters since the ingress started (a re-read batch counts again). */
struct lapse_ingress_stats {
    uint64_t messages;      /* taken from Kafka */
    uint64_t commands;      /* understood as command messages */
    uint64_t signals;       /* understood by a watchdog rule */
    uint64_t rejected;      /* not understood */
    uint64_t dead_lettered; /* copies acknowledged by the dead-letter topic */
    uint64_t batches;       /* batches settled and committed */
    uint64_t retries;       /* batches read again after a failure */
};

/*
 * Checks the ingress keys and creates the Kafka clients (the consumer and,
 * with ingress.dead_letter_topic, a producer for the copies) without
 * subscribing. `cfg` must outlive the handle. Returns NULL with errstr set
 * ("FILE: ingress.topic: missing ...", "FILE: ingress.properties: NAME:
 * reason", ...).
 */
lapse_ingress *lapse_ingress_new(const struct lapse_config *cfg, char *errstr, size_t size);

/* Closes the Kafka clients without committing anything; accepts NULL. */
void lapse_ingress_free(lapse_ingress *ing);

/* The producer error callback to pass to lapse_producer_new with the
 * ingress as ctx: it ties each failed operation back to its message. */
void lapse_ingress_on_error(void *ctx, uint64_t tag, const char *reason);

/*
 * Subscribes and serves until *stop is set, then settles, commits and leaves
 * the group. `p` must have been created with lapse_ingress_on_error and this
 * ingress as ctx. Returns 0 after a clean stop, -1 when it stopped with
 * messages it could not settle (they are not committed: the next consumer
 * of their partitions reads them again) or on a fatal Kafka error.
 */
int lapse_ingress_serve(lapse_ingress *ing, lapse_producer *p, volatile sig_atomic_t *stop);

void lapse_ingress_get_stats(const lapse_ingress *ing, struct lapse_ingress_stats *st);

#endif
