/*
 * lapse-kafka-get — print every message of a topic, headers included, as
 * JSON lines (a test tool).
 *
 * Why it exists: lapse-tail prints lapse's events (values); the ingress tests
 * also need to see a dead-letter copy whole: its key, its value byte for
 * byte and the headers that give the reason. One line per message:
 *
 *   {"partition":0,"offset":3,"timestamp":1795303123000,"key":"dev-1",
 *    "value":"...","headers":{"lapse.error":"..."}}
 *
 * key/value are strings when they are valid UTF-8 (null when absent), else
 * "key_hex"/"value_hex" give the bytes. A header repeated keeps its last
 * value. An assign-only consumer from the beginning of every partition, like
 * lapse-tail: it never joins a group or commits. Exit status 0 when --count
 * messages arrived (or, without --count, at the timeout), 1 when fewer did.
 *
 * --committed GROUP prints instead, for each partition of the topic, one
 * line "PARTITION COMMITTED HIGH": the offset GROUP committed (-1: none) and
 * the high watermark, so a test can see what a consumer group committed
 * without joining it (OffsetFetch only).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#define PROG "lapse-kafka-get"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sets obj[name] (or obj[name_hex]) from bytes; NULL bytes: null. */
static void set_bytes(json_t *obj, const char *name, const void *p, size_t n)
{
    json_t *s = p ? json_stringn(p, n) : json_null();
    if (s) {
        json_object_set_new(obj, name, s);
        return;
    }
    char key[64], *hex = malloc(2 * n + 1);
    if (!hex)
        return;
    for (size_t i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)p)[i]);
    hex[2 * n] = '\0';
    snprintf(key, sizeof key, "%s_hex", name);
    json_object_set_new(obj, key, json_string(hex));
    free(hex);
}

static void print_message(const rd_kafka_message_t *m)
{
    json_t *o = json_object(), *h = json_object();
    rd_kafka_timestamp_type_t tt;
    rd_kafka_headers_t *hdrs = NULL;
    json_object_set_new(o, "partition", json_integer(m->partition));
    json_object_set_new(o, "offset", json_integer(m->offset));
    json_object_set_new(o, "timestamp", json_integer(rd_kafka_message_timestamp(m, &tt)));
    set_bytes(o, "key", m->key, m->key_len);
    set_bytes(o, "value", m->payload ? m->payload : "", m->len);
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char *name;
        const void *val;
        size_t len;
        for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &len) == 0; i++)
            set_bytes(h, name, val, len);
    }
    json_object_set_new(o, "headers", h);
    char *s = json_dumps(o, JSON_COMPACT);
    if (s)
        printf("%s\n", s);
    fflush(stdout);
    free(s);
    json_decref(o);
}

/* All partitions of `topic`, from the beginning; 0, or -1 at the deadline. */
static int assign_all(rd_kafka_t *rk, const char *topic, long long deadline)
{
    while (now_ms() < deadline) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_partition_list_t *parts = NULL;
        /* all topics: naming ours could make the mock auto-create it */
        if (rd_kafka_metadata(rk, 1, NULL, &md, 1000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            for (int i = 0; i < md->topic_cnt; i++) {
                const struct rd_kafka_metadata_topic *t = &md->topics[i];
                if (strcmp(t->topic, topic) != 0 || t->err || t->partition_cnt <= 0)
                    continue;
                parts = rd_kafka_topic_partition_list_new(t->partition_cnt);
                for (int j = 0; j < t->partition_cnt; j++)
                    rd_kafka_topic_partition_list_add(parts, topic, t->partitions[j].id)->offset =
                        RD_KAFKA_OFFSET_BEGINNING;
            }
            rd_kafka_metadata_destroy(md);
        }
        if (parts) {
            /* absolute start offsets begin fetching at once (see lapse-tail) */
            rd_kafka_topic_partition_list_t *q = rd_kafka_topic_partition_list_copy(parts);
            if (rd_kafka_offsets_for_times(rk, q, 1000) == RD_KAFKA_RESP_ERR_NO_ERROR)
                for (int i = 0; i < q->cnt; i++)
                    if (q->elems[i].err == 0 && q->elems[i].offset >= 0)
                        parts->elems[i].offset = q->elems[i].offset;
            rd_kafka_topic_partition_list_destroy(q);
            rd_kafka_resp_err_t err = rd_kafka_assign(rk, parts);
            rd_kafka_topic_partition_list_destroy(parts);
            return err ? -1 : 0;
        }
        usleep(100 * 1000);
    }
    return -1;
}

