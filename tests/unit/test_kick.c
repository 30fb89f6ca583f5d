/*
 * test_kick — the ingress's fetch kicker: its rule (kick once a read leaves
 * the queue below half of queued.min.messages after a read saw it not
 * low; look at the lag when a read empties it; nothing else), and its
 * point: against librdkafka's mock cluster, a consumer whose
 * queue fills at every fetch (queued.min.messages 20, each fetch 100
 * messages) reads 8,000 messages in 80 fetches. librdkafka 2.0.2 pauses
 * each refill up to a second without a wake-up: without the kicker about
 * 2,000 messages are read in the 20 s the test allows (2026-11-29); with it
 * all of them in under a second.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "kick.h"
#include "t.h"

#define PARTS 4
#define ROUNDS 80  /* fetches needed: one message set per partition a fetch */
#define PER_SET 25 /* messages in each produced set */
#define QMIN "20"  /* queued.min.messages: below one fetch's 100 */
#define DEADLINE_S 20

/* lapse_kick_rule for one read, from a given was_high; the new one in *after */
static enum lapse_kick_want rule(size_t before, size_t taken, size_t qmin, int was_high, int *after)
{
    *after = was_high;
    return lapse_kick_rule(before, taken, qmin, after);
}

TEST(kick_rule)
{
    int h;
    /* reads that leave the queue low after one saw it not low: kick */
    CHECK(rule(10500, 1024, 20000, 0, &h) == LAPSE_KICK_NOW && h == 0);
    CHECK(rule(9000, 1024, 20000, 1, &h) == LAPSE_KICK_NOW && h == 0);
    CHECK(rule(900, 900, 20000, 1, &h) == LAPSE_KICK_NOW && h == 0);
    /* a fetch that arrived and was taken in one read (a small queue) */
    CHECK(rule(100, 100, 20, 0, &h) == LAPSE_KICK_NOW && h == 0);
    /* not low after the read: nothing yet, but remembered */
    CHECK(rule(30000, 1024, 20000, 0, &h) == LAPSE_KICK_NONE && h == 1);
    CHECK(rule(11024, 1024, 20000, 0, &h) == LAPSE_KICK_NONE && h == 1);
    /* low, and no read saw it otherwise since the last kick: a stream
     * followed; a look at the lag when a read empties the queue */
    CHECK(rule(500, 100, 20000, 0, &h) == LAPSE_KICK_NONE && h == 0);
    CHECK(rule(500, 500, 20000, 0, &h) == LAPSE_KICK_CHECK && h == 0);
    CHECK(rule(0, 0, 20000, 0, &h) == LAPSE_KICK_CHECK && h == 0);
    CHECK(rule(10, 30, 20000, 0, &h) == LAPSE_KICK_CHECK && h == 0); /* more arrived meanwhile */
    /* queued.min.messages of 1 (or 0): low means empty */
    CHECK(rule(1, 0, 1, 0, &h) == LAPSE_KICK_NONE && h == 1);
    CHECK(rule(1, 1, 1, 0, &h) == LAPSE_KICK_NOW && h == 0);
    CHECK(rule(0, 0, 0, 1, &h) == LAPSE_KICK_NOW && h == 0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *brokers, const char *const *props)
{
    char why[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, why, sizeof why) != RD_KAFKA_CONF_OK)
        return NULL;
    for (size_t i = 0; props[i]; i += 2)
        if (rd_kafka_conf_set(conf, props[i], props[i + 1], why, sizeof why) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "%s: %s\n", props[i], why);
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    rd_kafka_t *rk = rd_kafka_new(type, conf, why, sizeof why);
    if (!rk)
        rd_kafka_conf_destroy(conf);
    return rk;
}

TEST(kick_wakes_a_paused_fetcher)
{
    static const char *const quiet[] = {"log_level", "2", NULL};
    rd_kafka_t *owner = client(RD_KAFKA_PRODUCER, "", quiet); /* the mock cluster's handle */
    REQUIRE(owner);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(owner, 1);
    REQUIRE(mc);
    REQUIRE(rd_kafka_mock_topic_create(mc, "t", PARTS, 1) == RD_KAFKA_RESP_ERR_NO_ERROR);
    const char *brokers = rd_kafka_mock_cluster_bootstraps(mc);

    /* ROUNDS message sets of PER_SET per partition (the mock broker keeps
     * each produced batch as one set, and a fetch returns one set a partition) */
    static const char *const pprops[] = {
        "linger.ms", "100", "batch.num.messages", "25", "log_level", "2", NULL};
    rd_kafka_t *prod = client(RD_KAFKA_PRODUCER, brokers, pprops);
    REQUIRE(prod);
    for (int r = 0; r < ROUNDS; r++) {
        for (int p = 0; p < PARTS; p++)
            for (int i = 0; i < PER_SET; i++)
                REQUIRE(rd_kafka_producev(prod, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_PARTITION(p),
                                          RD_KAFKA_V_VALUE("0123456789", 10),
                                          RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_poll(prod, 0);
    }
    REQUIRE(rd_kafka_flush(prod, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(prod);

    static const char *const cprops[] = {"group.id",
                                         "test-kick",
                                         "enable.auto.commit",
                                         "false",
                                         "queued.min.messages",
                                         QMIN,
                                         "fetch.wait.max.ms",
                                         "10",
                                         "log_level",
                                         "2",
                                         NULL};
    rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, brokers, cprops);
    REQUIRE(rk);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(PARTS);
    for (int p = 0; p < PARTS; p++)
        rd_kafka_topic_partition_list_add(l, "t", p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    REQUIRE(rd_kafka_assign(rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    atomic_uint_fast64_t kicks = 0;
    lapse_kick *k = lapse_kick_new(rk, q, 20, &kicks);
    REQUIRE(k);

    long got = 0, want = (long)ROUNDS * PARTS * PER_SET;
    double end = now_s() + DEADLINE_S;
    rd_kafka_message_t *ms[256];
    while (got < want && now_s() < end) {
        /* as the ingress reads: what is ready (told to the kicker), else a
         * wait for one */
        size_t before = rd_kafka_queue_length(q);
        ssize_t n = rd_kafka_consume_batch_queue(q, 0, ms, 256);
        lapse_kick_read(k, before, n > 0 ? (size_t)n : 0);
        if (n == 0 && (ms[0] = rd_kafka_consumer_poll(rk, 100)))
            n = 1;
        for (ssize_t i = 0; i < n; i++) {
            got += !ms[i]->err;
            rd_kafka_message_destroy(ms[i]);
        }
    }
    CHECK(got == want);
    CHECK(atomic_load(&kicks) > 0);

    lapse_kick_free(k);
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(owner);
}
