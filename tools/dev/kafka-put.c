/*
 * lapse-kafka-put — produce stdin lines to a Kafka topic (a test tool).
 *
 * Why it exists: the ingress tests need to put commands, raw signals and
 * garbage into a topic of lapse-kafka-dev, and know they are all there
 * before looking at Redis. Each stdin line is one message: "key<TAB>value",
 * or just "value" (no key) when the line has no TAB; with --no-key the
 * whole line is the value. An empty line is a message with an empty value.
 * The newline is not part of the value; a trailing \r is.
 *
 * Invariants: exit status 0 only when every message was acknowledged by the
 * brokers (acks=all); per-partition order is the line order (one request in
 * flight). Not idempotent: with the mock cluster, getting a producer id
 * sometimes costs a 1 s retry, too slow for latency tests; a retried request
 * may duplicate a message, which the tests (at least once) tolerate. Exit 1
 * with a one-line reason otherwise. Shares no code with lapse's common/, like lapse-tail, so a bug
 * there cannot hide itself from the tests.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#define PROG "lapse-kafka-put"
#define FLUSH_MS 30000 /* longest wait for the last acknowledgements */

struct opts {
    const char *brokers, *topic;
    int partition; /* RD_KAFKA_PARTITION_UA: by key (librdkafka's partitioner) */
    long long ts;  /* message timestamp, unix ms; 0: now */
    int no_key;    /* the whole line is the value */
};

static long long failed; /* messages the brokers did not take */
static char first_error[256];

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err && failed++ == 0)
        snprintf(first_error, sizeof first_error, "%s", rd_kafka_err2str(m->err));
}

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " -b BROKERS -t TOPIC [-p PARTITION] [--timestamp MS] [--no-key]\n"
               "Produces each stdin line as one message: key<TAB>value, or value alone\n"
               "when the line has no TAB (or with --no-key). Exits 0 once every message\n"
               "is acknowledged.\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"brokers", required_argument, NULL, 'b'},
        {"topic", required_argument, NULL, 't'},
        {"partition", required_argument, NULL, 'p'},
        {"timestamp", required_argument, NULL, 'T'},
        {"no-key", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    char *end;
    memset(o, 0, sizeof *o);
    o->partition = RD_KAFKA_PARTITION_UA;
    while ((ch = getopt_long(argc, argv, "b:t:p:T:nh", lo, NULL)) != -1) {
        switch (ch) {
        case 'b':
            o->brokers = optarg;
            break;
        case 't':
            o->topic = optarg;
            break;
        case 'n':
            o->no_key = 1;
            break;
        case 'p':
            o->partition = (int)strtol(optarg, &end, 10);
            if (*end || o->partition < 0) {
                fprintf(stderr, PROG ": bad partition '%s'\n", optarg);
                return -1;
            }
            break;
        case 'T':
            o->ts = strtoll(optarg, &end, 10);
            if (*end || o->ts <= 0) {
                fprintf(stderr, PROG ": bad timestamp '%s'\n", optarg);
                return -1;
            }
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, PROG ": unexpected argument \"%s\" (try --help)\n", argv[optind]);
        return -1;
    }
    if (!o->brokers || !o->topic) {
        fprintf(stderr, PROG ": -b BROKERS and -t TOPIC are required (try --help)\n");
        return -1;
    }
    return 0;
}

static rd_kafka_t *producer_new(const struct opts *o)
{
    static const char *const props[][2] = {
        {"enable.idempotence", "false"},
        {"max.in.flight", "1"},
        {"acks", "all"},
        {"linger.ms", "1"},
        {"message.timeout.ms", "20000"},
        {"log_level", "3"},
    };
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", o->brokers, err, sizeof err) !=
        RD_KAFKA_CONF_OK)
        goto fail;
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], err, sizeof err) != RD_KAFKA_CONF_OK)
            goto fail;
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (rk)
        return rk;
fail:
    fprintf(stderr, PROG ": %s\n", err);
    rd_kafka_conf_destroy(conf);
    return NULL;
}

/* Produces one message, waiting while the local queue is full. */
static int put(rd_kafka_t *rk, const struct opts *o, const char *key, size_t klen, const char *val,
               size_t vlen)
{
    for (;;) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(o->topic), RD_KAFKA_V_PARTITION(o->partition),
            RD_KAFKA_V_KEY(key, klen), RD_KAFKA_V_VALUE((void *)val, vlen),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_TIMESTAMP(o->ts), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
            return 0;
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            fprintf(stderr, PROG ": produce: %s\n", rd_kafka_err2str(err));
            return -1;
        }
        rd_kafka_poll(rk, 10);
    }
}

int main(int argc, char **argv)
{
    struct opts o;
    int r = parse_args(argc, argv, &o);
    if (r != 0)
        return r == 1 ? 0 : 2;
    rd_kafka_t *rk = producer_new(&o);
    if (!rk)
        return 1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long long count = 0;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, stdin)) >= 0) {
        size_t len = (size_t)n;
        if (len && line[len - 1] == '\n')
            len--;
        char *tab = o.no_key ? NULL : memchr(line, '\t', len);
        if (tab)
            rc = put(rk, &o, line, (size_t)(tab - line), tab + 1, len - (size_t)(tab - line) - 1);
        else
            rc = put(rk, &o, NULL, 0, line, len);
        count++;
        rd_kafka_poll(rk, 0);
    }
    free(line);
    if (rc == 0 && ferror(stdin)) {
        fprintf(stderr, PROG ": stdin: %s\n", strerror(errno));
        rc = -1;
    }
    if (rd_kafka_flush(rk, FLUSH_MS) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, PROG ": %d of %lld messages not acknowledged within %d ms\n",
                rd_kafka_outq_len(rk), count, FLUSH_MS);
        rc = -1;
    } else if (failed) {
        fprintf(stderr, PROG ": %lld of %lld messages failed: %s\n", failed, count, first_error);
        rc = -1;
    }
    rd_kafka_destroy(rk);
    return rc == 0 ? 0 : 1;
}
