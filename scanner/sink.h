/*
 * sink — where the scanner's events go: a Kafka topic.
 *
 * A thin layer over one librdkafka producer: idempotent, acks=all, key = ID
 * (so one ID's events stay in order within a partition). Every send is
 * answered exactly once through the delivered callback, from inside
 * lapse_sink_poll/flush, with ok = 1 only when Kafka acknowledged the event.
 * Transient broker trouble is retried inside librdkafka until
 * message.timeout.ms; a fatal error (e.g. the idempotent producer fenced) is
 * reported by lapse_sink_fatal and ends the program.
 */
#ifndef LAPSE_SINK_H
#define LAPSE_SINK_H

#include <stddef.h>

#include "config.h"

typedef struct lapse_sink lapse_sink;

/* `opaque` is what was passed to lapse_sink_send; `reason` is NULL when ok. */
typedef void lapse_sink_delivered_cb(void *ctx, void *opaque, int ok, const char *reason);

/* Called on each librdkafka error (broker down, timeouts): for counting;
 * librdkafka retries by itself. */
typedef void lapse_sink_error_cb(void *ctx);

/* Creates the producer (no connection is made until the first send). NULL
 * with errstr on a bad property. `cfg` must outlive the sink. */
lapse_sink *lapse_sink_new(const struct lapse_config *cfg, lapse_sink_delivered_cb *cb,
                           lapse_sink_error_cb *on_error, void *ctx, char *errstr, size_t size);

/* Destroys the producer; events not yet delivered are dropped (not
 * acknowledged). Accepts NULL. */
void lapse_sink_free(lapse_sink *s);

/*
 * Queues one event; key and value are copied (the caller keeps its buffers).
 * Returns 0, or -1 with errstr when librdkafka refused it (then the delivered
 * callback is not called for it).
 */
int lapse_sink_send(lapse_sink *s, const char *key, size_t key_len, const char *value,
                    size_t value_len, void *opaque, char *errstr, size_t size);

/* Serves delivery reports, waiting up to timeout_ms for the first one. */
void lapse_sink_poll(lapse_sink *s, int timeout_ms);

/*
 * For a caller with nothing more to send for a while: sends every queued
 * event now instead of after linger.ms, and serves delivery reports until
 * all are answered or timeout_ms passed (with nothing queued: waits
 * timeout_ms for a report, as lapse_sink_poll). So linger.ms batches only
 * while events keep coming, and a lone event does not wait for it.
 */
void lapse_sink_push(lapse_sink *s, int timeout_ms);

/* 1 with the reason in errstr if librdkafka hit a fatal error. */
int lapse_sink_fatal(lapse_sink *s, char *errstr, size_t size);

#endif
