/* sink — see sink.h. */
#include "sink.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka.h"
#include "log.h"

struct lapse_sink {
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    lapse_sink_delivered_cb *cb;
    lapse_sink_error_cb *on_error;
    void *ctx;
    struct lapse_log_limit lim_log, lim_error; /* (both served by lapse_sink_poll) */
};

static void sink_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *conf_opaque)
{
    (void)rk;
    struct lapse_sink *s = conf_opaque;
    s->cb(s->ctx, m->_private, m->err == RD_KAFKA_RESP_ERR_NO_ERROR,
          m->err ? rd_kafka_err2str(m->err) : NULL);
}

/* librdkafka's own log lines go through ours (rate-limited: a broker outage
 * makes it chatty). They come through the log queue (log.queue), served by
 * lapse_sink_poll on the scanner's thread, not from librdkafka's threads. */
static void sink_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    struct lapse_sink *s = rd_kafka_opaque(rk);
    lapse_log_limited(&s->lim_log, 5,
                      level <= 3   ? LAPSE_LOG_ERROR
                      : level <= 4 ? LAPSE_LOG_WARN
                                   : LAPSE_LOG_INFO,
                      "kafka %s: %s", fac, buf);
}

static void sink_error(rd_kafka_t *rk, int err, const char *reason, void *conf_opaque)
{
    (void)rk;
    struct lapse_sink *s = conf_opaque;
    if (s->on_error)
        s->on_error(s->ctx);
    lapse_log_limited(&s->lim_error, 1, LAPSE_LOG_WARN, "kafka: %s: %s", rd_kafka_err2name(err),
                      reason);
}

lapse_sink *lapse_sink_new(const struct lapse_config *cfg, lapse_sink_delivered_cb *cb,
                           lapse_sink_error_cb *on_error, void *ctx, char *errstr, size_t size)
{
    lapse_sink *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(errstr, size, "out of memory");
        return NULL;
    }
    s->cb = cb;
    s->on_error = on_error;
    s->ctx = ctx;
    /* message.timeout.ms stays below the lease: an event librdkafka gave up
     * on is re-claimed from Redis when its lease runs out, never lost, and a
     * still-queued one is not claimed a second time. */
    const char *user = lapse_kafka_prop(cfg, "message.timeout.ms");
    if (user && (atol(user) <= 0 || atol(user) >= cfg->scanner_lease_ms)) {
        /* 0 would mean "retry forever": the lease would run out under it */
        snprintf(errstr, size,
                 "%s: kafka.properties: message.timeout.ms: must be 1..%d (below scanner.lease_ms)",
                 cfg->path, cfg->scanner_lease_ms - 1);
        free(s);
        return NULL;
    }
    char timeout[32];
    snprintf(timeout, sizeof timeout, "%d",
             cfg->scanner_lease_ms > 2000 ? cfg->scanner_lease_ms - 1000
                                          : cfg->scanner_lease_ms / 2);
    const struct lapse_kv defaults[] = {
        {"enable.idempotence", "true"},
        {"acks", "all"},
        /* Each partition's events go to Kafka in one request per batch,
         * and librdkafka and the broker pay mostly per request: with the
         * key spreading a claim over every partition, a batch held 1-3
         * events at linger.ms 1, and the scanner and the broker spent
         * ~8.5 us per event between them (section 2 of make bench-scanner,
         * 64 partitions), 3.3 us at 50. The wait costs no latency when the
         * scanner is idle: lapse_sink_push sends at once. */
        {"linger.ms", "50"},
        {"message.timeout.ms", timeout},
        {"log.connection.close", "false"},
        {"log.queue", "true"},
        /* librdkafka backs reconnects off up to 10 s by default; a backlog
         * held up by an outage should drain within a second of the return */
        {"reconnect.backoff.max.ms", "1000"},
    };
    rd_kafka_conf_t *conf =
        lapse_kafka_conf(cfg, defaults, sizeof defaults / sizeof *defaults, errstr, size);
    if (!conf) {
        free(s);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, sink_dr);
    rd_kafka_conf_set_log_cb(conf, sink_log);
    rd_kafka_conf_set_error_cb(conf, sink_error);
    rd_kafka_conf_set_opaque(conf, s);
    char why[512];
    s->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    if (!s->rk) {
        rd_kafka_conf_destroy(conf);
        snprintf(errstr, size, "kafka: %s", why);
        free(s);
        return NULL;
    }
    rd_kafka_set_log_queue(s->rk, NULL); /* the main queue: rd_kafka_poll serves it */
    s->rkt = rd_kafka_topic_new(s->rk, cfg->kafka_topic, NULL);
    if (!s->rkt) {
        snprintf(errstr, size, "kafka: topic %s: %s", cfg->kafka_topic,
                 rd_kafka_err2str(rd_kafka_last_error()));
        lapse_sink_free(s);
        return NULL;
    }
    return s;
}

void lapse_sink_free(lapse_sink *s)
{
    if (!s)
        return;
    if (s->rkt)
        rd_kafka_topic_destroy(s->rkt);
    if (s->rk) {
        rd_kafka_purge(s->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(s->rk, 0); /* deliver the purge reports: callers free their records */
        rd_kafka_destroy(s->rk);
    }
    free(s);
}

int lapse_sink_send(lapse_sink *s, const char *key, size_t key_len, const char *value,
                    size_t value_len, void *opaque, char *errstr, size_t size)
{
    /* F_COPY: librdkafka puts the value in the same allocation as its
     * message, so the caller's buffer is reused and nothing is freed here. */
    if (rd_kafka_produce(s->rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, (void *)value,
                         value_len, key, key_len, opaque) == 0)
        return 0;
    snprintf(errstr, size, "kafka: %s", rd_kafka_err2str(rd_kafka_last_error()));
    return -1;
}

void lapse_sink_poll(lapse_sink *s, int timeout_ms)
{
    rd_kafka_poll(s->rk, timeout_ms);
}

void lapse_sink_push(lapse_sink *s, int timeout_ms)
{
    /* rd_kafka_flush treats linger.ms as over while it runs, and returns at
     * once when nothing is queued: then this is a plain poll, so the
     * caller's wait still happens. */
    if (rd_kafka_outq_len(s->rk) == 0)
        rd_kafka_poll(s->rk, timeout_ms);
    else
        rd_kafka_flush(s->rk, timeout_ms);
}

int lapse_sink_fatal(lapse_sink *s, char *errstr, size_t size)
{
    char why[512];
    if (rd_kafka_fatal_error(s->rk, why, sizeof why) == RD_KAFKA_RESP_ERR_NO_ERROR)
        return 0;
    snprintf(errstr, size, "kafka fatal error: %s", why);
    return 1;
}
