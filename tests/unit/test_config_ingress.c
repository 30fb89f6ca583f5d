/*
 * test_config_ingress — the config's ingress group (lapse-producer
 * --from-kafka): the example, defaults, every key, and each error with its
 * exact message (config_text.h loads a text as test_config.c does).
 */
#include "config.h"
#include "config_text.h"
#include "t.h"

#include <stdlib.h>

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
    REQUIRE(
        load_text(
            &c, MIN
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
    expect_err(ING("topic = \"a/b\";"),
               "FILE:5: ingress.topic: must be 1..249 bytes of [A-Za-z0-9_.-]");
    expect_err(ING("group = \"\";"), "FILE:5: ingress.group: must be 1..255 bytes");
    expect_err(ING("dead_letter_topic = 5;"),
               "FILE:5: ingress.dead_letter_topic: expected a string");
    expect_err(ING("topic = \"t\"; grop = \"g\";"),
               "FILE:5: ingress.grop: unknown key (did you mean ingress.group?)");
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
    expect_err(
        ING("properties = ( (\"enable.auto.offset.store\", true) );"),
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
    expect_err(RULES("\"x\", { timeout_ms = 5; }"),
               "FILE:6: ingress.rules[0]: expected a group { timeout_ms = ...; }");
    expect_err(RULES("{ timeout_ms = 5; },\n{ id_prefix = \"a\"; }"),
               "FILE: ingress.rules[1].timeout_ms: missing");
    expect_err(RULES("{ timeout_ms = 0; }"),
               "FILE:6: ingress.rules[0].timeout_ms: must be 1..2147483647 (got 0)");
    expect_err(RULES("{ timeout_ms = 2147483648L; }"),
               "FILE:6: ingress.rules[0].timeout_ms: must be 1..2147483647 (got 2147483648)");
    expect_err(RULES("{ timeout_ms = \"5\"; }"),
               "FILE:6: ingress.rules[0].timeout_ms: expected an integer");
    expect_err(RULES("{ timeout_ms = 5; time = \"now\"; }"),
               "FILE:6: ingress.rules[0].time: must be one of arrival, kafka, field");
    expect_err(RULES("{ timeout_ms = 5; time = 1; }"),
               "FILE:6: ingress.rules[0].time: expected a string");
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
    expect_err(
        RULES("{ timeout_ms = 5; idprefix = \"a\"; }"),
        "FILE:6: ingress.rules[0].idprefix: unknown key (did you mean ingress.rules[0].id_prefix?)");

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
        off += (size_t)snprintf(big + off, sizeof big - off, "%s{ timeout_ms = %d; }", i ? "," : "",
                                i + 1);
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

TEST(config_ingress_metrics)
{
    struct lapse_config c;
    REQUIRE(load_text(&c, MIN
                      "ingress = { metrics_port = 9464; metrics_bind = \"0.0.0.0\"; };\n") == 0);
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
