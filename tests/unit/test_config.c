/*
 * test_config — the config table: the example file, defaults, and one test
 * per kind of error with its exact message (config_text.h: messages name
 * the file "FILE", as an operator reads them). The redis group's tests
 * (nodes, TLS, Sentinel, Cluster) are in test_config_redis.c, the ingress
 * group's in test_config_ingress.c.
 */
#include "config.h"
#include "config_text.h"
#include "log.h"
#include "t.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static void check_defaults(const struct lapse_config *c)
{
    CHECK(c->log_level == LAPSE_LOG_INFO);
    CHECK(c->redis_connect_timeout_ms == 1000);
    CHECK(c->redis_command_timeout_ms == 5000);
    CHECK(c->redis_retry_timeout_ms == 60000);
    CHECK(c->redis_wait_replicas == 0);
    CHECK(c->redis_wait_timeout_ms == 1000);
    CHECK(c->nkafka_props == 0 && c->kafka_props == NULL);
    CHECK(c->producer_batch == 1000);
    CHECK(c->scanner_batch == 500);
    CHECK(c->scanner_poll_ms == 10);
    CHECK(c->scanner_lease_ms == 5000);
    CHECK(c->scanner_max_inflight == 20000);
    CHECK(c->ingress_dead_letter_topic == NULL);
    CHECK(c->ningress_props == 0 && c->ingress_props == NULL);
    CHECK(c->scanner_metrics_port == 0);
    CHECK_STR(c->scanner_metrics_bind, "127.0.0.1");
    CHECK(c->ingress_metrics_port == 0);
    CHECK_STR(c->ingress_metrics_bind, "127.0.0.1");
}

TEST(config_example_loads)
{
    struct lapse_config c;
    char err[256] = "";
    int rc = lapse_config_load(&c, "lapse.conf.example", err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "    %s\n", err);
    REQUIRE(rc == 0);
    CHECK_STR(err, "");
    CHECK_STR(c.path, "lapse.conf.example");
    CHECK_STR(c.ns, "demo");
    REQUIRE(c.nnodes == 1);
    CHECK_STR(c.nodes[0].host, "127.0.0.1");
    CHECK(c.nodes[0].port == 6379);
    CHECK(c.nodes[0].password == NULL);
    CHECK(c.nodes[0].db == 0);
    CHECK_STR(c.kafka_brokers, "127.0.0.1:9092");
    CHECK_STR(c.kafka_topic, "lapse.timeouts");
    check_defaults(&c); /* the example shows the defaults */
    lapse_config_free(&c);
    CHECK(all_zero(&c));
}

TEST(config_example_documents_every_key)
{
    static const char *const names[] = {
        "namespace",
        "redis",
        "nodes",
        "host",
        "port",
        "password",
        "db",
        "connect_timeout_ms",
        "command_timeout_ms",
        "retry_timeout_ms",
        "wait_replicas",
        "wait_timeout_ms",
        "sentinels",
        "master",
        "sentinel_username",
        "sentinel_password",
        "username",
        "was",
        "tls",
        "ca_file",
        "cert_file",
        "key_file",
        "server_name",
        "kafka",
        "brokers",
        "topic",
        "properties",
        "log_level",
        "producer",
        "batch",
        "scanner",
        "poll_ms",
        "lease_ms",
        "max_inflight",
        "ingress",
        "group",
        "dead_letter_topic",
        "rules",
        "id_field",
        "id_prefix",
        "match_field",
        "match_value",
        "time",
        "time_field",
        "timeout_ms",
        "cluster",
        "cluster_username",
        "cluster_password",
        "cluster_tls",
    };
    FILE *f = fopen("lapse.conf.example", "r");
    REQUIRE(f != NULL);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s =", names[i]);
        if (strstr(text, key) == NULL)
            fprintf(stderr, "    not in example: %s\n", names[i]);
        CHECK(strstr(text, key) != NULL);
    }
}

