/*
 * kick — wakes librdkafka's fetcher once the consumer's queue has drained.
 *
 * Why: librdkafka before 2.1.0 (Debian 12 has 2.0.2) stops fetching a
 * broker's partitions once the consumer's queue holds queued.min.messages,
 * and decides again only when that broker's thread wakes: on a request or
 * reply of its own, or once a second. A consumer slower than the fetch (an
 * ingress taking a backlog) then empties its queue and waits, with messages
 * at the broker, for up to a second each time the queue filled. A large
 * queue makes that rarer, but fills on fresh memory, and the fetch thread's
 * page faults take CPU that Redis needs (bench-ingress, 2026-11-29: 0.85 s
 * of CPU for 500,000 messages with a 300,000-message queue, 0.45 s with
 * 10,000 and the kicks; 2.1.0 added fetch.queue.backoff.ms for this).
 *
 * A thread of its own looks at the queue every LAPSE_KICK_EVERY_MS. When it
 * is below half of queued.min.messages (low) after it was not, or after a
 * fetch of at least that many arrived and was taken since the last look,
 * or while partitions have messages at the broker that are neither fetched
 * nor taken, the kicker sends each leader of the assignment a read-only
 * request (ListOffsets: rd_kafka_offsets_for_times), which wakes the broker
 * thread, which then fetches again. Nothing is kicked while the queue is
 * not low, nor while a stream is followed (fetches smaller than half the
 * queue, nothing waiting at the broker).
 */
#ifndef LAPSE_KICK_H
#define LAPSE_KICK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#define LAPSE_KICK_EVERY_MS 2      /* between two looks at the queue */
#define LAPSE_KICK_LAG_EVERY_MS 50 /* between two looks at the lag, while the queue is low */
#define LAPSE_KICK_TIMEOUT_MS 500  /* longest wait for a kick's answer */

typedef struct lapse_kick lapse_kick;

/* Whether to kick now, by the rule above: `queued` messages in the queue
 * at this look, `arrived` in it since the look before (taken or still
 * there), `was_high` whether the look before saw it not low, `unfetched`
 * messages known at the brokers and neither fetched nor taken (the high
 * watermarks of the last fetches less the positions and the queue; 0 when
 * not looked at); low is below half of `queued_min` (queued.min.messages).
 * Apart from the thread for its tests. */
int lapse_kick_due(size_t queued, int64_t arrived, size_t queued_min, int was_high,
                   int64_t unfetched);

/* Watches `queue` (the consumer's, of `rk`) on a thread of its own:
 * queued_min is the consumer's queued.min.messages, *taken counts the
 * messages the application took from the queue. Adds each kick to *kicks.
 * NULL when the thread cannot start (then librdkafka's own second is the
 * only wake-up). */
lapse_kick *lapse_kick_new(rd_kafka_t *rk, rd_kafka_queue_t *queue, size_t queued_min,
                           const atomic_uint_fast64_t *taken, atomic_uint_fast64_t *kicks);

/* Stops the thread (waiting out a kick in flight, LAPSE_KICK_TIMEOUT_MS at
 * most) and frees k; before the consumer is closed. Accepts NULL. */
void lapse_kick_free(lapse_kick *k);

#endif
