/*
 * lapse-kafka-dev — a throwaway Kafka for development and tests.
 *
 * Why it exists: lapse's tests and `make run` need a Kafka they can start in
 * milliseconds, on loopback, without a JVM, and break on purpose. librdkafka
 * ships a mock cluster (rdkafka_mock.h) that speaks enough of the protocol
 * for producers, idempotent producers, assign-only consumers and consumer
 * groups; this program wraps it in a process with a tiny control channel.
 *
 * Protocol (see usage()): the bootstrap address is the first line of stdout,
 * flushed at once. Then every non-blank line read on stdin is one command and
 * gets exactly one reply line on stdout, "ok" or "error: <reason>", flushed.
 * Commands act synchronously: when "ok" is printed the mock cluster has
 * already applied the change.
 *
 * Invariants:
 *  - the listeners are the mock cluster's own: 127.0.0.1, kernel-chosen port,
 *    one per broker; nothing here opens another socket;
 *  - stdin EOF only stops the control channel; the cluster keeps serving
 *    until SIGTERM or SIGINT, whose handler only sets a flag that the main
 *    loop checks at least every POLL_MS;
 *  - a reply that cannot be written (stdout closed) is dropped; it never
 *    stops the cluster (SIGPIPE is ignored).
 *
 * The mock's group coordinator is librdkafka's and cannot be changed from
 * here. Where it differs from Kafka's in time (usage() says how): a group
 * whose last member left stays in a join phase for session.timeout.ms - 1 s
 * instead of emptying at once, so a lone consumer's restart waits that long;
 * a member that dies stays until its session ends and may be handed
 * partitions meanwhile, which costs about twice that; group.instance.id is
 * read and ignored (no static membership in 2.0.2).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "stop.h"

#define PROG "lapse-kafka-dev"
#define POLL_MS 100       /* upper bound on the reaction time to a signal */
#define LINE_MAX_LEN 1024 /* longest control line accepted */
#define MAX_ARGS 8        /* more words than this on a line is an error */
#define MAX_BROKERS 64
#define MAX_PARTITIONS 10000
#define MAX_ERROR_COUNT 1000000

/* Command-line settings. */
struct opts {
    int brokers;    /* number of mock brokers, ids 1..brokers */
    int partitions; /* partitions of each topic named on the command line */
    char **topics;  /* argv slice: topics to create at start */
    int topic_cnt;
};

/* The running control channel: where stdin bytes collect until a newline. */
struct control {
    rd_kafka_mock_cluster_t *mcluster;
    int brokers; /* for the replication factor of new topics */
    char buf[LINE_MAX_LEN + 1];
    size_t len;     /* bytes in buf */
    int discarding; /* inside an overlong line: drop until newline */
    int eof;        /* stdin is done; keep serving anyway */
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [--brokers N] [--partitions P] [TOPIC ...]\n"
            "       " PROG " --help\n"
            "\n"
            "Runs a librdkafka mock Kafka cluster on 127.0.0.1 until SIGTERM/SIGINT.\n"
            "\n"
            "  --brokers N      number of brokers, ids 1..N (default 1, at most %d)\n"
            "  --partitions P   partitions of each TOPIC (default 4, at most %d)\n"
            "  TOPIC            created at start; replication factor min(3, N)\n"
            "\n"
            "The first line of stdout is the bootstrap address (host:port[,host:port...]).\n"
            "Then each stdin line is a command answered by one line, \"ok\" or\n"
            "\"error: <reason>\":\n"
            "  down <broker_id>                  disconnect the broker, refuse new connections\n"
            "  up <broker_id>                    accept connections again\n"
            "  rtt <broker_id> <ms>              delay every response of the broker\n"
            "  error <api_key> <err_code> <cnt>  the next <cnt> requests with that API key\n"
            "                                    fail with that Kafka error code (e.g.\n"
            "                                    'error 0 6 3': 3 Produce NOT_LEADER)\n"
            "  topic <name> <partitions>         create a topic\n"
            "broker_id -1 means all brokers. Blank lines are ignored. At stdin EOF the\n"
            "cluster keeps serving.\n"
            "\n"
            "Consumer groups: a first join is held 3 s. Once the last member of a group\n"
            "has left, the next one is let in session.timeout.ms - 1 s later (Kafka\n"
            "empties the group at once: the next one waits only the first join's delay).\n"
            "A consumer restarted often sets session.timeout.ms to about 4000 (not below\n"
            "3500: a member whose session is shorter than the 3 s is dropped).\n",
            MAX_BROKERS, MAX_PARTITIONS);
}