TEST(config_minimal_gets_defaults)
{
    struct lapse_config c;
    REQUIRE(load_text(&c, MIN) == 0);
    CHECK_STR(msg, "");
    CHECK_STR(c.ns, "demo");
    REQUIRE(c.nnodes == 1);
    CHECK(c.nodes[0].port == 6379 && c.nodes[0].db == 0 && c.nodes[0].password == NULL);
    check_defaults(&c);
    lapse_config_free(&c);
}

TEST(config_every_key_set)
{
    struct lapse_config c;
    REQUIRE(
        load_text(
            &c,
            "namespace = \"a-b_c.d\";\n"
            "log_level = \"debug\";\n"
            "redis = {\n"
            "  nodes = ( { host = \"r1\"; port = 7000; },\n"
            "            { host = \"r2\"; port = 7001; password = \"pw\"; db = 15; } );\n"
            "  connect_timeout_ms = 10;\n"
            "  command_timeout_ms = 600000;\n"
            "};\n"
            "kafka = { brokers = \"k1:9092,k2:9092\"; topic = \"t\"; properties = (); };\n"
            "producer = { batch = 100000; };\n"
            "scanner = { batch = 1; poll_ms = 1000; lease_ms = 500; max_inflight = 10000000; };\n") ==
        0);
    CHECK_STR(c.ns, "a-b_c.d");
    CHECK(c.log_level == LAPSE_LOG_DEBUG);
    REQUIRE(c.nnodes == 2);
    CHECK_STR(c.nodes[0].host, "r1");
    CHECK(c.nodes[0].port == 7000 && c.nodes[0].password == NULL && c.nodes[0].db == 0);
    CHECK_STR(c.nodes[1].host, "r2");
    CHECK(c.nodes[1].port == 7001 && c.nodes[1].db == 15);
    CHECK_STR(c.nodes[1].password, "pw");
    CHECK(c.redis_connect_timeout_ms == 10 && c.redis_command_timeout_ms == 600000);
    CHECK_STR(c.kafka_brokers, "k1:9092,k2:9092");
    CHECK_STR(c.kafka_topic, "t");
    CHECK(c.nkafka_props == 0);
    CHECK(c.producer_batch == 100000);
    CHECK(c.scanner_batch == 1 && c.scanner_poll_ms == 1000);
    CHECK(c.scanner_lease_ms == 500 && c.scanner_max_inflight == 10000000);
    lapse_config_free(&c);
}

TEST(config_kafka_properties)
{
    struct lapse_config c;
    REQUIRE(load_text(&c,
                      MIN_NS MIN_REDIS "kafka = {\n"
                                       "  brokers = \"b:1\"; topic = \"t\";\n"
                                       "  properties = ( (\"security.protocol\", \"SASL_SSL\"),\n"
                                       "                 [\"sasl.password\", \"x=y\"],\n"
                                       "                 (\"linger.ms\", 5),\n"
                                       "                 (\"enable.idempotence\", true) );\n"
                                       "};\n") == 0);
    REQUIRE(c.nkafka_props == 4);
    CHECK_STR(c.kafka_props[0].key, "security.protocol");
    CHECK_STR(c.kafka_props[0].value, "SASL_SSL");
    CHECK_STR(c.kafka_props[1].key, "sasl.password");
    CHECK_STR(c.kafka_props[1].value, "x=y");
    CHECK_STR(c.kafka_props[2].key, "linger.ms");
    CHECK_STR(c.kafka_props[2].value, "5");
    CHECK_STR(c.kafka_props[3].key, "enable.idempotence");
    CHECK_STR(c.kafka_props[3].value, "true");
    lapse_config_free(&c);
}

