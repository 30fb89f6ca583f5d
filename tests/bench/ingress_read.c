/*
 * lapse-bench-ingress-read: the two clocks of `make bench-ingress`
 * (tests/bench/ingress-run).
 *
 *   kafka BROKERS TOPIC COUNT [NAME=VALUE ...]
 *        the plain Kafka read the ingress is compared with: an assign-only
 *        consumer of every partition of TOPIC from its start (no group, no
 *        commit, no parsing), with the librdkafka properties given, reads
 *        COUNT messages and touches a byte of each value. What a consumer
 *        costs when it does nothing with what it reads: the floor.
 *   metrics PORT COUNT TIMEOUT_MS
 *        an ingress at work: polls its /metrics on 127.0.0.1:PORT every
 *        20 ms until lapse_ingress_signals_extended_total +
 *        lapse_ingress_commands_applied_total reaches COUNT (every message
 *        applied and its batch committed).
 *
 * Both print one line on stdout, "first_ms=A done_ms=B count=N": wall ms
 * (CLOCK_REALTIME, so the driver can set them against its own start) of
 * the first message seen (kafka: received; metrics: messages_total > 0)
 * and of the COUNT-th. Exit 1 (and a reason on stderr) when COUNT was not
 * reached within the timeout (kafka: 300 s).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "glue.h"

#define KAFKA_TIMEOUT_MS 300000
#define POLL_EVERY_MS 20
#define READ_MAX 1024 /* as producer/ingress/ingress.c */

static void usage(FILE *out)
{
    fprintf(out, "usage: lapse-bench-ingress-read kafka BROKERS TOPIC COUNT [NAME=VALUE ...]\n"
                 "       lapse-bench-ingress-read metrics PORT COUNT TIMEOUT_MS\n");
}

static int read_kafka(const char *brokers, const char *topic, int64_t count, char **props,
                      int nprops)
{
    char why[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, why, sizeof why) ||
        rd_kafka_conf_set(conf, "group.id", "lapse-bench-unused", why, sizeof why) ||
        rd_kafka_conf_set(conf, "enable.partition.eof", "false", why, sizeof why)) {
        fprintf(stderr, "lapse-bench-ingress-read: %s\n", why);
        return 1;
    }
    for (int i = 0; i < nprops; i++) {
        char *eq = strchr(props[i], '=');
        if (!eq) {
            fprintf(stderr, "lapse-bench-ingress-read: %s: expected NAME=VALUE\n", props[i]);
            return 1;
        }
        *eq = '\0';
        if (rd_kafka_conf_set(conf, props[i], eq + 1, why, sizeof why)) {
            fprintf(stderr, "lapse-bench-ingress-read: %s\n", why);
            return 1;
        }
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why);
    if (!rk) {
        fprintf(stderr, "lapse-bench-ingress-read: %s\n", why);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    const struct rd_kafka_metadata *md;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) || md->topic_cnt != 1 || md->topics[0].err) {
        fprintf(stderr, "lapse-bench-ingress-read: no metadata for %s\n", topic);
        return 1;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(16);
    for (int p = 0; p < md->topics[0].partition_cnt; p++)
        rd_kafka_topic_partition_list_add(l, topic, md->topics[0].partitions[p].id)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);

    /* read as the ingress reads: what is ready, many messages a call (a
     * poll each costs librdkafka a third more CPU); a poll waits for more */
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    rd_kafka_message_t *ms[READ_MAX];
    int64_t n = 0, first = 0, end = wall_ms() + KAFKA_TIMEOUT_MS;
    unsigned sum = 0;
    while (n < count && wall_ms() < end) {
        ssize_t got = rd_kafka_consume_batch_queue(q, 0, ms, READ_MAX);
        if (got == 0 && (ms[0] = rd_kafka_consumer_poll(rk, 100))) /* a wait for the next */
            got = 1;
        for (ssize_t i = 0; i < got; i++) {
            const rd_kafka_message_t *m = ms[i];
            if (!m->err) {
                if (n++ == 0)
                    first = wall_ms();
                if (m->len)
                    sum += ((const unsigned char *)m->payload)[m->len - 1];
            }
            rd_kafka_message_destroy(ms[i]);
        }
    }
    rd_kafka_queue_destroy(q);
    int64_t done = wall_ms();
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    if (n < count) {
        fprintf(stderr, "lapse-bench-ingress-read: %lld of %lld messages\n", (long long)n,
                (long long)count);
        return 1;
    }
    printf("first_ms=%lld done_ms=%lld count=%lld sum=%u\n", (long long)first, (long long)done,
           (long long)n, sum);
    return 0;
}

/* The value of the first sample of `name` (followed by '{' or ' ') in the
 * Prometheus text, or -1. */
static long long sample(const char *text, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = text; (p = strstr(p, name)); p += len) {
        if ((p != text && p[-1] != '\n') || (p[len] != '{' && p[len] != ' '))
            continue;
        const char *sp = strchr(p, ' ');
        return sp ? atoll(sp + 1) : -1;
    }
    return -1;
}

/* One GET /metrics into buf; 0, or -1 when the ingress does not answer. */
static int get_metrics(int port, char *buf, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
        close(fd);
        return -1;
    }
    size_t have = 0;
    ssize_t r;
    while (have + 1 < size && (r = read(fd, buf + have, size - 1 - have)) > 0)
        have += (size_t)r;
    buf[have] = '\0';
    close(fd);
    return 0;
}

static int watch_metrics(int port, int64_t count, int64_t timeout_ms)
{
    static char buf[1 << 20];
    int64_t first = 0, end = wall_ms() + timeout_ms;
    long long applied = 0;
    while (wall_ms() < end) {
        if (get_metrics(port, buf, sizeof buf) == 0) {
            if (!first && sample(buf, "lapse_ingress_messages_total") > 0)
                first = wall_ms();
            applied = sample(buf, "lapse_ingress_signals_extended_total") +
                      sample(buf, "lapse_ingress_commands_applied_total");
            if (applied >= count) {
                printf("first_ms=%lld done_ms=%lld count=%lld\n", (long long)first,
                       (long long)wall_ms(), applied);
                return 0;
            }
        }
        struct timespec ts = {0, POLL_EVERY_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "lapse-bench-ingress-read: %lld of %lld applied within %lld ms\n", applied,
            (long long)count, (long long)timeout_ms);
    return 1;
}

int main(int argc, char **argv)
{
    int64_t count, port, timeout;
    if (glue_start(argc, argv, usage))
        return 0;
    if (argc >= 5 && strcmp(argv[1], "kafka") == 0 && parse_i64(argv[4], 1, INT64_MAX, &count) == 0)
        return read_kafka(argv[2], argv[3], count, argv + 5, argc - 5);
    if (argc == 5 && strcmp(argv[1], "metrics") == 0 && parse_i64(argv[2], 1, 65535, &port) == 0 &&
        parse_i64(argv[3], 1, INT64_MAX, &count) == 0 &&
        parse_i64(argv[4], 1, INT64_MAX, &timeout) == 0)
        return watch_metrics((int)port, count, timeout);
    usage(stderr);
    return 2;
}
