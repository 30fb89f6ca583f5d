/*
 * kick — wakes librdkafka's fetcher once the consumer's queue has drained.
 *
 * Why: librdkafka before 2.1.0 (Debian 12 has 2.0.2) stops fetching a
 * broker's partitions once the consumer's queue holds queued.min.messages
 * (or queued.max.messages.kbytes), and decides again only when that
 * broker's thread wakes: on a request or reply of its own, or once a
 * second. A consumer slower than the fetch (an ingress taking a backlog)
 * then empties its queue and waits, with messages at the broker, for up to
 * a second each time the queue filled. A large queue makes that rarer, but
 * fills on fresh memory, and the fetch thread's page faults take CPU that
 * Redis needs (bench-ingress, 2026-11-29: 0.85 s of the ingress's CPU for
 * 500,000 messages with a 300,000-message queue, 0.6 s with 20,000 and the
 * kicks; 2.1.0 added fetch.queue.backoff.ms for this).
 *
 * The owner (the thread that reads the queue) tells the kicker, at each
 * read, how long the queue was and how much it took. Once the queue is low
 * (below half of queued.min.messages) after a read saw it not low, the
 * fetcher may have stopped: the kicker's thread sends each leader of the
 * assignment a read-only request (ListOffsets: rd_kafka_offsets_for_times),
 * which wakes the broker thread, which fetches again. When a read leaves
 * the queue empty (at most every LAPSE_KICK_CHECK_MS) the thread looks at
 * the lag and kicks if the last fetches saw messages that are neither
 * fetched nor taken (a fetcher stopped by the bytes limit). Nothing is
 * kicked while a stream is followed: fetches smaller than half the queue,
 * nothing waiting at the broker. While a leader is down a kick waits
 * LAPSE_KICK_TIMEOUT_MS for nothing, and its request waits in librdkafka
 * (socket.timeout.ms): two a second at most.
 */
#ifndef LAPSE_KICK_H
#define LAPSE_KICK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#define LAPSE_KICK_CHECK_MS 50    /* between two looks at the lag, while reads empty the queue */
#define LAPSE_KICK_TIMEOUT_MS 500 /* longest wait for a kick's answer */

typedef struct lapse_kick lapse_kick;

/* What a read asks for, by the rule above (apart from the thread for its
 * tests): `before` messages were in the queue, the read took `taken`;
 * *was_high says whether a read since the last kick saw the queue not low
 * (updated); `queued_min` is queued.min.messages. */
enum lapse_kick_want { LAPSE_KICK_NONE, LAPSE_KICK_CHECK, LAPSE_KICK_NOW };
enum lapse_kick_want lapse_kick_rule(size_t before, size_t taken, size_t queued_min, int *was_high);

/* A kicker for the consumer `rk` whose queue `queue` the owner reads, with
 * queued.min.messages `queued_min`; adds each kick to *kicks. NULL when its
 * thread cannot start (then librdkafka's own second is the only wake-up). */
lapse_kick *lapse_kick_new(rd_kafka_t *rk, rd_kafka_queue_t *queue, size_t queued_min,
                           atomic_uint_fast64_t *kicks);

/* The owner read the queue: it held `before` messages, `taken` were taken.
 * Cheap: a lock only when the thread is asked to kick or look. */
void lapse_kick_read(lapse_kick *k, size_t before, size_t taken);

/* Stops the thread (waiting out a kick in flight, LAPSE_KICK_TIMEOUT_MS at
 * most) and frees k; before the consumer is closed. Accepts NULL. */
void lapse_kick_free(lapse_kick *k);

#endif