/*
 * Parses all of s as a decimal integer within [min, max] into *out.
 * Returns 0, or -1 with *out untouched.
 */
static int parse_int(const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Kafka's own rule for topic names: 1..249 of [a-zA-Z0-9._-], not "." or "..". */
static int topic_name_ok(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > 249 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    return strspn(name, "abcdefghijklmnopqrstuvwxyz"
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789._-") == n;
}

/*
 * Fills *o from argv. Returns 0, 1 when --help was printed, or -1 after
 * printing a one-line reason on stderr.
 */
static int parse_args(int argc, char **argv, struct opts *o)
{
    long v;
    int i;

    o->brokers = 1;
    o->partitions = 4;
    o->topics = NULL;
    o->topic_cnt = 0;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--brokers") == 0 || strcmp(a, "--partitions") == 0) {
            int is_brokers = a[2] == 'b';
            long max = is_brokers ? MAX_BROKERS : MAX_PARTITIONS;

            if (i + 1 >= argc || parse_int(argv[i + 1], 1, max, &v) == -1) {
                fprintf(stderr,
                        PROG ": %s needs an integer 1..%ld "
                             "(try --help)\n",
                        a, max);
                return -1;
            }
            if (is_brokers)
                o->brokers = (int)v;
            else
                o->partitions = (int)v;
            i++;
        } else if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (a[0] == '-') {
            fprintf(stderr, PROG ": unknown option %s (try --help)\n", a);
            return -1;
        } else {
            break;
        }
    }
    o->topics = argv + i;
    o->topic_cnt = argc - i;
    for (i = 0; i < o->topic_cnt; i++) {
        if (!topic_name_ok(o->topics[i])) {
            fprintf(stderr, PROG ": bad topic name '%s'\n", o->topics[i]);
            return -1;
        }
    }
    return 0;
}

static int replication_factor(int brokers)
{
    return brokers < 3 ? brokers : 3;
}

/* One reply line on stdout, flushed; write errors are ignored on purpose. */
static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void reply(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
    clearerr(stdout);
}

/* Replies "ok" or "error: <librdkafka's text>" for a mock API result. */
static void reply_err(rd_kafka_resp_err_t err)
{
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
        reply("ok");
    else
        reply("error: %s", rd_kafka_err2str(err));
}

static int parse_broker(const char *s, int32_t *id)
{
    long v;

    if (parse_int(s, -1, INT32_MAX, &v) == -1)
        return -1;
    *id = (int32_t)v;
    return 0;
}

/* Handlers: argv[0] is the command word; argc was checked by the caller. */
static void cmd_down(struct control *c, char **argv)
{
    int32_t id;

    if (parse_broker(argv[1], &id) == -1) {
        reply("error: bad broker id '%s'", argv[1]);
        return;
    }
    reply_err(rd_kafka_mock_broker_set_down(c->mcluster, id));
}

static void cmd_up(struct control *c, char **argv)
{
    int32_t id;

    if (parse_broker(argv[1], &id) == -1) {
        reply("error: bad broker id '%s'", argv[1]);
        return;
    }
    reply_err(rd_kafka_mock_broker_set_up(c->mcluster, id));
}

static void cmd_rtt(struct control *c, char **argv)
{
    int32_t id;
    long ms;

    if (parse_broker(argv[1], &id) == -1) {
        reply("error: bad broker id '%s'", argv[1]);
        return;
    }
    if (parse_int(argv[2], 0, INT_MAX, &ms) == -1) {
        reply("error: bad rtt '%s' (ms, 0 or more)", argv[2]);
        return;
    }
    reply_err(rd_kafka_mock_broker_set_rtt(c->mcluster, id, (int)ms));
}

