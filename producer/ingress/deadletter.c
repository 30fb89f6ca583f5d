/*
 * deadletter — copies of messages the ingress did not understand (see
 * deadletter.h).
 *
 * Invariants:
 *  - `inflight` counts copies handed to librdkafka and not yet reported; it
 *    only reaches 0 once Kafka answered for each, so a wait that returns 0
 *    really covers every copy sent before it.
 *  - Every callback runs in the caller's thread, from lapse_deadletter_poll
 *    or _wait (delivery reports always; librdkafka's logs through its log
 *    queue).
 */
#include "deadletter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "kafka.h"
#include "log.h"

struct lapse_deadletter {
    const struct lapse_config *cfg;
    rd_kafka_t *rk;
    long inflight;  /* queued, not yet reported */
    long failed;    /* refused since the last wait */
    char err[256];  /* the last refusal */
    uint64_t acked; /* acknowledged since the start */
    struct lapse_log_limit lim;
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    lapse_deadletter *d = opaque;
    (void)rk;
    d->inflight--;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        d->acked++;
        return;
    }
    d->failed++;
    snprintf(d->err, sizeof d->err, "dead-letter topic %s: %s", d->cfg->ingress_dead_letter_topic,
             rd_kafka_err2str(m->err));
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    lapse_deadletter *d = rd_kafka_opaque(rk);
    if (level <= 4)
        lapse_log_limited(&d->lim, 10, LAPSE_LOG_WARN, "ingress: dead letters: kafka: %s: %s", fac,
                          buf);
    else
        log_debug("ingress: dead letters: kafka: %s: %s", fac, buf);
}

lapse_deadletter *lapse_deadletter_new(const struct lapse_config *cfg, char *errstr, size_t size)
{
    /* Not idempotent: a batch read again copies its messages again anyway,
     * and an idempotent producer adds fatal errors that would stop us. */
    static const struct lapse_kv defaults[] = {
        {"enable.idempotence", "false"}, {"acks", "all"}, {"linger.ms", "5"},
        {"message.timeout.ms", "10000"}, /* bounds lapse_deadletter_wait */
        {"log.queue", "true"},
    };
    lapse_deadletter *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(errstr, size, "out of memory");
        return NULL;
    }
    d->cfg = cfg;
    rd_kafka_conf_t *conf = lapse_kafka_conf(cfg, defaults, 5, errstr, size);
    if (!conf) {
        free(d);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, d);
    rd_kafka_conf_set_log_cb(conf, on_log);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    char why[256];
    if ((d->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why)) == NULL) {
        snprintf(errstr, size, "ingress: cannot create the dead-letter producer: %s", why);
        rd_kafka_conf_destroy(conf); /* not taken on failure */
        free(d);
        return NULL;
    }
    rd_kafka_set_log_queue(d->rk, NULL); /* served by rd_kafka_poll */
    return d;
}

void lapse_deadletter_free(lapse_deadletter *d, int wait_ms)
{
    if (!d)
        return;
    rd_kafka_flush(d->rk, wait_ms);
    rd_kafka_destroy(d->rk);
    free(d);
}

void lapse_deadletter_send(lapse_deadletter *d, const rd_kafka_message_t *m, const char *why)
{
    rd_kafka_headers_t *orig = NULL, *h;
    rd_kafka_timestamp_type_t tstype;
    char part[16], off[24];
    if (rd_kafka_message_headers(m, &orig) == RD_KAFKA_RESP_ERR_NO_ERROR)
        h = rd_kafka_headers_copy(orig);
    else
        h = rd_kafka_headers_new(4);
    snprintf(part, sizeof part, "%d", (int)m->partition);
    snprintf(off, sizeof off, "%lld", (long long)m->offset);
    rd_kafka_header_add(h, "lapse.error", -1, why, -1);
    rd_kafka_header_add(h, "lapse.topic", -1, rd_kafka_topic_name(m->rkt), -1);
    rd_kafka_header_add(h, "lapse.partition", -1, part, -1);
    rd_kafka_header_add(h, "lapse.offset", -1, off, -1);
    int64_t ts = rd_kafka_message_timestamp(m, &tstype);
    rd_kafka_resp_err_t err;
    int64_t give_up = lapse_clock_mono_ms() + 10000;
    for (;;) {
        err = rd_kafka_producev(
            d->rk, RD_KAFKA_V_TOPIC(d->cfg->ingress_dead_letter_topic),
            RD_KAFKA_V_KEY(m->key, m->key_len), RD_KAFKA_V_VALUE(m->payload, m->len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_TIMESTAMP(ts > 0 ? ts : 0),
            RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || lapse_clock_mono_ms() >= give_up)
            break;
        rd_kafka_poll(d->rk, 100); /* back-pressure: let deliveries drain */
    }
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        d->inflight++; /* the headers are librdkafka's now */
        return;
    }
    rd_kafka_headers_destroy(h);
    d->failed++;
    snprintf(d->err, sizeof d->err, "dead-letter topic %s: %s", d->cfg->ingress_dead_letter_topic,
             rd_kafka_err2str(err));
}

void lapse_deadletter_poll(lapse_deadletter *d, int ms)
{
    rd_kafka_poll(d->rk, ms);
}

int lapse_deadletter_wait(lapse_deadletter *d, volatile sig_atomic_t *stop, int stop_wait_ms,
                          char *errstr, size_t size)
{
    int64_t start = lapse_clock_mono_ms();
    while (d->inflight > 0) {
        rd_kafka_poll(d->rk, 50);
        if (*stop && lapse_clock_mono_ms() - start > stop_wait_ms)
            break;
    }
    int rc = 0;
    if (d->failed > 0) {
        snprintf(errstr, size, "%s", d->err);
        rc = -1;
    } else if (d->inflight > 0) {
        snprintf(errstr, size, "%ld dead-letter copies unacknowledged", d->inflight);
        rc = -1;
    }
    d->failed = 0;
    return rc;
}

uint64_t lapse_deadletter_acked(const lapse_deadletter *d)
{
    return d->acked;
}
