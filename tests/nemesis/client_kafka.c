/*
 * client_kafka — nemesis-client's kafka way: ops as messages on the
 * ingress topic, for lapse-producer --from-kafka (docs/protocol.md, "Kafka
 * ingress"), keyed by ID (one partition per ID: its order kept).
 *
 * An op goes as a command ({"op": ...}), or as a raw signal the driver's
 * ingress rules turn into one, recorded as what the rule writes:
 *   {"dev": ID, "kind": "beat"}             watch ID +BEAT_MS (time "arrival",
 *                                           recover = true)
 *   {"dev": ID, "kind": "ping", "ts": T}    extend ID @(T + PING_MS) (time
 *                                           from the field)
 * About 1 message in 50 is preceded by a command with no time for the same
 * ID (never recorded): the ingress dead-letters it and must apply the next.
 *
 * Acknowledgement: an op is acked ok once the ingress's group has
 * committed past its message (the ingress commits a batch only after
 * every write of it is applied: the commit bounds the application from
 * above); ok:false when librdkafka gave the message up (never in the topic,
 * never applied). rd_kafka_committed on a handle of our own with the
 * ingress's group.id asks the coordinator without joining the group.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

#define BEAT_MS 4000
#define PING_MS 6000
#define COMMITTED_EVERY_MS 500
#define COMMITTED_TIMEOUT_MS 400

struct sent {
    uint64_t n;
    int32_t partition; /* -1 until delivered */
    int64_t offset;
    int state; /* 0 in flight to Kafka, 1 in the topic, 2 given up */
};

struct kafka_way {
    rd_kafka_t *producer, *reader;
    const char *topic;
    uint64_t seed;
    struct sent *sent; /* oldest first; acked ones compacted away */
    size_t count, cap;
    int64_t asked_ms;
    int failed; /* the history could not be written (in a callback) */
};

static struct sent *find(struct kafka_way *k, uint64_t n)
{
    for (size_t i = k->count; i-- > 0;)
        if (k->sent[i].n == n)
            return &k->sent[i];
    return NULL;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    struct kafka_way *k = opaque;
    uint64_t n = (uint64_t)(uintptr_t)m->_private;
    struct sent *s = find(k, n);
    if (!s)
        return;
    if (m->err) {
        s->state = 2;
    } else {
        s->state = 1;
        s->partition = m->partition;
        s->offset = m->offset;
    }
}

/* Whether op n gets turned into a raw signal (or preceded by a bad
 * message): its own draw, so the same seed sends the same messages. */
static unsigned pick(uint64_t seed, uint64_t n, unsigned salt)
{
    uint64_t z = seed ^ (n * UINT64_C(0x9e3779b97f4a7c15)) ^ salt;
    z = (z ^ (z >> 31)) * UINT64_C(0xbf58476d1ce4e5b9);
    return (unsigned)((z ^ (z >> 29)) % 100);
}

static int produce(struct kafka_way *k, const char *id, const char *value, uint64_t n)
{
    for (;;) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            k->producer, RD_KAFKA_V_TOPIC(k->topic), RD_KAFKA_V_KEY(id, strlen(id)),
            RD_KAFKA_V_VALUE((void *)value, strlen(value)),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE((void *)(uintptr_t)n),
            RD_KAFKA_V_END);
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return err ? -1 : 0;
        rd_kafka_poll(k->producer, 100); /* Kafka down: wait for room */
    }
}

static int kafka_submit(void *ctx, struct op *o)
{
    struct kafka_way *k = ctx;
    if (k->count == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 4096;
        struct sent *s = realloc(k->sent, cap * sizeof *s);
        if (!s)
            return -1;
        k->sent = s;
        k->cap = cap;
    }
    int64_t sent = client_now_ms();
    if (o->kind == LAPSE_WHEN_ABS)
        o->when += sent;
    if (pick(k->seed, o->n, 1) < 2) { /* a bad command first, never recorded */
        char bad[160];
        snprintf(bad, sizeof bad, "{\"op\": \"touch\", \"id\": \"%s\"}", o->id);
        if (produce(k, o->id, bad, UINT64_MAX) < 0)
            fprintf(stderr, "nemesis-client: the bad message was not queued\n");
    }
    json_t *j = json_object();
    unsigned raw = pick(k->seed, o->n, 2);
    if (o->op == LAPSE_OP_WATCH && o->kind == LAPSE_WHEN_REL && raw < 50) {
        json_object_set_new(j, "dev", json_string(o->id));
        json_object_set_new(j, "kind", json_string("beat"));
        o->when = BEAT_MS;
        o->has_payload = 0;
    } else if (o->op == LAPSE_OP_EXTEND && o->kind == LAPSE_WHEN_ABS && raw < 50) {
        json_object_set_new(j, "dev", json_string(o->id));
        json_object_set_new(j, "kind", json_string("ping"));
        json_object_set_new(j, "ts", json_integer(sent));
        o->when = sent + PING_MS;
        o->has_payload = 0;
    } else {
        client_op_fields(j, o); /* a command is the op as the history has it */
    }
    char *value = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!value)
        return -1;
    int rc = client_record_op(o, sent);
    if (rc == 0) {
        k->sent[k->count++] = (struct sent){.n = o->n, .partition = -1};
        if (produce(k, o->id, value, o->n) < 0) {
            k->count--;
            rc = client_record_ack(o->n, "not queued for Kafka");
        }
    }
    free(value);
    return rc;
}