static void cmd_error(struct control *c, char **argv)
{
    rd_kafka_resp_err_t *errs;
    long key, code, cnt, i;

    if (parse_int(argv[1], 0, INT16_MAX, &key) == -1) {
        reply("error: bad api key '%s'", argv[1]);
        return;
    }
    /* Negative codes are librdkafka's local ones; __TRANSPORT (-195)
         * makes the broker drop the connection. */
    if (parse_int(argv[2], RD_KAFKA_RESP_ERR__BEGIN + 1, RD_KAFKA_RESP_ERR_END_ALL - 1, &code) ==
            -1 ||
        code == 0) {
        reply("error: bad error code '%s'", argv[2]);
        return;
    }
    if (parse_int(argv[3], 1, MAX_ERROR_COUNT, &cnt) == -1) {
        reply("error: bad count '%s' (1..%d)", argv[3], MAX_ERROR_COUNT);
        return;
    }
    errs = malloc((size_t)cnt * sizeof(*errs));
    if (errs == NULL) {
        reply("error: out of memory");
        return;
    }
    for (i = 0; i < cnt; i++)
        errs[i] = (rd_kafka_resp_err_t)code;
    rd_kafka_mock_push_request_errors_array(c->mcluster, (int16_t)key, (size_t)cnt, errs);
    free(errs);
    reply("ok");
}

static void cmd_topic(struct control *c, char **argv)
{
    long parts;

    if (!topic_name_ok(argv[1])) {
        reply("error: bad topic name '%s'", argv[1]);
        return;
    }
    if (parse_int(argv[2], 1, MAX_PARTITIONS, &parts) == -1) {
        reply("error: bad partition count '%s' (1..%d)", argv[2], MAX_PARTITIONS);
        return;
    }
    reply_err(rd_kafka_mock_topic_create(c->mcluster, argv[1], (int)parts,
                                         replication_factor(c->brokers)));
}

static const struct command {
    const char *name;
    int argc; /* including the command word */
    void (*run)(struct control *c, char **argv);
    const char *args; /* for the error message */
} commands[] = {
    {"down", 2, cmd_down, "<broker_id>"},
    {"up", 2, cmd_up, "<broker_id>"},
    {"rtt", 3, cmd_rtt, "<broker_id> <ms>"},
    {"error", 4, cmd_error, "<api_key> <err_code> <count>"},
    {"topic", 3, cmd_topic, "<name> <partitions>"},
};

/* Splits one NUL-terminated line into words and runs it. */
static void run_line(struct control *c, char *line)
{
    char *argv[MAX_ARGS + 1];
    char *save = NULL, *w;
    int argc = 0;
    size_t i;

    for (w = strtok_r(line, " \t\r", &save); w != NULL; w = strtok_r(NULL, " \t\r", &save)) {
        if (argc == MAX_ARGS) {
            reply("error: too many words");
            return;
        }
        argv[argc++] = w;
    }
    if (argc == 0)
        return; /* blank line: no reply */
    argv[argc] = NULL;

    for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[0], commands[i].name) != 0)
            continue;
        if (argc != commands[i].argc) {
            reply("error: usage: %s %s", commands[i].name, commands[i].args);
            return;
        }
        commands[i].run(c, argv);
        return;
    }
    reply("error: unknown command '%.64s' (down, up, rtt, error, topic)", argv[0]);
}

/*
 * Reads what stdin has (one read(2); the caller polled first) and runs each
 * complete line. Sets c->eof at end of input, running a last unterminated
 * line first.
 */
