/*
 * reaper — destroys what a thread is done with on a thread of its own.
 *
 * Why: the ingress's Kafka messages are allocated by librdkafka's fetch
 * thread; whoever destroys one frees into that thread's malloc arena and
 * takes its lock, which the fetch thread holds for each new message.
 * Destroying a committed batch on the ingress's thread cost it 0.3-0.4 s per
 * 500,000 messages, most of it waiting on that lock (bench-ingress,
 * 2026-11-29); with a reaper the wait is off the read path.
 *
 * The owner (one thread) puts items, then hands them over in one step; the
 * reaper's thread destroys what it was handed, in the order put. When the
 * thread is far behind (LAPSE_REAPER_BACKLOG items), could not start, or
 * memory runs out, the owner destroys the items itself: an item is never
 * kept past its hand-over but by the thread, and the backlog stays bounded.
 */
#ifndef LAPSE_REAPER_H
#define LAPSE_REAPER_H

#include <stddef.h>

#define LAPSE_REAPER_BACKLOG ((size_t)1 << 17) /* handed and not destroyed, at most */

typedef struct lapse_reaper lapse_reaper;

/* A reaper that calls destroy(item) for each item put (the ingress:
 * rd_kafka_message_destroy), on its thread when that started, else on the
 * owner's: destroy must be safe to call from another thread than the
 * owner's. NULL when out of memory. */
lapse_reaper *lapse_reaper_new(void (*destroy)(void *item));

/* Takes ownership of item. It is destroyed after the next hand-over (by
 * the thread, or by the owner in that hand-over when the thread is
 * LAPSE_REAPER_BACKLOG behind), and by the next drain or free at the
 * latest; at once when the thread did not start or memory runs out. */
void lapse_reaper_put(lapse_reaper *r, void *item);

/* Hands every item put since the last hand-over to the thread: all of
 * them, or (the thread too far behind, memory out) none, and then the
 * owner destroys them here. */
void lapse_reaper_hand(lapse_reaper *r);

/* Hands over what is put and returns once every item is destroyed: the
 * ingress calls it before closing the consumer the messages came from. */
void lapse_reaper_drain(lapse_reaper *r);

/* Drains, stops the thread, frees r. Accepts NULL. */
void lapse_reaper_free(lapse_reaper *r);

#endif
