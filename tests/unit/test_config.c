/*
 * test_config — the config table: the example file, defaults, and one test
 * per kind of error with its exact message. Each config text is written to a
 * temp file; messages are compared with the temp path replaced by "FILE", so
 * a check reads like what an operator sees.
 */
#include "config.h"
#include "log.h"
#include "t.h"

#include <stdlib.h>
#include <unistd.h>

/* The contract's three keys, one per line (lines 1..3). */
#define MIN_NS "namespace = \"demo\";\n"
#define MIN_REDIS "redis = { nodes = ( { host = \"127.0.0.1\"; port = 6379; } ); };\n"
#define MIN_KAFKA "kafka = { brokers = \"127.0.0.1:9092\"; topic = \"lapse.timeouts\"; };\n"
#define MIN MIN_NS MIN_REDIS MIN_KAFKA

static char msg[256]; /* last error, temp path replaced by "FILE" */

/* Writes `text` to a temp file, loads it into cfg with an errstr of `size`
 * bytes and returns what lapse_config_load returned; the message lands in
 * `msg`. */
static int load_text_n(struct lapse_config *cfg, const char *text, size_t size)
{
    char path[] = "/tmp/lapse-test-config-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    size_t len = strlen(text);
    REQUIRE(write(fd, text, len) == (ssize_t)len);
    close(fd);

    char err[256];
    memset(err, 'x', sizeof err);
    int rc = lapse_config_load(cfg, path, err, size);
    CHECK(size == 0 || memchr(err, '\0', size) != NULL); /* terminated within size */
    CHECK(size == sizeof err || err[size] == 'x');         /* nothing written past it */
    unlink(path);
    size_t plen = strlen(path);
    if (strncmp(err, path, plen) == 0)
        snprintf(msg, sizeof msg, "FILE%s", err + plen);
    else
        snprintf(msg, sizeof msg, "%s", err);
    return rc;
}

static int load_text(struct lapse_config *cfg, const char *text)
{
    return load_text_n(cfg, text, 256);
}

static int all_zero(const struct lapse_config *cfg)
{
    static const struct lapse_config zero;
    return memcmp(cfg, &zero, sizeof zero) == 0;
}

