/*
 * client — what nemesis-client's three ways to lapse share: the drawn op,
 * the history record, and the interface each way implements.
 *
 *   lib    the producer library in this process (client.c)
 *   stdin  one lapse-producer per batch, the batch's lines on its stdin
 *          (client_stdin.c)
 *   kafka  messages on the ingress topic, commands and raw signals, for
 *          lapse-producer --from-kafka; acknowledged when the ingress's
 *          group commits past them (client_kafka.c)
 */
#ifndef NEMESIS_CLIENT_H
#define NEMESIS_CLIENT_H

#include <jansson.h>
#include <stdint.h>

#include "producer.h"

/* One drawn op. */
struct op {
    uint64_t n;
    enum lapse_op op;
    char id[96];
    enum lapse_when_kind kind;
    int64_t when;   /* in_ms, or at_ms once submitted (drawn: offset from now) */
    int64_t period; /* repeat only */
    char payload[64];
    int has_payload;
};

int64_t client_now_ms(void);

/* Records op o as sent now (the "op" line; its when already absolute for
 * an at_ms), or as the kind of raw signal the kafka way turned it into
 * (op, kind and when changed by the caller first). 0, or -1 with errno. */
int client_record_op(const struct op *o, int64_t sent_ms);

/* Sets in j an op's fields as the ingress's JSON command and the history
 * both name them: op, id, at_ms or in_ms, period_ms, payload. */
void client_op_fields(json_t *j, const struct op *o);

/* Records op n's outcome: err NULL for ok. 0, or -1 with errno. */
int client_record_ack(uint64_t n, const char *err);

/* A way to lapse. submit queues a recorded op; flush applies what is
 * queued and records the outcomes known by then; drain waits up to
 * wait_ms for the outcomes still unknown (kafka: the commits) and records
 * them; close frees. Each returns 0, or -1 when the history cannot be
 * written (errno set) or the way cannot go on (a message on stderr). */
struct client_way {
    const char *name;
    int (*submit)(void *ctx, struct op *o);
    int (*flush)(void *ctx);
    int (*drain)(void *ctx, int64_t wait_ms);
    void (*close)(void *ctx);
    int tick_ms; /* how often the main loop flushes */
};

extern const struct client_way client_stdin_way;
extern const struct client_way client_kafka_way;

/* What the stdin and kafka ways need from the command line. */
struct client_opts {
    const char *conf;     /* lapse config (lib, stdin) */
    const char *producer; /* lapse-producer's path (stdin) */
    const char *brokers;  /* kafka: bootstrap servers */
    const char *topic;    /* kafka: the ingress topic */
    const char *group;    /* kafka: the ingress's consumer group */
    uint64_t seed;
};

void *client_stdin_open(const struct client_opts *opts);
void *client_kafka_open(const struct client_opts *opts);

#endif