TEST(config_kafka_properties_errors)
{
#define KAFKA_PROPS(p) MIN_NS MIN_REDIS "kafka = { brokers = \"b:1\"; topic = \"t\";\n" p "\n};\n"
    expect_err(KAFKA_PROPS("properties = { acks = \"all\"; };"),
               "FILE:4: kafka.properties: expected a list ( (\"name\", \"value\"), ... )");
    expect_err(KAFKA_PROPS("properties = ( (\"a\", \"1\"), (\"b\") );"),
               "FILE:4: kafka.properties[1]: expected (\"name\", \"value\")");
    expect_err(KAFKA_PROPS("properties = ( \"acks=all\" );"),
               "FILE:4: kafka.properties[0]: expected (\"name\", \"value\")");
    expect_err(KAFKA_PROPS("properties = ( (1, \"x\") );"),
               "FILE:4: kafka.properties[0]: property name must be a non-empty string");
    expect_err(KAFKA_PROPS("properties = ( (\"\", \"x\") );"),
               "FILE:4: kafka.properties[0]: property name must be a non-empty string");
    expect_err(
        KAFKA_PROPS("properties = ( (\"linger.ms\", 0.5) );"),
        "FILE:4: kafka.properties[0]: linger.ms: value must be a string, integer or boolean");
    expect_err(KAFKA_PROPS("properties = ( (\"acks\", \"1\"),\n(\"acks\", \"all\") );"),
               "FILE:5: kafka.properties[1]: acks: given twice");
#undef KAFKA_PROPS
}

TEST(config_unknown_keys)
{
    expect_err(MIN "bogus = 1;\n", "FILE:4: bogus: unknown key");
    expect_err(MIN "scanner = {\n  batch = 5;\n  bacth = 6;\n};\n",
               "FILE:6: scanner.bacth: unknown key (did you mean scanner.batch?)");
    expect_err(MIN_NS
               "redis = { nodes = ( { host = \"a\"; port = 1; },\n"
               "                    { host = \"b\"; port = 2; user = \"u\"; } ); };\n" MIN_KAFKA,
               "FILE:3: redis.nodes[1].user: unknown key");
    /* a known name in the wrong group is still unknown there */
    expect_err(MIN "producer = { lease_ms = 5000; };\n",
               "FILE:4: producer.lease_ms: unknown key (did you mean scanner.lease_ms?)");
    expect_err(MIN "nodes = ();\n", "FILE:4: nodes: unknown key (did you mean redis.nodes?)");
}

/* An unknown key names the key it most likely meant: a few edits away, or
 * the one key of that name in another group; nothing when none is near or
 * the name is in several groups. */
TEST(config_unknown_key_suggestions)
{
    expect_err(MIN "scanner = { poll_msec = 10; };\n",
               "FILE:4: scanner.poll_msec: unknown key (did you mean scanner.poll_ms?)");
    expect_err(MIN "namespce = \"x\";\n",
               "FILE:4: namespce: unknown key (did you mean namespace?)");
    expect_err(MIN "poll_ms = 10;\n",
               "FILE:4: poll_ms: unknown key (did you mean scanner.poll_ms?)");
    expect_err(MIN "batch = 10;\n", "FILE:4: batch: unknown key");
    expect_err(MIN "scanner = { metrics = 9400; };\n", "FILE:4: scanner.metrics: unknown key");
    expect_err(MIN_NS "redis = { nodes = ( { hots = \"a\"; port = 1; } ); };\n" MIN_KAFKA,
               "FILE:2: redis.nodes[0].hots: unknown key (did you mean redis.nodes[0].host?)");
    expect_err(MIN_NS "redis = { nodes = ( { host = \"a\"; port = 1; } );\n"
                      "  tls = { ca_fil = \"x\"; }; };\n" MIN_KAFKA,
               "FILE:3: redis.tls.ca_fil: unknown key (did you mean redis.tls.ca_file?)");
}

TEST(config_wrong_types)
{
    expect_err(MIN "producer = { batch = \"10\"; };\n",
               "FILE:4: producer.batch: expected an integer");
    expect_err(MIN "producer = { batch = 10.0; };\n",
               "FILE:4: producer.batch: expected an integer");
    expect_err(MIN "producer = { batch = true; };\n",
               "FILE:4: producer.batch: expected an integer");
    expect_err(MIN "log_level = 3;\n", "FILE:4: log_level: expected a string");
    expect_err(MIN "scanner = 5;\n", "FILE:4: scanner: expected a group { ... }");
    expect_err("namespace = [\"demo\"];\n" MIN_REDIS MIN_KAFKA,
               "FILE:1: namespace: expected a string");
    expect_err(MIN_NS "redis = { nodes = { host = \"a\"; port = 1; }; };\n" MIN_KAFKA,
               "FILE:2: redis.nodes: expected a list ( { host = ...; port = ...; }, ... )");
    expect_err(MIN_NS "redis = { nodes = ( \"a:1\" ); };\n" MIN_KAFKA,
               "FILE:2: redis.nodes[0]: expected a group { host = ...; port = ...; }");
}

