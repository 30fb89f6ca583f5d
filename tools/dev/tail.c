/*
 * lapse-tail — print the lapse events in a Kafka topic.
 *
 * Why it exists: the demo needs a readable view of timeouts as they fire, and
 * the integration tests need a dumb, dependable reader that prints what
 * reached Kafka, stops after N events or a time limit, and says so by its
 * exit status. It deliberately shares no code with lapse's common/ library,
 * so a bug there cannot hide itself from the tests that use this tool.
 *
 * How: an assign-only consumer. Partitions are found with a metadata request
 * for all topics (retried until ours shows up; a request naming the topic
 * could make the broker auto-create it with default settings), then every
 * partition is assigned from its beginning (its low watermark). Nothing is
 * ever committed and the consumer never joins a group, so there is no
 * rebalance delay and no state is left behind. The group.id set below
 * exists only because librdkafka 2.0's assign() refuses a handle without
 * one; it is unique per process.
 * Messages come out in order within a partition, interleaved across them.
 *
 * Invariants:
 *  - one message, one output, flushed before the next message is read:
 *    json prints the value verbatim (one line for lapse's events, which
 *    never hold a raw newline); demo prints one line, control bytes escaped;
 *  - the tail never creates, commits or changes anything in Kafka;
 *  - a value that is not a lapse event never stops the tail;
 *  - signals only set a flag; a signal is seen within TICK_MS (within
 *    METADATA_MS while the topic is still being looked up).
 *
 * This file is the options and the consumer; how a message is printed
 * (json or demo) is tail_print.c's, the settings both read tail_priv.h's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "tail_priv.h"

#define PROG "lapse-tail"
#define TICK_MS 100        /* longest wait before the stop flag is seen */
#define METADATA_MS 1000   /* longest single metadata request */
#define WARN_EVERY_MS 5000 /* at most one Kafka warning per this period */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " -b BROKERS -t TOPIC [--count N] [--timeout-ms MS]\n"
               "                  [--format json|demo] [--keys] [-X prop=value ...]\n"
               "       " PROG " --help\n"
               "\n"
               "Prints every message of TOPIC, all partitions, from the beginning.\n"
               "\n"
               "  -b, --brokers BROKERS  bootstrap servers, host:port[,host:port...]\n"
               "  -t, --topic TOPIC      topic to read; waited for until it exists\n"
               "  --count N              exit 0 after N messages\n"
               "  --timeout-ms MS        exit after MS ms: 0, or 1 if --count N was not met\n"
               "  --format json          each message value on one line (default)\n"
               "  --format demo          one readable line per lapse event\n"
               "  --keys                 json format: print KEY<TAB>VALUE\n"
               "  -X prop=value          extra librdkafka property (e.g. -X debug=fetch)\n"
               "\n"
               "Without --count and --timeout-ms it runs until SIGTERM/SIGINT.\n");
}

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Parses all of s as an integer in [min, max]. Returns 0, or -1. */
static int parse_ll(const char *s, long long min, long long max, long long *out)
{
    char *end;
    long long v;

    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/*
 * Fills *o from argv. Returns 0, 1 when --help was printed, or -1 after a
 * one-line reason on stderr.
 */
static int parse_args(int argc, char **argv, struct opts *o)
{
    enum { OPT_COUNT = 256, OPT_TIMEOUT, OPT_FORMAT, OPT_KEYS };
    static const struct option longopts[] = {
        {"brokers", required_argument, NULL, 'b'},
        {"topic", required_argument, NULL, 't'},
        {"count", required_argument, NULL, OPT_COUNT},
        {"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"keys", no_argument, NULL, OPT_KEYS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    char *eq;

    memset(o, 0, sizeof(*o));
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:t:X:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            o->brokers = optarg;
            break;
        case 't':
            o->topic = optarg;
            break;
        case 'h':
            usage(stdout);
            return 1;
        case OPT_KEYS:
            o->keys = 1;
            break;
        case OPT_COUNT:
            if (parse_ll(optarg, 1, INT64_MAX, &o->count) == -1) {
                fprintf(stderr, PROG ": --count needs an "
                                     "integer >= 1\n");
                return -1;
            }
            break;
        case OPT_TIMEOUT:
            if (parse_ll(optarg, 1, INT64_MAX / 2, &o->timeout_ms) == -1) {
                fprintf(stderr, PROG ": --timeout-ms needs "
                                     "an integer >= 1\n");
                return -1;
            }
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "json") == 0)
                o->format = FORMAT_JSON;
            else if (strcmp(optarg, "demo") == 0)
                o->format = FORMAT_DEMO;
            else {
                fprintf(stderr,
                        PROG ": --format is json or "
                             "demo, not '%s'\n",
                        optarg);
                return -1;
            }
            break;
        case 'X':
            eq = strchr(optarg, '=');
            if (eq == NULL || eq == optarg || o->conf_cnt == MAX_CONF) {
                fprintf(stderr,
                        PROG ": -X needs prop=value "
                             "(at most %d)\n",
                        MAX_CONF);
                return -1;
            }
            *eq = '\0';
            o->conf[o->conf_cnt][0] = optarg;
            o->conf[o->conf_cnt][1] = eq + 1;
            o->conf_cnt++;
            break;
        case ':':
            fprintf(stderr,
                    PROG ": %s needs a value (try "
                         "--help)\n",
                    argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr,
                    PROG ": unknown option %s (try "
                         "--help)\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr,
                PROG ": unexpected argument \"%s\" (try "
                     "--help)\n",
                argv[optind]);
        return -1;
    }
    if (o->brokers == NULL || o->topic == NULL) {
        fprintf(stderr, PROG ": -b BROKERS and -t TOPIC are required "
                             "(try --help)\n");
        return -1;
    }
    return 0;
}