/* --committed: one "partition committed high" line per partition. */
static int committed(rd_kafka_t *rk, const char *topic, long long timeout)
{
    if (assign_all(rk, topic, now_ms() + timeout) < 0)
        return 1;
    rd_kafka_topic_partition_list_t *l = NULL;
    int rc = 1;
    if (rd_kafka_assignment(rk, &l) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_committed(rk, l, (int)timeout) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        rc = 0;
        for (int i = 0; i < l->cnt; i++) {
            int64_t lo, hi;
            if (rd_kafka_query_watermark_offsets(rk, topic, l->elems[i].partition, &lo, &hi,
                                                 (int)timeout) != RD_KAFKA_RESP_ERR_NO_ERROR)
                rc = 1;
            printf("%d %lld %lld\n", (int)l->elems[i].partition, (long long)l->elems[i].offset,
                   (long long)hi);
        }
    }
    if (rc)
        fprintf(stderr, PROG ": cannot read the committed offsets of %s\n", topic);
    if (l)
        rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"brokers", required_argument, NULL, 'b'},
        {"topic", required_argument, NULL, 't'},
        {"count", required_argument, NULL, 'c'},
        {"timeout-ms", required_argument, NULL, 'w'},
        {"committed", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *brokers = NULL, *topic = NULL, *of_group = NULL;
    long long count = 0, timeout = 5000;
    int ch;
    while ((ch = getopt_long(argc, argv, "b:t:c:w:h", lo, NULL)) != -1) {
        if (ch == 'b')
            brokers = optarg;
        else if (ch == 't')
            topic = optarg;
        else if (ch == 'c')
            count = atoll(optarg);
        else if (ch == 'w')
            timeout = atoll(optarg);
        else if (ch == 'g')
            of_group = optarg;
        else {
            fprintf(ch == 'h' ? stdout : stderr,
                    "usage: " PROG " -b BROKERS -t TOPIC [--count N] [--timeout-ms MS (5000)]\n"
                    "       " PROG " -b BROKERS -t TOPIC --committed GROUP\n");
            return ch == 'h' ? 0 : 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, PROG ": unexpected argument \"%s\" (try --help)\n", argv[optind]);
        return 2;
    }
    if (!brokers || !topic || timeout <= 0) {
        fprintf(stderr, PROG ": -b BROKERS and -t TOPIC are required (try --help)\n");
        return 2;
    }
    char err[512], group[256];
    if (of_group)
        snprintf(group, sizeof group, "%s", of_group);
    else
        snprintf(group, sizeof group, "lapse-kafka-get-%ld", (long)getpid());
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *props[][2] = {
        {"bootstrap.servers", brokers},  {"group.id", group},
        {"enable.auto.commit", "false"}, {"enable.partition.eof", "false"},
        {"fetch.wait.max.ms", "10"},     {"log_level", "2"},
    };
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], err, sizeof err) !=
            RD_KAFKA_CONF_OK) {
            fprintf(stderr, PROG ": %s\n", err);
            rd_kafka_conf_destroy(conf);
            return 2;
        }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, PROG ": %s\n", err);
        rd_kafka_conf_destroy(conf);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    if (of_group) { /* assigned, never polled: nothing is fetched or committed */
        int rc = committed(rk, topic, timeout);
        rd_kafka_destroy(rk);
        return rc;
    }
    long long deadline = now_ms() + timeout, seen = 0;
    if (assign_all(rk, topic, deadline) < 0) {
        fprintf(stderr, PROG ": topic %s not available within %lld ms\n", topic, timeout);
    } else {
        while ((count == 0 || seen < count) && now_ms() < deadline) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
            if (!m)
                continue;
            if (!m->err) {
                print_message(m);
                seen++;
            }
            rd_kafka_message_destroy(m);
        }
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    if (count && seen < count) {
        fprintf(stderr, PROG ": %lld of %lld messages within %lld ms\n", seen, count, timeout);
        return 1;
    }
    return 0;
}