TEST(config_out_of_range)
{
    expect_err(MIN_NS "redis = {\n"
                      "  nodes = ( { host = \"a\"; port = 1; } );\n"
                      "  connect_timeout_ms = 9;\n"
                      "};\n" MIN_KAFKA,
               "FILE:4: redis.connect_timeout_ms: must be 10..60000 (got 9)");
    expect_err(MIN "scanner = { lease_ms = 600001; };\n",
               "FILE:4: scanner.lease_ms: must be 500..600000 (got 600001)");
    expect_err(MIN "scanner = { max_inflight = 0; };\n",
               "FILE:4: scanner.max_inflight: must be 1..10000000 (got 0)");
    expect_err(MIN "producer = { batch = -1; };\n",
               "FILE:4: producer.batch: must be 1..100000 (got -1)");
    expect_err(MIN "scanner = { batch = 10000000000L; };\n",
               "FILE:4: scanner.batch: must be 1..10000 (got 10000000000)");
    expect_err(MIN "log_level = \"verbose\";\n",
               "FILE:4: log_level: must be one of debug, info, warn, error");
}

TEST(config_missing_required)
{
    expect_err(MIN_REDIS MIN_KAFKA, "FILE: namespace: missing");
    expect_err(MIN_NS MIN_KAFKA, "FILE: redis.nodes: missing (or redis.cluster)");
    expect_err(MIN_NS "redis = { };\n" MIN_KAFKA, "FILE: redis.nodes: missing (or redis.cluster)");
    expect_err(MIN_NS MIN_REDIS, "FILE: kafka.brokers: missing\nFILE: kafka.topic: missing");
    expect_err(MIN_NS MIN_REDIS "kafka = { brokers = \"b:1\"; };\n", "FILE: kafka.topic: missing");
    expect_err(MIN_NS "redis = { nodes = ( { host = \"a\"; } ); };\n" MIN_KAFKA,
               "FILE:2: redis.nodes[0].port: missing");
    expect_err(
        "", "FILE: namespace: missing\nFILE: kafka.brokers: missing\nFILE: kafka.topic: missing");
    /* file order first: a bad value is reported before the missing keys */
    expect_err("log_level = \"loud\";\n",
               "FILE:1: log_level: must be one of debug, info, warn, error\nFILE: namespace: "
               "missing\nFILE: kafka.brokers: missing\nFILE: kafka.topic: missing");
}

TEST(config_namespace)
{
    expect_err("namespace = \"de:mo\";\n" MIN_REDIS MIN_KAFKA,
               "FILE:1: namespace: must be 1..64 bytes of [A-Za-z0-9_.-]");
    expect_err("namespace = \"\";\n" MIN_REDIS MIN_KAFKA,
               "FILE:1: namespace: must be 1..64 bytes of [A-Za-z0-9_.-]");
    expect_err("namespace = \"a b\";\n" MIN_REDIS MIN_KAFKA,
               "FILE:1: namespace: must be 1..64 bytes of [A-Za-z0-9_.-]");
    expect_err("namespace = \"{tag}\";\n" MIN_REDIS MIN_KAFKA,
               "FILE:1: namespace: must be 1..64 bytes of [A-Za-z0-9_.-]");

    char text[512], ns[LAPSE_NS_MAX + 2];
    memset(ns, 'n', sizeof ns - 1);
    ns[LAPSE_NS_MAX + 1] = '\0'; /* 65 bytes */
    snprintf(text, sizeof text, "namespace = \"%s\";\n" MIN_REDIS MIN_KAFKA, ns);
    expect_err(text, "FILE:1: namespace: must be 1..64 bytes of [A-Za-z0-9_.-]");

    ns[LAPSE_NS_MAX] = '\0'; /* 64 bytes: fine */
    snprintf(text, sizeof text, "namespace = \"%s\";\n" MIN_REDIS MIN_KAFKA, ns);
    struct lapse_config c;
    REQUIRE(load_text(&c, text) == 0);
    CHECK_STR(c.ns, ns);
    lapse_config_free(&c);
}