static void control_read(struct control *c)
{
    ssize_t n;
    size_t start = 0, i;

    n = read(STDIN_FILENO, c->buf + c->len, LINE_MAX_LEN - c->len);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN)
            return;
        fprintf(stderr, PROG ": stdin: %s; control channel closed\n", strerror(errno));
        c->eof = 1;
        return;
    }
    if (n == 0) {
        if (c->len > 0 && !c->discarding) {
            c->buf[c->len] = '\0';
            run_line(c, c->buf);
        }
        c->len = 0;
        c->eof = 1;
        return;
    }

    c->len += (size_t)n;
    for (i = 0; i < c->len; i++) {
        if (c->buf[i] != '\n')
            continue;
        c->buf[i] = '\0';
        if (!c->discarding)
            run_line(c, c->buf + start);
        c->discarding = 0;
        start = i + 1;
    }
    memmove(c->buf, c->buf + start, c->len - start);
    c->len -= start;

    if (c->len == LINE_MAX_LEN) {
        /* No newline in a full buffer: reject the line once, then
                 * drop its remaining bytes. */
        if (!c->discarding)
            reply("error: line longer than %d bytes", LINE_MAX_LEN);
        c->discarding = 1;
        c->len = 0;
    }
}

/* Serves the control channel until a signal asks to stop. */
static void serve(struct control *c)
{
    struct pollfd pfd;
    rd_kafka_t *rk = rd_kafka_mock_cluster_handle(c->mcluster);

    while (!lapse_stop) {
        int r;

        pfd.fd = c->eof ? -1 : STDIN_FILENO; /* -1: just wait */
        pfd.events = POLLIN;
        pfd.revents = 0;
        r = poll(&pfd, 1, POLL_MS);
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, PROG ": poll: %s\n", strerror(errno));
            return;
        }
        if (r > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR)))
            control_read(c);
        rd_kafka_poll(rk, 0); /* serve the host handle's callbacks */
    }
}

/*
 * The rd_kafka_t the mock cluster lives in: a producer that never connects
 * anywhere (no bootstrap.servers). Returns NULL after printing why.
 */
static rd_kafka_t *host_handle_new(void)
{
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_t *rk;

    /* Quiet: only errors and worse (the mock logs CRIT when a listener
         * cannot be set up). */
    if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, PROG ": %s\n", errstr);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (rk == NULL) {
        fprintf(stderr, PROG ": cannot create Kafka handle: %s\n", errstr);
        rd_kafka_conf_destroy(conf); /* not taken on failure */
    }
    return rk;
}

/*
 * Creates the cluster and the topics named on the command line.
 * Returns the cluster, or NULL after printing why (rk left to the caller).
 */
static rd_kafka_mock_cluster_t *cluster_new(rd_kafka_t *rk, const struct opts *o)
{
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, o->brokers);
    int i;

    if (mc == NULL) {
        fprintf(stderr, PROG ": cannot create the mock cluster\n");
        return NULL;
    }
    for (i = 0; i < o->topic_cnt; i++) {
        rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, o->topics[i], o->partitions,
                                                             replication_factor(o->brokers));
        if (err) {
            fprintf(stderr, PROG ": cannot create topic %s: %s\n", o->topics[i],
                    rd_kafka_err2str(err));
            rd_kafka_mock_cluster_destroy(mc);
            return NULL;
        }
    }
    return mc;
}

int main(int argc, char **argv)
{
    struct opts o;
    struct control *c;
    rd_kafka_t *rk;
    int r;

    if ((r = parse_args(argc, argv, &o)) != 0)
        return r == 1 ? 0 : 2;
    if (lapse_stop_on_signals(1) == -1) {
        fprintf(stderr, PROG ": sigaction: %s\n", strerror(errno));
        return 1;
    }
    if ((c = calloc(1, sizeof(*c))) == NULL) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    if ((rk = host_handle_new()) == NULL) {
        free(c);
        return 1;
    }
    if ((c->mcluster = cluster_new(rk, &o)) == NULL) {
        rd_kafka_destroy(rk);
        free(c);
        return 1;
    }
    c->brokers = o.brokers;

    printf("%s\n", rd_kafka_mock_cluster_bootstraps(c->mcluster));
    fflush(stdout);

    serve(c);

    rd_kafka_mock_cluster_destroy(c->mcluster);
    rd_kafka_destroy(rk);
    free(c);
    return 0;
}