/*
 * Reports a Kafka error on stderr, at most once per WARN_EVERY_MS: brokers
 * that are down (on purpose, in tests) must not flood the output, but a
 * tail that waits on a wrong address must not be silent either. librdkafka
 * keeps retrying by itself; nothing here ends the tail.
 */
static void warn_kafka(const char *what)
{
    static long long last;
    long long now = now_ms();

    if (last != 0 && now - last < WARN_EVERY_MS)
        return;
    last = now;
    fprintf(stderr, PROG ": warning: kafka: %s\n", what);
}

/* error_cb: runs on the main thread, inside rd_kafka_consumer_poll(). */
static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    (void)err;
    (void)opaque;
    warn_kafka(reason);
}

/* Sets one property or prints why not. Returns 0 or -1. */
static int conf_set(rd_kafka_conf_t *conf, const char *name, const char *value)
{
    char errstr[512];

    if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, PROG ": %s\n", errstr);
        return -1;
    }
    return 0;
}

/* Creates the consumer. Returns NULL after printing why. */
static rd_kafka_t *consumer_new(const struct opts *o)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char group[64], errstr[512];
    rd_kafka_t *rk;
    int i;

    snprintf(group, sizeof(group), "lapse-tail-%ld", (long)getpid());
    if (conf_set(conf, "bootstrap.servers", o->brokers) == -1 ||
        conf_set(conf, "group.id", group) == -1 ||
        conf_set(conf, "enable.auto.commit", "false") == -1 ||
        conf_set(conf, "enable.auto.offset.store", "false") == -1 ||
        conf_set(conf, "enable.partition.eof", "false") == -1 ||
        conf_set(conf, "auto.offset.reset", "earliest") == -1 ||
        conf_set(conf, "fetch.wait.max.ms", "10") == -1 ||
        /* Back from a broker outage within a second, not the default
             * ten (tests take brokers down on purpose). */
        conf_set(conf, "reconnect.backoff.max.ms", "1000") == -1 ||
        conf_set(conf, "log_level", "2") == -1) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    /* Errors reach on_error once; librdkafka's own logs of the same
         * events stay below log_level unless -X log_level=7 asks. */
    rd_kafka_conf_set_error_cb(conf, on_error);
    for (i = 0; i < o->conf_cnt; i++) {
        if (conf_set(conf, o->conf[i][0], o->conf[i][1]) == -1) {
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    }
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (rk == NULL) {
        fprintf(stderr, PROG ": cannot create consumer: %s\n", errstr);
        rd_kafka_conf_destroy(conf); /* not taken on failure */
        return NULL;
    }
    rd_kafka_poll_set_consumer(rk);
    return rk;
}

/* Milliseconds left before the deadline (0: none), capped at cap. */
static int wait_ms(long long deadline, int cap)
{
    long long left;

    if (deadline == 0)
        return cap;
    left = deadline - now_ms();
    if (left <= 0)
        return 0;
    return left < cap ? (int)left : cap;
}

/*
 * Replaces each partition's logical BEGINNING by its low watermark, where
 * the brokers answer in time. Why: librdkafka 2.0 resolves a logical offset
 * only once it knows the partition's leader, and when assign() comes right
 * after the first metadata it often does not yet, so the lookup waits for a
 * 500 ms retry timer; an absolute offset starts fetching at once. One
 * ListOffsets request per leader: in that request the "timestamp" -2
 * (== RD_KAFKA_OFFSET_BEGINNING) means "earliest offset". Partitions the
 * brokers did not answer for stay at BEGINNING: still read from the
 * beginning, only later.
 */