TEST(config_kafka_strings)
{
    expect_err(MIN_NS MIN_REDIS "kafka = { brokers = \"\"; topic = \"t\"; };\n",
               "FILE:3: kafka.brokers: must not be empty");
    expect_err(MIN_NS MIN_REDIS "kafka = { brokers = \"b:1\"; topic = \"a/b\"; };\n",
               "FILE:3: kafka.topic: must be 1..249 bytes of [A-Za-z0-9_.-]");
    char text[1024], topic[251];
    memset(topic, 't', 250);
    topic[250] = '\0';
    snprintf(text, sizeof text,
             MIN_NS MIN_REDIS "kafka = { brokers = \"b:1\"; topic = \"%s\"; };\n", topic);
    expect_err(text, "FILE:3: kafka.topic: must be 1..249 bytes of [A-Za-z0-9_.-]");
}

TEST(config_syntax_errors)
{
    expect_err("namespace = \"demo\";\nredis = {\n  nodes = ( { host = ; } );\n};\n",
               "FILE:3: syntax error");
    expect_err(MIN "namespace = \"again\";\n", "FILE:4: syntax error: duplicate setting name");
    expect_err(MIN "scanner = { batch = [1, \"x\"]; };\n",
               "FILE:4: syntax error: mismatched element type in array");
}

/* libconfig notices a group left open lines later; the message names the
 * line that opened it. Brackets in strings and comments do not count. */
TEST(config_syntax_error_names_the_open_bracket)
{
    expect_err(MIN "scanner = {\n  poll_ms = 10;\n\nproducer = {\n  batch = 10;\n};\n"
                   "log_level = \"info\";\n",
               "FILE:11: syntax error (the group opened at line 4 is not closed)");
    expect_err(
        MIN_NS "redis = { nodes = ( { host = \"a\"; port = 1; }  };\n" MIN_KAFKA,
        "FILE:2: syntax error (the list opened at line 2 is not closed before the '}' at line 2)");
    expect_err(MIN "scanner = {\n"
                   "  # a comment with { and (\n"
                   "  poll_ms = 10; // and [ here\n"
                   "  /* a block { comment\n"
                   "     over ( two lines */\n"
                   "};\n"
                   "ingress = { topic = \"t\"; group = \"g}\\\"{\";\n"
                   "log_level = \"info\";\n",
               "FILE:12: syntax error (the group opened at line 10 is not closed)");
    expect_err(MIN "};\n", "FILE:4: syntax error (the '}' at line 4 closes nothing)");
    /* brackets that pair up: no hint */
    expect_err(MIN "scanner = { batch = ; };\n", "FILE:4: syntax error");
}

TEST(config_unreadable)
{
    struct lapse_config c;
    char err[256];
    CHECK(lapse_config_load(&c, "/nonexistent/lapse.conf", err, sizeof err) == -1);
    CHECK_STR(err, "/nonexistent/lapse.conf: cannot read: No such file or directory");
    CHECK(all_zero(&c));
    CHECK(lapse_config_load(&c, "/tmp", err, sizeof err) == -1);
    CHECK_STR(err, "/tmp: cannot read: Is a directory");
    CHECK(all_zero(&c));
}

/* The library's opaque handle (producer.h): a config on the heap, or NULL
 * with errno EINVAL and the reason. */
