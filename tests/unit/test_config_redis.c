/*
 * test_config_redis — the config's redis group: the nodes (plain, TLS,
 * behind Sentinel) and a Redis Cluster instead of nodes, each error with
 * its exact message (config_text.h loads a text as test_config.c does).
 * Apart from test_config.c because the group is the largest of the config
 * and the one each backend (redis_single.c, redis_sentinel.c,
 * redis_cluster.c) reads.
 */
#include "config.h"
#include "config_text.h"
#include "t.h"

TEST(config_nodes)
{
#define NODES(n) MIN_NS "redis = {\n  nodes = (\n" n "\n  );\n};\n" MIN_KAFKA
    expect_err(NODES("{ host = \"a\"; port = 0; }"),
               "FILE:4: redis.nodes[0].port: must be 1..65535 (got 0)");
    expect_err(NODES("{ host = \"a\"; port = 6379; },\n{ host = \"b\";\n  port = 65536; }"),
               "FILE:6: redis.nodes[1].port: must be 1..65535 (got 65536)");
    expect_err(NODES("{ host = \"a\"; port = \"6379\"; }"),
               "FILE:4: redis.nodes[0].port: expected an integer");
    expect_err(NODES("{ host = \"\"; port = 1; }"),
               "FILE:4: redis.nodes[0].host: must be 1..255 bytes");
    expect_err(NODES("{ host = \"a\"; port = 1; db = 16; }"),
               "FILE:4: redis.nodes[0].db: must be 0..15 (got 16)");
    expect_err(NODES("{ host = \"a\"; port = 1; password = \"\"; }"),
               "FILE:4: redis.nodes[0].password: must not be empty");
    expect_err(NODES(""), "FILE:3: redis.nodes: must list 1..64 nodes");
    expect_err(NODES("{ host = \"a\"; port = 1; },\n{ host = \"a\"; port = 1; }"),
               "FILE:5: redis.nodes[1]: a:1 is listed twice (as redis.nodes[0])");
    expect_err(NODES("{ db = 1; }"),
               "FILE:4: redis.nodes[0].host: missing (or sentinels and master)");
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
    REQUIRE(load_text(&c, MIN_NS
                      "redis = { nodes = ( { host = \"h\"; port = 1; tls = true; }, "
                      "{ host = \"g\"; port = 2; } );\n"
                      "  tls = { ca_file = \"/ca.pem\"; cert_file = \"/c.pem\"; "
                      "key_file = \"/k.pem\"; server_name = \"r.internal\"; }; };\n" MIN_KAFKA) ==
            0);
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
    expect_err(
        MIN_NS "redis = { nodes = ( { host = \"h\"; port = 1; } );\n"
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
    REQUIRE(
        load_text(
            &c,
            NODES("{ sentinels = ( \"10.0.1.1:26379\", \"[::1]:26380\" ); master = \"lapse-b\";\n"
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
    expect_err(
        NODES("{ sentinels = ( \"a:1\" ); master = \"m\"; host = \"h\"; port = 1; }"),
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
    expect_err(
        NODES("{ host = \"a\"; port = 1; sentinel_password = \"x\"; }"),
        "FILE:4: redis.nodes[0].sentinel_password: only for a Sentinel node (sentinels and master)");
    expect_err(NODES("{ sentinels = ( \"a:1\" ); master = \"m\"; sentinel_username = \"u\"; }"),
               "FILE:4: redis.nodes[0].sentinel_password: missing (sentinel_username needs it)");
    expect_err(
        NODES(
            "{ sentinels = ( \"a:1\" ); master = \"m\"; },\n{ sentinels = ( \"b:1\" ); master = \"m\"; }"),
        "FILE:5: redis.nodes[1]: m is listed twice (as redis.nodes[0])");
    expect_err(
        NODES(
            "{ host = \"h\"; port = 1; },\n{ sentinels = ( \"b:1\" ); master = \"m\"; was = \"h:1\"; }"),
        "FILE:5: redis.nodes[1]: h:1 is listed twice (as redis.nodes[0])");
    expect_err(NODES("{ host = \"h\"; port = 1; was = \"h:2\"; }"),
               "FILE:4: redis.nodes[0].was: only for a Sentinel node (sentinels and master)");
    expect_err(NODES("{ sentinels = ( \"b:1\" ); master = \"m\"; was = \"hhhh\"; }"),
               "FILE:4: redis.nodes[0].was: expected \"host:port\" (port 1..65535)");
#undef NODES
}

/* A Redis Cluster instead of nodes: it becomes the one node, named "cluster",
 * with the redis.cluster_* credentials. */
TEST(config_cluster)
{
#define CLUSTER(extra)                                                                \
    MIN_NS "redis = {\n  cluster = ( \"10.0.2.1:6379\", \"10.0.2.2:6380\" );\n" extra \
           "};\n" MIN_KAFKA
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
    expect_err(
        MIN_NS
        "redis = { nodes = ( { host = \"h\"; port = 1; } ); cluster_tls = true; };\n" MIN_KAFKA,
        "FILE:2: redis.cluster: missing (redis.cluster_* keys need it)");
#undef CLUSTER
}