static void start_offsets(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *parts,
                          long long deadline)
{
    rd_kafka_topic_partition_list_t *q = rd_kafka_topic_partition_list_copy(parts);
    int ms = wait_ms(deadline, METADATA_MS);
    int i;

    if (ms > 0 && rd_kafka_offsets_for_times(rk, q, ms) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (i = 0; i < q->cnt && i < parts->cnt; i++) {
            if (q->elems[i].err == RD_KAFKA_RESP_ERR_NO_ERROR && q->elems[i].offset >= 0 &&
                q->elems[i].partition == parts->elems[i].partition)
                parts->elems[i].offset = q->elems[i].offset;
        }
    }
    rd_kafka_topic_partition_list_destroy(q);
}

/*
 * Finds the topic's partitions and assigns all of them from the beginning.
 * Retries while the topic does not exist yet (or the brokers cannot be
 * reached). Returns 0; 1 when stopped by a signal; -1 after printing why,
 * including when the deadline passed first.
 */
static int assign_all(rd_kafka_t *rk, const char *topic, long long deadline)
{
    rd_kafka_topic_partition_list_t *parts = NULL;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
    rd_kafka_message_t *m;
    int i, j;

    while (!stop_requested && (deadline == 0 || now_ms() < deadline)) {
        const struct rd_kafka_metadata *md = NULL;
        int ms = wait_ms(deadline, METADATA_MS);

        /* All topics, not just ours: a request naming the topic
                 * may create it with the broker's defaults (the mock
                 * cluster does, even for consumers), and the tail must
                 * never decide a topic's partition count. */
        err = rd_kafka_metadata(rk, 1, NULL, &md, ms > 0 ? ms : 1);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            err = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
            for (i = 0; i < md->topic_cnt; i++) {
                const struct rd_kafka_metadata_topic *t = &md->topics[i];

                if (strcmp(t->topic, topic) != 0)
                    continue;
                err = t->err;
                if (err || t->partition_cnt <= 0)
                    break;
                parts = rd_kafka_topic_partition_list_new(t->partition_cnt);
                for (j = 0; j < t->partition_cnt; j++)
                    rd_kafka_topic_partition_list_add(parts, topic, t->partitions[j].id)->offset =
                        RD_KAFKA_OFFSET_BEGINNING;
                break;
            }
            rd_kafka_metadata_destroy(md);
        }
        if (parts != NULL)
            break;
        /* Not there yet (or brokers unreachable): ask again soon;
                 * consumer_poll doubles as the pause and serves events. */
        m = rd_kafka_consumer_poll(rk, wait_ms(deadline, TICK_MS));
        if (m != NULL)
            rd_kafka_message_destroy(m);
    }
    if (parts == NULL) {
        if (stop_requested)
            return 1;
        fprintf(stderr,
                PROG ": topic %s not available before the "
                     "timeout: %s\n",
                topic, rd_kafka_err2str(err));
        return -1;
    }
    start_offsets(rk, parts, deadline);
    err = rd_kafka_assign(rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    if (err) {
        fprintf(stderr, PROG ": assign %s: %s\n", topic, rd_kafka_err2str(err));
        return -1;
    }
    return 0;
}

/*
 * Prints messages until the count, the deadline or a signal. Returns the
 * exit status.
 */
static int tail(rd_kafka_t *rk, const struct opts *o, long long deadline)
{
    long long seen = 0;
    int r;

    if ((r = assign_all(rk, o->topic, deadline)) != 0)
        return r == 1 ? 0 : 1;

    while (!stop_requested && (o->count == 0 || seen < o->count)) {
        rd_kafka_message_t *m;

        if (deadline != 0 && now_ms() >= deadline)
            break;
        m = rd_kafka_consumer_poll(rk, wait_ms(deadline, TICK_MS));
        if (m == NULL)
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                warn_kafka(rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            continue;
        }
        r = print_message(o, m);
        rd_kafka_message_destroy(m);
        if (r == -1) {
            fprintf(stderr, PROG ": stdout: %s\n", strerror(errno));
            return 1;
        }
        seen++;
    }
    if (o->count > 0 && seen < o->count && !stop_requested) {
        fprintf(stderr,
                PROG ": timed out after %lld ms with %lld of "
                     "%lld messages\n",
                o->timeout_ms, seen, o->count);
        return 1;
    }
    return 0;
}

static int install_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) == -1 || sigaction(SIGINT, &sa, NULL) == -1)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    rd_kafka_t *rk;
    long long deadline;
    int r;

    if ((r = parse_args(argc, argv, &o)) != 0)
        return r == 1 ? 0 : 2;
    deadline = o.timeout_ms > 0 ? now_ms() + o.timeout_ms : 0;
    if (install_signals() == -1) {
        fprintf(stderr, PROG ": sigaction: %s\n", strerror(errno));
        return 1;
    }
    if ((rk = consumer_new(&o)) == NULL)
        return 1;

    r = tail(rk, &o, deadline);

    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return r;
}
