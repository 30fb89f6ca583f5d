/*
 * offline — an example consumer of lapse's event topic: which devices are
 * offline now.
 *
 *   offline -b BROKERS -t TOPIC [-g GROUP] [--json] [--idle-ms N] [-X key=value ...]
 *
 * A "timeout" event says the ID went offline at fired_ms; a "recovered"
 * event (the ID, written with recovery on, signalled again) says it is
 * back. Only IDs written with recovery on (watch, an ingress rule's
 * recover = true) get recovered events: one written with touch or extend
 * stays in this set once it timed out, so write the IDs you watch with
 * recovery on (lapse-scale offline lists only those). The consumer keeps
 * the set of IDs offline and, on SIGTERM or SIGINT (or once
 * nothing new came for --idle-ms after it got its partitions: for scripts
 * and tests), prints it — one line per ID, "id<TAB>since_ms", sorted by ID,
 * or with --json one array of {"id", "since_ms", "deadline_ms"} — and exits
 * 0. examples/offline.py does the same in Python.
 *
 * Delivery is at least once and a redelivery may come late, so the state
 * of an ID is decided by deadline_ms, never by arrival order: per ID it
 * keeps the latest deadline seen and whether a "recovered" for that
 * deadline came. An event for an older deadline changes nothing (a late
 * "recovered" of an older timeout does not clear a newer one), one for the
 * same deadline only turns offline into online (a redelivered timeout
 * after its recovery, or twice, changes nothing), and one for a newer
 * deadline starts over. So the result is the same in any order, and every
 * event is idempotent per (id, deadline_ms, type). An event without "type"
 * (lapse before 2026-11-26) is a timeout; another type is skipped.
 *
 * Offsets are committed after each event is processed (at least once: a
 * crash redelivers, which the rules above absorb). The set lives in memory
 * here: a production consumer keeps it where it commits its offsets (one
 * database transaction), so that a restart resumes both together.
 *
 * The ID is taken from "id" (readable; "id_b64" carries the exact bytes
 * when they are not UTF-8, and then tells IDs apart). Built by lapse's
 * Makefile into build/.../examples/offline, not installed.
 */
#define _POSIX_C_SOURCE 200809L

#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#define PROG "offline"

/* One ID's state: the latest deadline seen for it, and whether it is
 * offline for that deadline (no "recovered" for it came). */
struct entry {
    char *id;  /* the printed ID ("id") */
    char *key; /* what tells IDs apart: "id_b64" when present, else "id" */
    long long deadline_ms;
    long long since_ms; /* offline: the timeout's fired_ms (the earliest seen) */
    int offline;
    struct entry *next; /* hash chain */
};

#define NBUCKETS 4096
static struct entry *table[NBUCKETS];
static size_t nentries;

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned hash_of(const char *s)
{
    unsigned h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % NBUCKETS;
}

/* The entry of key, made (online, deadline -inf) when missing; NULL when
 * out of memory. */
static struct entry *entry_get(const char *key, const char *id)
{
    unsigned h = hash_of(key);
    for (struct entry *e = table[h]; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    struct entry *e = calloc(1, sizeof *e);
    if (!e || !(e->id = strdup(id)) || !(e->key = strdup(key))) {
        if (e)
            free(e->id);
        free(e);
        return NULL;
    }
    e->deadline_ms = -1;
    e->next = table[h];
    table[h] = e;
    nentries++;
    return e;
}

/* Applies one event. 0, or -1 when the value is not an event of lapse (it
 * is skipped; the caller says so). */
static int apply(const char *val, size_t len)
{
    json_t *ev = json_loadb(val, len, 0, NULL);
    json_t *type = json_object_get(ev, "type"), *id = json_object_get(ev, "id");
    json_t *b64 = json_object_get(ev, "id_b64"), *dl = json_object_get(ev, "deadline_ms");
    json_t *fired = json_object_get(ev, "fired_ms");
    int rc = -1;
    if (!json_is_object(ev) || !json_is_string(id) || !json_is_integer(dl) ||
        (type && !json_is_string(type)))
        goto out;
    const char *t = type ? json_string_value(type) : "timeout";
    int is_timeout = strcmp(t, "timeout") == 0;
    if (!is_timeout && strcmp(t, "recovered") != 0) {
        rc = 0; /* a kind this consumer does not know: not its business */
        goto out;
    }
    if (is_timeout && !json_is_integer(fired))
        goto out;
    struct entry *e =
        entry_get(json_is_string(b64) ? json_string_value(b64) : json_string_value(id),
                  json_string_value(id));
    if (!e)
        goto out;
    long long d = json_integer_value(dl);
    if (d > e->deadline_ms) { /* newer: starts over */
        e->deadline_ms = d;
        e->offline = is_timeout;
        e->since_ms = is_timeout ? json_integer_value(fired) : 0;
    } else if (d == e->deadline_ms) { /* the same deadline: only back online */
        if (!is_timeout)
            e->offline = 0;
        else if (e->offline && json_integer_value(fired) < e->since_ms)
            e->since_ms = json_integer_value(fired);
    } /* older: nothing */
    rc = 0;
out:
    json_decref(ev);
    return rc;
}

static int by_id(const void *a, const void *b)
{
    const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
    int c = strcmp(x->id, y->id);
    return c ? c : strcmp(x->key, y->key);
}

/* Prints the offline set, sorted by ID. */
static void print_set(int as_json)
{
    struct entry **all = malloc((nentries + 1) * sizeof *all);
    size_t n = 0;
    if (!all) {
        fprintf(stderr, PROG ": out of memory\n");
        exit(1);
    }
    for (size_t h = 0; h < NBUCKETS; h++)
        for (struct entry *e = table[h]; e; e = e->next)
            if (e->offline)
                all[n++] = e;
    qsort(all, n, sizeof *all, by_id);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        if (as_json)
            json_array_append_new(arr, json_pack("{s:s, s:I, s:I}", "id", all[i]->id, "since_ms",
                                                 (json_int_t)all[i]->since_ms, "deadline_ms",
                                                 (json_int_t)all[i]->deadline_ms));
        else
            printf("%s\t%lld\n", all[i]->id, all[i]->since_ms);
    }
    if (as_json) {
        char *s = json_dumps(arr, JSON_COMPACT);
        printf("%s\n", s ? s : "[]");
        free(s);
    }
    json_decref(arr);
    free(all);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG
               " -b BROKERS -t TOPIC [-g GROUP] [--json] [--idle-ms N] [-X key=value]...\n"
               "Keeps the set of IDs offline from lapse's timeout/recovered events; on SIGTERM,\n"
               "or after N ms without a new event once it has its partitions, prints it\n"
               "(id<TAB>since_ms a line, or --json) and exits 0. GROUP: lapse-offline.\n");
}

