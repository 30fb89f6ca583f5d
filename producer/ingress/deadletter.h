/*
 * deadletter — the ingress's copies of messages it could not understand.
 *
 * Why it exists: a message that is not understood must not stop the stream,
 * yet must not vanish either. Its copy goes to ingress.dead_letter_topic
 * with the original key, value, timestamp and headers, plus
 *
 *   lapse.error      the reason, as logged
 *   lapse.topic      where it came from ...
 *   lapse.partition
 *   lapse.offset
 *
 * so it can be inspected, fixed and produced to the ingress topic again.
 * The ingress commits a message's offset only after its copy is
 * acknowledged: lapse_deadletter_wait() says when that is. Copies may be
 * duplicated (a batch read again copies its messages again), never lost
 * before their commit.
 *
 * Part of the ingress serve loop: it logs librdkafka's warnings (rate-limited)
 * and nothing else. One thread.
 */
#ifndef LAPSE_DEADLETTER_H
#define LAPSE_DEADLETTER_H

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct lapse_deadletter lapse_deadletter;

/* A producer for cfg->ingress_dead_letter_topic (which must be set); `cfg`
 * must outlive it. NULL with errstr set when the Kafka config is refused. */
lapse_deadletter *lapse_deadletter_new(const struct lapse_config *cfg, char *errstr, size_t size);

/* Waits up to `wait_ms` for copies still in flight, then frees; accepts NULL. */
void lapse_deadletter_free(lapse_deadletter *d, int wait_ms);

/* Queues the copy of `m` (copied: `m` may go right after) with reason
 * `why`. A copy that cannot even be queued counts as failed in the next
 * lapse_deadletter_wait(). */
void lapse_deadletter_send(lapse_deadletter *d, const rd_kafka_message_t *m, const char *why);

/* Serves delivery reports and logs without blocking longer than `ms`. */
void lapse_deadletter_poll(lapse_deadletter *d, int ms);

/*
 * Waits until every copy sent so far is reported (bounded by the producer's
 * message.timeout.ms; once *stop is set, by `stop_wait_ms`). Returns 0 when
 * all copies since the previous call were acknowledged, else -1 with the
 * reason in errstr. Either way the next call starts a new count.
 */
int lapse_deadletter_wait(lapse_deadletter *d, volatile sig_atomic_t *stop, int stop_wait_ms,
                          char *errstr, size_t size);

/* Copies acknowledged since the start. */
uint64_t lapse_deadletter_acked(const lapse_deadletter *d);

#endif