/* Loads `text`, expects failure with exactly `want`, and a zeroed cfg. */
static void expect_err(const char *text, const char *want)
{
    struct lapse_config cfg;
    CHECK(load_text(&cfg, text) == -1);
    CHECK_STR(msg, want);
    CHECK(all_zero(&cfg));
    lapse_config_free(&cfg);
}

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
        "namespace", "redis", "nodes", "host", "port", "password", "db",
        "connect_timeout_ms", "command_timeout_ms", "retry_timeout_ms", "wait_replicas",
        "wait_timeout_ms", "sentinels", "master", "sentinel_username", "sentinel_password",
        "username", "was", "tls", "ca_file", "cert_file", "key_file", "server_name", "kafka",
        "brokers", "topic",
        "properties", "log_level", "producer", "batch", "scanner", "poll_ms",
        "lease_ms", "max_inflight", "ingress", "group", "dead_letter_topic", "rules",
        "id_field", "id_prefix", "match_field", "match_value", "time", "time_field",
        "timeout_ms", "cluster", "cluster_username", "cluster_password", "cluster_tls",
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
    REQUIRE(load_text(&c, "namespace = \"a-b_c.d\";\n"
                          "log_level = \"debug\";\n"
                          "redis = {\n"
                          "  nodes = ( { host = \"r1\"; port = 7000; },\n"
                          "            { host = \"r2\"; port = 7001; password = \"pw\"; db = 15; } );\n"
                          "  connect_timeout_ms = 10;\n"
                          "  command_timeout_ms = 600000;\n"
                          "};\n"
                          "kafka = { brokers = \"k1:9092,k2:9092\"; topic = \"t\"; properties = (); };\n"
                          "producer = { batch = 100000; };\n"
                          "scanner = { batch = 1; poll_ms = 1000; lease_ms = 500; max_inflight = 10000000; };\n") == 0);
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
    REQUIRE(load_text(&c, MIN_NS MIN_REDIS
                      "kafka = {\n"
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
    expect_err(KAFKA_PROPS("properties = ( (\"linger.ms\", 0.5) );"),
               "FILE:4: kafka.properties[0]: linger.ms: value must be a string, integer or boolean");
    expect_err(KAFKA_PROPS("properties = ( (\"acks\", \"1\"),\n(\"acks\", \"all\") );"),
               "FILE:5: kafka.properties[1]: acks: given twice");
#undef KAFKA_PROPS
}

TEST(config_unknown_keys)
{
    expect_err(MIN "bogus = 1;\n", "FILE:4: bogus: unknown key");
    expect_err(MIN "scanner = {\n  batch = 5;\n  bacth = 6;\n};\n",
               "FILE:6: scanner.bacth: unknown key");
    expect_err(MIN_NS
               "redis = { nodes = ( { host = \"a\"; port = 1; },\n"
               "                    { host = \"b\"; port = 2; user = \"u\"; } ); };\n" MIN_KAFKA,
               "FILE:3: redis.nodes[1].user: unknown key");
    /* a known name in the wrong group is still unknown there */
    expect_err(MIN "producer = { lease_ms = 5000; };\n", "FILE:4: producer.lease_ms: unknown key");
    expect_err(MIN "nodes = ();\n", "FILE:4: nodes: unknown key");
}

TEST(config_wrong_types)
{
    expect_err(MIN "producer = { batch = \"10\"; };\n", "FILE:4: producer.batch: expected an integer");
    expect_err(MIN "producer = { batch = 10.0; };\n", "FILE:4: producer.batch: expected an integer");
    expect_err(MIN "producer = { batch = true; };\n", "FILE:4: producer.batch: expected an integer");
    expect_err(MIN "log_level = 3;\n", "FILE:4: log_level: expected a string");
    expect_err(MIN "scanner = 5;\n", "FILE:4: scanner: expected a group { ... }");
    expect_err("namespace = [\"demo\"];\n" MIN_REDIS MIN_KAFKA, "FILE:1: namespace: expected a string");
    expect_err(MIN_NS "redis = { nodes = { host = \"a\"; port = 1; }; };\n" MIN_KAFKA,
               "FILE:2: redis.nodes: expected a list ( { host = ...; port = ...; }, ... )");
    expect_err(MIN_NS "redis = { nodes = ( \"a:1\" ); };\n" MIN_KAFKA,
               "FILE:2: redis.nodes[0]: expected a group { host = ...; port = ...; }");
}

TEST(config_out_of_range)
{
    expect_err(MIN_NS
               "redis = {\n"
               "  nodes = ( { host = \"a\"; port = 1; } );\n"
               "  connect_timeout_ms = 9;\n"
               "};\n" MIN_KAFKA,
               "FILE:4: redis.connect_timeout_ms: must be 10..60000 (got 9)");
    expect_err(MIN "scanner = { lease_ms = 600001; };\n",
               "FILE:4: scanner.lease_ms: must be 500..600000 (got 600001)");
    expect_err(MIN "scanner = { max_inflight = 0; };\n",
               "FILE:4: scanner.max_inflight: must be 1..10000000 (got 0)");
    expect_err(MIN "producer = { batch = -1; };\n", "FILE:4: producer.batch: must be 1..100000 (got -1)");
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
    expect_err(MIN_NS MIN_REDIS, "FILE: kafka.brokers: missing");
    expect_err(MIN_NS MIN_REDIS "kafka = { brokers = \"b:1\"; };\n", "FILE: kafka.topic: missing");
    expect_err(MIN_NS "redis = { nodes = ( { host = \"a\"; } ); };\n" MIN_KAFKA,
               "FILE:2: redis.nodes[0].port: missing");
    expect_err("", "FILE: namespace: missing");
    /* file order first: a bad value is reported before a missing key */
    expect_err("log_level = \"loud\";\n", "FILE:1: log_level: must be one of debug, info, warn, error");
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
    snprintf(text, sizeof text, MIN_NS MIN_REDIS "kafka = { brokers = \"b:1\"; topic = \"%s\"; };\n", topic);
    expect_err(text, "FILE:3: kafka.topic: must be 1..249 bytes of [A-Za-z0-9_.-]");
}

TEST(config_nodes)
{
#define NODES(n) MIN_NS "redis = {\n  nodes = (\n" n "\n  );\n};\n" MIN_KAFKA
    expect_err(NODES("{ host = \"a\"; port = 0; }"), "FILE:4: redis.nodes[0].port: must be 1..65535 (got 0)");
    expect_err(NODES("{ host = \"a\"; port = 6379; },\n{ host = \"b\";\n  port = 65536; }"),
               "FILE:6: redis.nodes[1].port: must be 1..65535 (got 65536)");
    expect_err(NODES("{ host = \"a\"; port = \"6379\"; }"), "FILE:4: redis.nodes[0].port: expected an integer");
    expect_err(NODES("{ host = \"\"; port = 1; }"), "FILE:4: redis.nodes[0].host: must be 1..255 bytes");
    expect_err(NODES("{ host = \"a\"; port = 1; db = 16; }"), "FILE:4: redis.nodes[0].db: must be 0..15 (got 16)");
    expect_err(NODES("{ host = \"a\"; port = 1; password = \"\"; }"),
               "FILE:4: redis.nodes[0].password: must not be empty");
    expect_err(NODES(""), "FILE:3: redis.nodes: must list 1..64 nodes");
    expect_err(NODES("{ host = \"a\"; port = 1; },\n{ host = \"a\"; port = 1; }"),
               "FILE:5: redis.nodes[1]: a:1 is listed twice (as redis.nodes[0])");
    expect_err(NODES("{ db = 1; }"), "FILE:4: redis.nodes[0].host: missing (or sentinels and master)");
    expect_err(NODES("{ port = 1; }"), "FILE:4: redis.nodes[0].host: missing");
    expect_err(NODES("{ host = \"a\"; port = 1; username = \"u\"; }"),
               "FILE:4: redis.nodes[0].password: missing (username needs it)");
#undef NODES
    /* 64 nodes load, 65 do not */
    static char text[16384];
    size_t off = (size_t)snprintf(text, sizeof text, MIN_NS "redis = { nodes = (");
    for (int i = 0; i < 65; i++)
        off += (size_t)snprintf(text + off, sizeof text - off, "%s{ host = \"h%d\"; port = %d; }",
                                i ? ", " : "", i, 7000 + i);
    snprintf(text + off, sizeof text - off, "); };\n" MIN_KAFKA);
    expect_err(text, "FILE:2: redis.nodes: must list 1..64 nodes");
    char *cut = strstr(text, ", { host = \"h64\"");
    REQUIRE(cut != NULL);
    snprintf(cut, sizeof text - (size_t)(cut - text), "); };\n" MIN_KAFKA);
    struct lapse_config c;
    REQUIRE(load_text(&c, text) == 0);
    REQUIRE(c.nnodes == 64);
    CHECK_STR(c.nodes[63].host, "h63");
    CHECK(c.nodes[63].port == 7063);
    lapse_config_free(&c);
}

/* TLS: a node says tls = true, redis.tls says how; a certificate comes
 * with its key. */
TEST(config_tls)
{
    struct lapse_config c;
    REQUIRE(load_text(&c, MIN_NS "redis = { nodes = ( { host = \"h\"; port = 1; tls = true; }, "
                              "{ host = \"g\"; port = 2; } );\n"
                              "  tls = { ca_file = \"/ca.pem\"; cert_file = \"/c.pem\"; "
                              "key_file = \"/k.pem\"; server_name = \"r.internal\"; }; };\n" MIN_KAFKA) == 0);
    CHECK(c.nodes[0].tls == 1 && c.nodes[1].tls == 0);
    CHECK_STR(c.redis_tls_ca_file, "/ca.pem");
    CHECK_STR(c.redis_tls_cert_file, "/c.pem");
    CHECK_STR(c.redis_tls_key_file, "/k.pem");
    CHECK_STR(c.redis_tls_server_name, "r.internal");
    lapse_config_free(&c);
    REQUIRE(load_text(&c, MIN) == 0);
    CHECK(c.nodes[0].tls == 0 && c.redis_tls_ca_file == NULL);
    lapse_config_free(&c);
    expect_err(MIN_NS "redis = { nodes = ( { host = \"h\"; port = 1; tls = 1; } ); };\n" MIN_KAFKA,
               "FILE:2: redis.nodes[0].tls: expected true or false");
    expect_err(MIN_NS "redis = { nodes = ( { host = \"h\"; port = 1; } );\n"
                      "  tls = { cert_file = \"/c.pem\"; }; };\n" MIN_KAFKA,
               "FILE:3: redis.tls.key_file: missing (mutual TLS needs both cert_file and key_file)");
    expect_err(MIN_NS "redis = { nodes = ( { host = \"h\"; port = 1; } );\n"
                      "  tls = { ca = \"/c.pem\"; }; };\n" MIN_KAFKA,
               "FILE:3: redis.tls.ca: unknown key");
}

/* A node behind Sentinel: sentinels + master, optional credentials for the
 * sentinels; its layout name is the master name. */
TEST(config_sentinel_nodes)
{
#define NODES(n) MIN_NS "redis = {\n  nodes = (\n" n "\n  );\n};\n" MIN_KAFKA
    struct lapse_config c;
    REQUIRE(load_text(&c, NODES("{ sentinels = ( \"10.0.1.1:26379\", \"[::1]:26380\" ); master = \"lapse-b\";\n"
                                "  sentinel_username = \"su\"; sentinel_password = \"sp\";\n"
                                "  username = \"lapse\"; password = \"pw\"; db = 2; },\n"
                                "{ host = \"10.0.0.2\"; port = 6379; }")) == 0);
    REQUIRE(c.nnodes == 2);
    const struct lapse_redis_node *n = &c.nodes[0];
    CHECK(n->host == NULL && n->port == 0 && n->nsentinels == 2);
    CHECK_STR(n->sentinels[0], "10.0.1.1:26379");
    CHECK_STR(n->sentinels[1], "[::1]:26380");
    CHECK_STR(n->master, "lapse-b");
    CHECK_STR(n->sentinel_username, "su");
    CHECK_STR(n->sentinel_password, "sp");
    CHECK_STR(n->username, "lapse");
    CHECK_STR(n->password, "pw");
    CHECK(n->db == 2);
    char name[LAPSE_NODE_NAME_MAX];
    CHECK_STR(lapse_node_name(&c.nodes[0], name, sizeof name), "lapse-b");
    CHECK_STR(lapse_node_name(&c.nodes[1], name, sizeof name), "10.0.0.2:6379");
    lapse_config_free(&c);

    expect_err(NODES("{ sentinels = ( \"a:1\" ); }"), "FILE:4: redis.nodes[0].master: missing");
    expect_err(NODES("{ master = \"m\"; }"), "FILE:4: redis.nodes[0].sentinels: missing");
    expect_err(NODES("{ sentinels = ( \"a:1\" ); master = \"m\"; host = \"h\"; port = 1; }"),
               "FILE:4: redis.nodes[0]: either host and port (a plain node) or sentinels and master "
               "(a Sentinel node), not both");
    expect_err(NODES("{ sentinels = ( \"a\" ); master = \"m\"; }"),
               "FILE:4: redis.nodes[0].sentinels[0]: expected \"host:port\" (port 1..65535)");
    expect_err(NODES("{ sentinels = ( \"a:0\" ); master = \"m\"; }"),
               "FILE:4: redis.nodes[0].sentinels[0]: expected \"host:port\" (port 1..65535)");
    expect_err(NODES("{ sentinels = ( 1 ); master = \"m\"; }"),
               "FILE:4: redis.nodes[0].sentinels[0]: expected \"host:port\" (port 1..65535)");
    expect_err(NODES("{ sentinels = ( ); master = \"m\"; }"),
               "FILE:4: redis.nodes[0].sentinels: must list 1..16 addresses");
    expect_err(NODES("{ sentinels = \"a:1\"; master = \"m\"; }"),
               "FILE:4: redis.nodes[0].sentinels: expected a list ( \"host:port\", ... )");
    expect_err(NODES("{ sentinels = ( \"a:1\" ); master = \"m m\"; }"),
               "FILE:4: redis.nodes[0].master: must be 1..255 bytes of [A-Za-z0-9_.-]");
    expect_err(NODES("{ host = \"a\"; port = 1; sentinel_password = \"x\"; }"),
               "FILE:4: redis.nodes[0].sentinel_password: only for a Sentinel node (sentinels and master)");
    expect_err(NODES("{ sentinels = ( \"a:1\" ); master = \"m\"; sentinel_username = \"u\"; }"),
               "FILE:4: redis.nodes[0].sentinel_password: missing (sentinel_username needs it)");
    expect_err(NODES("{ sentinels = ( \"a:1\" ); master = \"m\"; },\n{ sentinels = ( \"b:1\" ); master = \"m\"; }"),
               "FILE:5: redis.nodes[1]: m is listed twice (as redis.nodes[0])");
    expect_err(NODES("{ host = \"h\"; port = 1; },\n{ sentinels = ( \"b:1\" ); master = \"m\"; was = \"h:1\"; }"),
               "FILE:5: redis.nodes[1]: h:1 is listed twice (as redis.nodes[0])");
    expect_err(NODES("{ host = \"h\"; port = 1; was = \"h:2\"; }"),
               "FILE:4: redis.nodes[0].was: only for a Sentinel node (sentinels and master)");
    expect_err(NODES("{ sentinels = ( \"b:1\" ); master = \"m\"; was = \"hhhh\"; }"),
               "FILE:4: redis.nodes[0].was: expected \"host:port\" (port 1..65535)");
#undef NODES

}

TEST(config_syntax_errors)
{
    expect_err("namespace = \"demo\";\nredis = {\n  nodes = ( { host = ; } );\n};\n",
               "FILE:3: syntax error");
    expect_err(MIN "namespace = \"again\";\n", "FILE:4: syntax error: duplicate setting name");
    expect_err(MIN "scanner = { batch = [1, \"x\"]; };\n", "FILE:4: syntax error: mismatched element type in array");
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

TEST(config_errstr_bounds)
{
    struct lapse_config c;
    char err[12];
    memset(err, 'x', sizeof err);
    CHECK(lapse_config_load(&c, "/nonexistent/lapse.conf", err, 8) == -1);
    CHECK(strlen(err) == 7); /* truncated, terminated, nothing past size */
    CHECK(err[8] == 'x');
    CHECK(load_text_n(&c, MIN "bogus = 1;\n", 8) == -1);  /* shorter than the path */
    CHECK_STR(msg, "/tmp/la");
    CHECK(load_text_n(&c, MIN "bogus = 1;\n", 45) == -1); /* cut inside the reason */
    CHECK_STR(msg, "FILE:4: bogus: unkn");
    CHECK(all_zero(&c));
    CHECK(lapse_config_load(&c, "/nonexistent/lapse.conf", NULL, 0) == -1);
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

/* ---------------------------------------------------------------- ingress */

TEST(config_example_ingress)
{
    struct lapse_config c;
    char err[256] = "";
    REQUIRE(lapse_config_load(&c, "lapse.conf.example", err, sizeof err) == 0);
    CHECK_STR(c.ingress_topic, "lapse.signals");
    CHECK_STR(c.ingress_group, "lapse-ingress");
    CHECK(lapse_config_check_ingress(&c, err, sizeof err) == 0);
    REQUIRE(c.ningress_rules == 3);
    const struct lapse_ingress_rule *r = c.ingress_rules;
    CHECK_STR(r[0].id_field, "device");
    CHECK_STR(r[0].id_prefix, "sensor-");
    CHECK(r[0].time_source == LAPSE_TIME_FIELD);
    CHECK_STR(r[0].time_field, "ts");
    CHECK(r[0].timeout_ms == 60000);
    CHECK(r[0].match_field == NULL && r[0].match_value == NULL);
    CHECK_STR(r[1].match_field, "type");
    CHECK_STR(r[1].match_value, "heartbeat");
    CHECK(r[1].id_field == NULL && r[1].id_prefix == NULL);
    CHECK(r[1].time_source == LAPSE_TIME_KAFKA);
    CHECK(r[1].timeout_ms == 30000);
    CHECK(r[2].time_source == LAPSE_TIME_ARRIVAL);
    CHECK_STR(r[2].time_field, "ts"); /* the default, unused */
    CHECK(r[2].timeout_ms == 300000);
    CHECK(r[2].id_field == NULL && r[2].id_prefix == NULL && r[2].match_field == NULL);
    lapse_config_free(&c);
    CHECK(all_zero(&c));
}

TEST(config_ingress_absent)
{
    struct lapse_config c;
    char err[256];
    REQUIRE(load_text(&c, MIN) == 0);
    CHECK(c.ingress_topic == NULL && c.ingress_group == NULL);
    CHECK(c.ningress_rules == 0 && c.ingress_rules == NULL);
    /* loading is fine; --from-kafka is not */
    CHECK(lapse_config_check_ingress(&c, err, sizeof err) == -1);
    CHECK(strstr(err, ": ingress.topic: missing (required by --from-kafka)") != NULL);
    lapse_config_free(&c);

    REQUIRE(load_text(&c, MIN "ingress = { topic = \"in\"; };\n") == 0);
    CHECK(lapse_config_check_ingress(&c, err, sizeof err) == -1);
    CHECK(strstr(err, ": ingress.group: missing (required by --from-kafka)") != NULL);
    CHECK(strncmp(err, c.path, strlen(c.path)) == 0); /* the file is named */
    lapse_config_free(&c);

    REQUIRE(load_text(&c, MIN "ingress = { group = \"g\"; };\n") == 0);
    CHECK(lapse_config_check_ingress(&c, err, sizeof err) == -1);
    CHECK(strstr(err, ": ingress.topic: missing") != NULL);
    lapse_config_free(&c);
}

TEST(config_ingress_every_key)
{
    struct lapse_config c;
    char err[64];
    REQUIRE(load_text(&c, MIN
                      "ingress = {\n"
                      "  topic = \"in\"; group = \"g 1\"; dead_letter_topic = \"in.dlq\";\n"
                      "  properties = ( (\"session.timeout.ms\", 6000), (\"auto.offset.reset\", \"latest\") );\n"
                      "  rules = (\n"
                      "    { id_prefix = \"a\"; match_field = \"k\"; match_value = \"\"; id_field = \"dev\";\n"
                      "      time = \"field\"; time_field = \"t\"; timeout_ms = 2147483647; },\n"
                      "    { time = \"kafka\"; timeout_ms = 1; },\n"
                      "    { time = \"arrival\"; timeout_ms = 5; }\n"
                      "  );\n"
                      "};\n") == 0);
    CHECK_STR(c.ingress_topic, "in");
    CHECK_STR(c.ingress_group, "g 1");
    CHECK_STR(c.ingress_dead_letter_topic, "in.dlq");
    CHECK(lapse_config_check_ingress(&c, err, sizeof err) == 0);
    REQUIRE(c.ningress_props == 2);
    CHECK_STR(c.ingress_props[0].key, "session.timeout.ms");
    CHECK_STR(c.ingress_props[0].value, "6000");
    CHECK_STR(c.ingress_props[1].value, "latest");
    CHECK(c.nkafka_props == 0); /* kept apart from kafka.properties */
    REQUIRE(c.ningress_rules == 3);
    const struct lapse_ingress_rule *r = c.ingress_rules;
    CHECK_STR(r[0].id_prefix, "a");
    CHECK_STR(r[0].match_field, "k");
    CHECK_STR(r[0].match_value, "");
    CHECK_STR(r[0].id_field, "dev");
    CHECK(r[0].time_source == LAPSE_TIME_FIELD);
    CHECK_STR(r[0].time_field, "t");
    CHECK(r[0].timeout_ms == 2147483647);
    CHECK(r[1].time_source == LAPSE_TIME_KAFKA && r[1].timeout_ms == 1);
    CHECK(r[2].time_source == LAPSE_TIME_ARRIVAL && r[2].timeout_ms == 5);
    lapse_config_free(&c);

    REQUIRE(load_text(&c, MIN "ingress = { rules = (); };\n") == 0);
    CHECK(c.ningress_rules == 0 && c.ingress_rules == NULL);
    lapse_config_free(&c);
}

TEST(config_ingress_errors)
{
#define ING(body) MIN "ingress = {\n" body "\n};\n"
    expect_err(ING("topic = \"a/b\";"), "FILE:5: ingress.topic: must be 1..249 bytes of [A-Za-z0-9_.-]");
    expect_err(ING("group = \"\";"), "FILE:5: ingress.group: must be 1..255 bytes");
    expect_err(ING("dead_letter_topic = 5;"), "FILE:5: ingress.dead_letter_topic: expected a string");
    expect_err(ING("topic = \"t\"; grop = \"g\";"), "FILE:5: ingress.grop: unknown key");
    expect_err(ING("topic = \"lapse.timeouts\";"),
               "FILE:5: ingress.topic: must differ from kafka.topic (the events lapse produces)");
    expect_err(ING("topic = \"in\";\ndead_letter_topic = \"in\";"),
               "FILE:6: ingress.dead_letter_topic: must differ from ingress.topic");
    expect_err(ING("properties = ( (\"group.id\", \"x\") );"),
               "FILE:5: ingress.properties[0]: group.id: set by lapse (ingress.group; offsets are "
               "committed only once applied)");
    expect_err(ING("properties = ( (\"a\", \"1\"),\n(\"enable.auto.commit\", true) );"),
               "FILE:6: ingress.properties[1]: enable.auto.commit: set by lapse (ingress.group; "
               "offsets are committed only once applied)");
    expect_err(ING("properties = ( (\"enable.auto.offset.store\", true) );"),
               "FILE:5: ingress.properties[0]: enable.auto.offset.store: set by lapse (ingress.group; "
               "offsets are committed only once applied)");
    expect_err(ING("properties = ( (\"bootstrap.servers\", \"x:1\") );"),
               "FILE:5: ingress.properties[0]: bootstrap.servers: set kafka.brokers instead");
    expect_err(ING("properties = ( (\"a\", \"1\"), (\"a\", \"2\") );"),
               "FILE:5: ingress.properties[1]: a: given twice");
    /* group.id is only reserved for the consumer */
    struct lapse_config c;
    REQUIRE(load_text(&c, MIN_NS MIN_REDIS "kafka = { brokers = \"b:1\"; topic = \"t\";\n"
                                           "properties = ( (\"group.id\", \"x\") ); };\n") == 0);
    lapse_config_free(&c);
#undef ING
}

TEST(config_ingress_rule_errors)
{
#define RULES(r) MIN "ingress = { topic = \"in\"; group = \"g\";\nrules = (\n" r "\n); };\n"
    expect_err(MIN "ingress = { rules = { timeout_ms = 5; }; };\n",
               "FILE:4: ingress.rules: expected a list ( { timeout_ms = ...; }, ... )");
    expect_err(RULES("\"x\", { timeout_ms = 5; }"), "FILE:6: ingress.rules[0]: expected a group { timeout_ms = ...; }");
    expect_err(RULES("{ timeout_ms = 5; },\n{ id_prefix = \"a\"; }"),
               "FILE: ingress.rules[1].timeout_ms: missing");
    expect_err(RULES("{ timeout_ms = 0; }"), "FILE:6: ingress.rules[0].timeout_ms: must be 1..2147483647 (got 0)");
    expect_err(RULES("{ timeout_ms = 2147483648L; }"),
               "FILE:6: ingress.rules[0].timeout_ms: must be 1..2147483647 (got 2147483648)");
    expect_err(RULES("{ timeout_ms = \"5\"; }"), "FILE:6: ingress.rules[0].timeout_ms: expected an integer");
    expect_err(RULES("{ timeout_ms = 5; time = \"now\"; }"),
               "FILE:6: ingress.rules[0].time: must be one of arrival, kafka, field");
    expect_err(RULES("{ timeout_ms = 5; time = 1; }"), "FILE:6: ingress.rules[0].time: expected a string");
    expect_err(RULES("{ timeout_ms = 5; id_prefix = \"\"; }"),
               "FILE:6: ingress.rules[0].id_prefix: must be 1..512 bytes");
    expect_err(RULES("{ timeout_ms = 5; id_field = \"\"; }"),
               "FILE:6: ingress.rules[0].id_field: must be 1..255 bytes");
    expect_err(RULES("{ timeout_ms = 5; match_field = \"\"; match_value = \"x\"; }"),
               "FILE:6: ingress.rules[0].match_field: must be 1..255 bytes");
    expect_err(RULES("{ timeout_ms = 5;\n  match_field = \"type\"; }"),
               "FILE:6: ingress.rules[0]: match_field and match_value go together");
    expect_err(RULES("{ timeout_ms = 5; match_value = \"x\"; }"),
               "FILE:6: ingress.rules[0]: match_field and match_value go together");
    expect_err(RULES("{ timeout_ms = 5; time_field = \"t\"; }"),
               "FILE:6: ingress.rules[0]: time_field needs time = \"field\"");
    expect_err(RULES("{ timeout_ms = 5; time = \"kafka\"; time_field = \"t\"; }"),
               "FILE:6: ingress.rules[0]: time_field needs time = \"field\"");
    expect_err(RULES("{ timeout_ms = 5; idprefix = \"a\"; }"), "FILE:6: ingress.rules[0].idprefix: unknown key");

    char prefix[514], text[1024];
    memset(prefix, 'p', 513);
    prefix[513] = '\0';
    snprintf(text, sizeof text, RULES("{ timeout_ms = 5; id_prefix = \"%s\"; }"), prefix);
    expect_err(text, "FILE:6: ingress.rules[0].id_prefix: must be 1..512 bytes");
    prefix[512] = '\0';
    snprintf(text, sizeof text, RULES("{ timeout_ms = 5; id_prefix = \"%s\"; }"), prefix);
    struct lapse_config c;
    REQUIRE(load_text(&c, text) == 0);
    CHECK(strlen(c.ingress_rules[0].id_prefix) == 512);
    lapse_config_free(&c);

    /* 256 rules load, 257 do not */
    static char big[65536];
    size_t off = (size_t)snprintf(big, sizeof big, MIN "ingress = { rules = (");
    for (int i = 0; i < 257; i++)
        off += (size_t)snprintf(big + off, sizeof big - off, "%s{ timeout_ms = %d; }", i ? "," : "", i + 1);
    snprintf(big + off, sizeof big - off, "); };\n");
    expect_err(big, "FILE:4: ingress.rules: must list 0..256 rules");
    char *cut = strstr(big, ",{ timeout_ms = 257; }");
    REQUIRE(cut != NULL);
    snprintf(cut, sizeof big - (size_t)(cut - big), "); };\n");
    REQUIRE(load_text(&c, big) == 0);
    CHECK(c.ningress_rules == 256 && c.ingress_rules[255].timeout_ms == 256);
    lapse_config_free(&c);
#undef RULES
}

/* A Redis Cluster instead of nodes: it becomes the one node, named "cluster",
 * with the redis.cluster_* credentials. */
TEST(config_cluster)
{
#define CLUSTER(extra) MIN_NS "redis = {\n  cluster = ( \"10.0.2.1:6379\", \"10.0.2.2:6380\" );\n" extra "};\n" MIN_KAFKA
    struct lapse_config c;
    REQUIRE(load_text(&c, CLUSTER("  cluster_username = \"lapse\"; cluster_password = \"pw\";\n"
                                  "  cluster_tls = true;\n")) == 0);
    CHECK(c.cluster == 1 && c.nnodes == 1);
    const struct lapse_redis_node *n = &c.nodes[0];
    REQUIRE(n->nseeds == 2);
    CHECK_STR(n->seeds[0], "10.0.2.1:6379");
    CHECK_STR(n->seeds[1], "10.0.2.2:6380");
    CHECK_STR(n->username, "lapse");
    CHECK_STR(n->password, "pw");
    CHECK(n->tls == 1 && n->host == NULL && n->master == NULL);
    char name[LAPSE_NODE_NAME_MAX];
    CHECK_STR(lapse_node_name(n, name, sizeof name), "cluster");
    lapse_config_free(&c);
    CHECK(all_zero(&c));

    expect_err(CLUSTER("  nodes = ( { host = \"h\"; port = 1; } );\n"),
               "FILE:3: redis.cluster: redis.nodes is given too: a namespace lives on nodes or on "
               "a cluster");
    expect_err(CLUSTER("  cluster_username = \"u\";\n"),
               "FILE:4: redis.cluster_password: missing (redis.cluster_username needs it)");
    expect_err(MIN_NS "redis = { cluster = ( \"a\" ); };\n" MIN_KAFKA,
               "FILE:2: redis.cluster[0]: expected \"host:port\" (port 1..65535)");
    expect_err(MIN_NS "redis = { cluster = ( ); };\n" MIN_KAFKA,
               "FILE:2: redis.cluster: must list 1..64 addresses");
    expect_err(MIN_NS "redis = { nodes = ( { host = \"h\"; port = 1; } ); cluster_tls = true; };\n"
               MIN_KAFKA, "FILE:2: redis.cluster: missing (redis.cluster_* keys need it)");
#undef CLUSTER
}

TEST(config_ingress_metrics)
{
    struct lapse_config c;
    REQUIRE(load_text(&c, MIN "ingress = { metrics_port = 9464; metrics_bind = \"0.0.0.0\"; };\n") == 0);
    CHECK(c.ingress_metrics_port == 9464);
    CHECK_STR(c.ingress_metrics_bind, "0.0.0.0");
    lapse_config_free(&c);
    REQUIRE(load_text(&c, MIN "ingress = { metrics_port = 9464; };\n") == 0);
    CHECK_STR(c.ingress_metrics_bind, "127.0.0.1"); /* the default */
    lapse_config_free(&c);
    expect_err(MIN "ingress = {\n  metrics_port = 65536;\n};\n",
               "FILE:5: ingress.metrics_port: must be 0..65535 (got 65536)");
    expect_err(MIN "ingress = {\n  metrics_port = \"9464\";\n};\n",
               "FILE:5: ingress.metrics_port: expected an integer");
    expect_err(MIN "ingress = {\n  metrics_bind = \"\";\n};\n",
               "FILE:5: ingress.metrics_bind: must be 1..255 bytes");
}