TEST(config_open_close)
{
    char err[256];
    errno = 0;
    CHECK(lapse_config_open("/nonexistent/lapse.conf", err, sizeof err) == NULL);
    CHECK(errno == EINVAL);
    CHECK_STR(err, "/nonexistent/lapse.conf: cannot read: No such file or directory");
    struct lapse_config *c = lapse_config_open("lapse.conf.example", err, sizeof err);
    REQUIRE(c != NULL);
    CHECK(c->nnodes >= 1);
    lapse_config_close(c);
    lapse_config_close(NULL);
}

TEST(config_errstr_bounds)
{
    struct lapse_config c;
    char err[12];
    memset(err, 'x', sizeof err);
    CHECK(lapse_config_load(&c, "/nonexistent/lapse.conf", err, 8) == -1);
    CHECK(strlen(err) == 7); /* truncated, terminated, nothing past size */
    CHECK(err[8] == 'x');
    CHECK(load_text_n(&c, MIN "bogus = 1;\n", 8) == -1); /* shorter than the path */
    CHECK_STR(msg, "/tmp/la");
    CHECK(load_text_n(&c, MIN "bogus = 1;\n", 45) == -1); /* cut inside the reason */
    CHECK_STR(msg, "FILE:4: bogus: unkn");
    CHECK(all_zero(&c));
    CHECK(lapse_config_load(&c, "/nonexistent/lapse.conf", NULL, 0) == -1);
    CHECK(all_zero(&c));
}

/* Every problem, a line each, in file order: not only the first. */
TEST(config_every_problem)
{
    expect_err(MIN "bogus = 1;\nscanner = { pol_ms = 10; lease_ms = 0; };\nalso_bogus = 2;\n",
               "FILE:4: bogus: unknown key\n"
               "FILE:5: scanner.pol_ms: unknown key (did you mean scanner.poll_ms?)\n"
               "FILE:5: scanner.lease_ms: must be 500..600000 (got 0)\n"
               "FILE:6: also_bogus: unknown key");
    /* each node's problems, and no comparing of nodes when one is wrong */
    expect_err(MIN_NS MIN_KAFKA "redis = { nodes = (\n"
                                "  { host = \"a\"; port = 0; },\n"
                                "  { host = \"a\"; prot = 1; }\n"
                                "); };\n",
               "FILE:4: redis.nodes[0].port: must be 1..65535 (got 0)\n"
               "FILE:5: redis.nodes[1].prot: unknown key (did you mean redis.nodes[1].port?)");
    /* a group of the wrong type is one problem, not one per key it lacks */
    expect_err(MIN_NS MIN_REDIS "kafka = 5;\nbogus = 1;\n",
               "FILE:3: kafka: expected a group { ... }\nFILE:4: bogus: unknown key");
    /* what keys say together: checked beside unknown keys (they set
     * nothing), not beside a bad value (it would be checked unset) */
    expect_err(MIN_NS MIN_KAFKA "redis = { nodes = ( { host = \"a\"; port = 1; } );\n"
                                "  tls = { cert_file = \"c\"; }; };\nbogus = 1;\n",
               "FILE:5: bogus: unknown key\n"
               "FILE:4: redis.tls.key_file: missing (mutual TLS needs both cert_file and "
               "key_file)");
    expect_err(MIN_NS MIN_KAFKA "redis = { nodes = ( { host = \"a\"; port = 1; } );\n"
                                "  tls = { cert_file = \"c\"; }; };\nlog_level = 5;\n",
               "FILE:5: log_level: expected a string");
    /* what does not fit is cut */
    struct lapse_config c;
    CHECK(load_text_n(&c, MIN "bogus = 1;\nmore = 2;\n", 60) == -1);
    CHECK_STR(msg, "FILE:4: bogus: unknown key\n/tmp/la");
    CHECK(all_zero(&c));
}

TEST(config_free_zeroed)
{
    struct lapse_config c;
    memset(&c, 0, sizeof c);
    lapse_config_free(&c);
    lapse_config_free(NULL);
    REQUIRE(load_text(&c, MIN) == 0);
    lapse_config_free(&c);
    CHECK(all_zero(&c));
    lapse_config_free(&c); /* twice is fine: the first zeroed it */
}
