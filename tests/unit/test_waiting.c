/*
 * test_waiting — what a program says while it waits for Redis at start:
 * at once how long at most and which line of the config names the node,
 * then about every 10 s the time left (never silent for longer), driven
 * here by a made-up clock. And the config keeps that line for each node.
 */
#include "config.h"
#include "config_text.h"
#include "t.h"
#include "waiting.h"

/* A wait of 25 s, asked every second as the connect back-off does. */
TEST(waiting_lines)
{
    struct lapse_redis_node node = {.where = "lapse.conf:5"};
    struct lapse_config cfg = {.nodes = &node, .nnodes = 1, .redis_retry_timeout_ms = 25000};
    struct lapse_waiting w;
    lapse_waiting_init(&w, &cfg, 0, 1000);
    char buf[256];
    const char *why = "redis 127.0.0.1:1: connect: Connection refused";
    CHECK_STR(lapse_waiting_line(&w, why, 1003, buf, sizeof buf),
              "waiting for Redis (lapse.conf:5) up to 25 s (redis.retry_timeout_ms): "
              "redis 127.0.0.1:1: connect: Connection refused");
    int lines = 1;
    int64_t last = 1003;
    for (int64_t now = 2003; now <= 26000; now += 1000) {
        const char *l = lapse_waiting_line(&w, why, now, buf, sizeof buf);
        if (!l)
            continue;
        CHECK(now - last <= 10000);
        last = now;
        if (++lines == 2)
            CHECK_STR(l, "still waiting for Redis (lapse.conf:5), 16 s left: "
                         "redis 127.0.0.1:1: connect: Connection refused");
    }
    CHECK(lines == 3);
    CHECK(26000 - last <= 10000);
}

/* Without a location (a config built by hand), and durations as read. */
TEST(waiting_no_where)
{
    struct lapse_redis_node node = {0};
    struct lapse_config cfg = {.nodes = &node, .nnodes = 1, .redis_retry_timeout_ms = 1500};
    struct lapse_waiting w;
    lapse_waiting_init(&w, &cfg, 0, 0);
    char buf[256];
    CHECK_STR(lapse_waiting_line(&w, "x", 0, buf, sizeof buf),
              "waiting for Redis up to 1.5 s (redis.retry_timeout_ms): x");
    CHECK(lapse_waiting_line(&w, "x", 1000, buf, sizeof buf) == NULL);
    cfg.redis_retry_timeout_ms = 500;
    lapse_waiting_init(&w, &cfg, 0, 0);
    CHECK_STR(lapse_waiting_line(&w, "x", 0, buf, sizeof buf),
              "waiting for Redis up to 500 ms (redis.retry_timeout_ms): x");
}

/* The config names each node's line: its group in redis.nodes, or redis.cluster. */
TEST(config_node_where)
{
    struct lapse_config c;
    REQUIRE(load_text(&c, MIN_NS MIN_KAFKA "redis = {\n"
                                           "  nodes = (\n"
                                           "    { host = \"a\"; port = 1; },\n"
                                           "    { host = \"b\";\n"
                                           "      port = 2; }\n"
                                           "  );\n"
                                           "};\n") == 0);
    REQUIRE(c.nnodes == 2);
    const char *colon = strrchr(c.nodes[0].where, ':');
    REQUIRE(colon != NULL);
    CHECK_STR(colon, ":5");
    CHECK_STR(strrchr(c.nodes[1].where, ':'), ":6");
    CHECK(strncmp(c.nodes[0].where, c.path, strlen(c.path)) == 0);
    lapse_config_free(&c);
    REQUIRE(load_text(&c, MIN_NS MIN_KAFKA "redis = {\n  cluster = ( \"a:1\" );\n};\n") == 0);
    REQUIRE(c.nnodes == 1);
    CHECK_STR(strrchr(c.nodes[0].where, ':'), ":4");
    lapse_config_free(&c);
}