/* Asks the group's committed offsets and acks what they pass (and what
 * Kafka gave up). */
static int settle(struct kafka_way *k)
{
    rd_kafka_poll(k->producer, 0);
    int64_t now = client_now_ms();
    int ask = now - k->asked_ms >= COMMITTED_EVERY_MS;
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(8);
    int known = 0; /* parts holds committed offsets */
    if (ask) {
        k->asked_ms = now;
        for (size_t i = 0; i < k->count; i++)
            if (k->sent[i].state == 1 &&
                !rd_kafka_topic_partition_list_find(parts, k->topic, k->sent[i].partition))
                rd_kafka_topic_partition_list_add(parts, k->topic, k->sent[i].partition);
        /* (Kafka down: asked again later) */
        known = parts->cnt > 0 && rd_kafka_committed(k->reader, parts, COMMITTED_TIMEOUT_MS) ==
                                      RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    size_t keep = 0;
    int rc = 0;
    for (size_t i = 0; i < k->count; i++) {
        struct sent *s = &k->sent[i];
        const char *err = NULL;
        int done = 0;
        if (s->state == 2) {
            done = 1;
            err = "not delivered to Kafka";
        } else if (s->state == 1 && known) {
            rd_kafka_topic_partition_t *p =
                rd_kafka_topic_partition_list_find(parts, k->topic, s->partition);
            done = p && !p->err && p->offset > s->offset;
        }
        if (done) {
            if (rc == 0 && client_record_ack(s->n, err) < 0)
                rc = -1;
        } else {
            k->sent[keep++] = *s;
        }
    }
    k->count = keep;
    rd_kafka_topic_partition_list_destroy(parts);
    return rc;
}

static int kafka_flush(void *ctx)
{
    return settle(ctx);
}

static int kafka_drain(void *ctx, int64_t wait_ms)
{
    struct kafka_way *k = ctx;
    int64_t end = client_now_ms() + wait_ms;
    int rc = 0;
    while (rc == 0 && k->count > 0 && client_now_ms() < end) {
        rd_kafka_poll(k->producer, 100);
        rc = settle(k);
    }
    if (k->count)
        fprintf(stderr,
                "nemesis-client: %zu messages not committed by the ingress after %" PRId64
                " ms (outcomes unknown)\n",
                k->count, wait_ms);
    return rc;
}

static void kafka_close(void *ctx)
{
    struct kafka_way *k = ctx;
    rd_kafka_flush(k->producer, 1000);
    rd_kafka_destroy(k->producer);
    rd_kafka_destroy(k->reader);
    free(k->sent);
    free(k);
}

static rd_kafka_t *handle(rd_kafka_type_t type, const struct client_opts *opts, void *opaque)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", opts->brokers, err, sizeof err) ||
        rd_kafka_conf_set(conf, "log.connection.close", "false", err, sizeof err) ||
        rd_kafka_conf_set(conf, "reconnect.backoff.max.ms", "1000", err, sizeof err) ||
        (type == RD_KAFKA_PRODUCER &&
         (rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof err) ||
          rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof err) ||
          rd_kafka_conf_set(conf, "message.timeout.ms", "120000", err, sizeof err))) ||
        (type == RD_KAFKA_CONSUMER &&
         rd_kafka_conf_set(conf, "group.id", opts->group, err, sizeof err))) {
        fprintf(stderr, "nemesis-client: kafka: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    if (type == RD_KAFKA_PRODUCER) {
        rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
        rd_kafka_conf_set_opaque(conf, opaque);
    }
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "nemesis-client: kafka: %s\n", err);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

void *client_kafka_open(const struct client_opts *opts)
{
    if (!opts->brokers || !opts->topic || !opts->group) {
        fprintf(stderr, "nemesis-client: --via kafka needs --brokers, --topic and --group\n");
        return NULL;
    }
    struct kafka_way *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->topic = opts->topic;
    k->seed = opts->seed;
    k->producer = handle(RD_KAFKA_PRODUCER, opts, k);
    k->reader = k->producer ? handle(RD_KAFKA_CONSUMER, opts, NULL) : NULL;
    if (!k->reader) {
        if (k->producer)
            rd_kafka_destroy(k->producer);
        free(k);
        return NULL;
    }
    return k;
}

const struct client_way client_kafka_way = {
    .name = "kafka",
    .submit = kafka_submit,
    .flush = kafka_flush,
    .drain = kafka_drain,
    .close = kafka_close,
    .tick_ms = 20,
};