int main(int argc, char **argv)
{
    const char *brokers = NULL, *topic = NULL, *group = "lapse-offline";
    int as_json = 0;
    long long idle_ms = 0;
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    static const struct option lo[] = {
        {"brokers", required_argument, NULL, 'b'},
        {"topic", required_argument, NULL, 't'},
        {"group", required_argument, NULL, 'g'},
        {"json", no_argument, NULL, 'j'},
        {"idle-ms", required_argument, NULL, 'i'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "b:t:g:X:h", lo, NULL)) != -1) {
        switch (ch) {
        case 'b':
            brokers = optarg;
            break;
        case 't':
            topic = optarg;
            break;
        case 'g':
            group = optarg;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'i':
            idle_ms = atoll(optarg);
            if (idle_ms < 1) {
                fprintf(stderr, PROG ": --idle-ms: \"%s\" is not a positive number\n", optarg);
                return 2;
            }
            break;
        case 'X': { /* a librdkafka property, passed through (as kcat -X) */
            char *eq = strchr(optarg, '=');
            if (!eq) {
                fprintf(stderr, PROG ": -X %s: not key=value\n", optarg);
                return 2;
            }
            *eq = '\0';
            if (rd_kafka_conf_set(conf, optarg, eq + 1, err, sizeof err) != RD_KAFKA_CONF_OK) {
                fprintf(stderr, PROG ": -X %s: %s\n", optarg, err);
                return 2;
            }
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, PROG ": unexpected argument \"%s\" (try --help)\n", argv[optind]);
        return 2;
    }
    if (!brokers || !topic) {
        usage(stderr);
        return 2;
    }
    /* commits are ours, after processing; a new group reads from the start */
    const char *props[][2] = {{"bootstrap.servers", brokers},
                              {"group.id", group},
                              {"enable.auto.commit", "false"},
                              {"auto.offset.reset", "earliest"}};
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], err, sizeof err) !=
            RD_KAFKA_CONF_OK) {
            fprintf(stderr, PROG ": %s: %s\n", props[i][0], err);
            return 2;
        }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (e) {
        fprintf(stderr, PROG ": subscribe %s: %s\n", topic, rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    long long last = -1; /* when the last event came, or the partitions (for --idle-ms) */
    unsigned long long skipped = 0;
    while (!stop) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (last < 0) { /* idle counts from the assignment, not from the group's join */
            rd_kafka_topic_partition_list_t *as = NULL;
            if (rd_kafka_assignment(rk, &as) == RD_KAFKA_RESP_ERR_NO_ERROR && as->cnt > 0)
                last = mono_ms();
            if (as)
                rd_kafka_topic_partition_list_destroy(as);
        }
        if (!m) {
            if (idle_ms && last >= 0 && mono_ms() - last >= idle_ms)
                break;
            continue;
        }
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                fprintf(stderr, PROG ": %s\n", rd_kafka_message_errstr(m));
        } else {
            last = mono_ms();
            if (apply(m->payload, m->len) < 0 && skipped++ < 10)
                fprintf(stderr, PROG ": partition %d offset %lld: not an event of lapse, skipped\n",
                        (int)m->partition, (long long)m->offset);
            rd_kafka_commit_message(rk, m, 1); /* after processing; async */
        }
        rd_kafka_message_destroy(m);
    }
    e = rd_kafka_commit(rk, NULL, 0); /* what is still in flight, synchronously */
    if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
        fprintf(stderr, PROG ": commit: %s\n", rd_kafka_err2str(e));
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    print_set(as_json);
    return 0;
}
