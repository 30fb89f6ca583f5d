/*
 * test_watchdog — watchdog rules on raw signals: where the ID and the time
 * come from, first-match order, misses falling through, malformed signals
 * stopping at the rule that matched, and the exact reasons.
 */
#include "command.h"
#include "flatjson.h"
#include "watchdog.h"
#include "t.h"

#define S(x) ((char *)(x))

static char why[256];
static struct lapse_watchdog_result res;

/* A signal: key (NULL = none), value text (decoded when it is JSON), ts. */
static int apply(const struct lapse_ingress_rule *rules, size_t n, const char *key,
                 const char *value, int64_t ts, json_t **keep)
{
    char jerr[256];
    json_t *j = value ? lapse_command_load(value, strlen(value), jerr, sizeof jerr) : NULL;
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
        snprintf(jerr, sizeof jerr, "not a JSON object");
    }
    struct lapse_signal sig = {key, key ? strlen(key) : 0, j, NULL, j || !value ? NULL : jerr, ts};
    int rc = lapse_watchdog_apply(rules, n, &sig, &res, why, sizeof why);
    *keep = j;
    /* The same value read in place (flatjson.h), when it is flat: the same
     * verdict, reason and command as from the decoded tree. */
    struct lapse_flatjson flat;
    if (value && lapse_flatjson_scan(value, strlen(value), &flat) == 0) {
        char why2[sizeof why];
        struct lapse_watchdog_result res2;
        struct lapse_signal fs = {key, key ? strlen(key) : 0, NULL, &flat, NULL, ts};
        CHECK(j != NULL);
        CHECK(lapse_watchdog_apply(rules, n, &fs, &res2, why2, sizeof why2) == rc);
        CHECK(strcmp(why2, why) == 0);
        if (rc == 0) {
            CHECK(res2.cmd.op == res.cmd.op && res2.cmd.when_kind == res.cmd.when_kind &&
                  res2.cmd.when_ms == res.cmd.when_ms && res2.rule == res.rule);
            CHECK(res2.cmd.id_len == res.cmd.id_len &&
                  memcmp(res2.cmd.id, res.cmd.id, res.cmd.id_len) == 0);
        }
    }
    return rc;
}

static void expect_extend(const char *id, enum lapse_when_kind kind, int64_t ms, size_t rule)
{
    CHECK(res.cmd.op == LAPSE_OP_EXTEND);
    CHECK(res.cmd.id_len == strlen(id) && memcmp(res.cmd.id, id, res.cmd.id_len) == 0);
    CHECK(res.cmd.when_kind == kind);
    CHECK(res.cmd.when_ms == ms);
    CHECK(res.cmd.payload == NULL && res.cmd.period_ms == 0);
    CHECK(res.rule == rule);
}

static void expect_err(const struct lapse_ingress_rule *rules, size_t n, const char *key,
                       const char *value, int64_t ts, const char *want)
{
    json_t *j;
    /* -2: a rule matched a malformed signal ("rules[i]: ..."), -1: none matched */
    CHECK(apply(rules, n, key, value, ts, &j) == (strncmp(want, "rules[", 6) == 0 ? -2 : -1));
    CHECK_STR(why, want);
    json_decref(j);
}

static const struct lapse_ingress_rule sample[] = {
    {.id_field = S("device"),
     .id_prefix = S("sensor-"),
     .time_source = LAPSE_TIME_FIELD,
     .time_field = S("ts"),
     .timeout_ms = 60000},
    {.match_field = S("type"),
     .match_value = S("heartbeat"),
     .time_source = LAPSE_TIME_KAFKA,
     .timeout_ms = 30000},
    {.timeout_ms = 300000},
};
#define NSAMPLE (sizeof sample / sizeof sample[0])

TEST(watchdog_key_arrival_any_bytes)
{
    const struct lapse_ingress_rule r[] = {{.timeout_ms = 5000}};
    json_t *j;
    REQUIRE(apply(r, 1, "dev-1", "\x01\x02 binary", -1, &j) == 0);
    expect_extend("dev-1", LAPSE_WHEN_REL, 5000, 0);
    CHECK(j == NULL);
    REQUIRE(apply(r, 1, "dev-2", NULL, 77, &j) == 0); /* no value at all */
    expect_extend("dev-2", LAPSE_WHEN_REL, 5000, 0);
    /* a JSON value does not change where the ID comes from */
    REQUIRE(apply(r, 1, "dev-3", "{\"device\":\"other\"}", -1, &j) == 0);
    expect_extend("dev-3", LAPSE_WHEN_REL, 5000, 0);
    json_decref(j);
}

/* recover = true: the rule's result is a watch (recovery on), else the same */
TEST(watchdog_recover_is_watch)
{
    const struct lapse_ingress_rule r[] = {{.timeout_ms = 5000, .recover = 1}};
    json_t *j;
    REQUIRE(apply(r, 1, "dev-1", "x", -1, &j) == 0);
    CHECK(res.cmd.op == LAPSE_OP_WATCH);
    CHECK(res.cmd.when_kind == LAPSE_WHEN_REL && res.cmd.when_ms == 5000);
    json_decref(j);
}

TEST(watchdog_field_id_and_time)
{
    json_t *j;
    REQUIRE(apply(sample, NSAMPLE, NULL, "{\"device\":\"sensor-17\",\"ts\":1795303123000,\"v\":1}",
                  -1, &j) == 0);
    expect_extend("sensor-17", LAPSE_WHEN_ABS, INT64_C(1795303123000) + 60000, 0);
    CHECK(res.cmd.id == json_string_value(json_object_get(j, "device"))); /* points into the JSON */
    json_decref(j);
}

TEST(watchdog_integer_id)
{
    const struct lapse_ingress_rule r[] = {{.id_field = S("dev"), .timeout_ms = 1}};
    json_t *j;
    REQUIRE(apply(r, 1, "key", "{\"dev\": 9007199254740993}", -1, &j) == 0);
    expect_extend("9007199254740993", LAPSE_WHEN_REL, 1, 0);
    CHECK(res.cmd.id == res.idbuf);
    json_decref(j);
    REQUIRE(apply(r, 1, NULL, "{\"dev\": -5}", -1, &j) == 0);
    expect_extend("-5", LAPSE_WHEN_REL, 1, 0);
    json_decref(j);
}

TEST(watchdog_first_match_wins_and_fall_through)
{
    json_t *j;
    /* prefix misses: rule 1 by its match, Kafka time */
    REQUIRE(apply(sample, NSAMPLE, "pump-3",
                  "{\"device\":\"pump-3\",\"type\":\"heartbeat\",\"ts\":1}", 1000, &j) == 0);
    expect_extend("pump-3", LAPSE_WHEN_ABS, 31000, 1);
    json_decref(j);
    /* both 0 and 2 would match: 0 wins */
    REQUIRE(apply(sample, NSAMPLE, "k", "{\"device\":\"sensor-1\",\"ts\":5}", 1000, &j) == 0);
    expect_extend("sensor-1", LAPSE_WHEN_ABS, 60005, 0);
    json_decref(j);
    /* rule 0's time field missing: not its signal; rule 1's match fails; the default */
    REQUIRE(apply(sample, NSAMPLE, "sensor-9", "{\"device\":\"sensor-9\",\"type\":\"data\"}", 1000,
                  &j) == 0);
    expect_extend("sensor-9", LAPSE_WHEN_REL, 300000, 2);
    json_decref(j);
    /* rule 1 without a Kafka timestamp misses */
    REQUIRE(apply(sample, NSAMPLE, "x", "{\"type\":\"heartbeat\"}", -1, &j) == 0);
    expect_extend("x", LAPSE_WHEN_REL, 300000, 2);
    json_decref(j);
    /* null counts as missing */
    REQUIRE(apply(sample, NSAMPLE, "y", "{\"device\":null,\"type\":null,\"ts\":null}", 4, &j) == 0);
    expect_extend("y", LAPSE_WHEN_REL, 300000, 2);
    json_decref(j);
}

TEST(watchdog_match_values)
{
    const struct lapse_ingress_rule r[] = {
        {.match_field = S("n"), .match_value = S("3"), .timeout_ms = 1},
        {.match_field = S("b"), .match_value = S("true"), .timeout_ms = 2},
        {.match_field = S("s"), .match_value = S(""), .timeout_ms = 3},
        {.match_field = S("s"), .match_value = S("a"), .timeout_ms = 4},
    };
    json_t *j;
    REQUIRE(apply(r, 4, "k", "{\"n\":3}", -1, &j) == 0);
    CHECK(res.rule == 0);
    json_decref(j);
    REQUIRE(apply(r, 4, "k", "{\"n\":\"3\"}", -1, &j) == 0); /* the string "3" equals too */
    CHECK(res.rule == 0);
    json_decref(j);
    REQUIRE(apply(r, 4, "k", "{\"n\":3.0,\"b\":true}", -1, &j) == 0); /* reals never match */
    CHECK(res.rule == 1);
    json_decref(j);
    REQUIRE(apply(r, 4, "k", "{\"b\":false,\"s\":\"\"}", -1, &j) == 0);
    CHECK(res.rule == 2);
    json_decref(j);
    REQUIRE(apply(r, 4, "k", "{\"s\":\"a\"}", -1, &j) == 0);
    CHECK(res.rule == 3);
    json_decref(j);
    /* a NUL inside the string is not cut off */
    expect_err(r + 3, 1, "k", "{\"s\":\"a\\u0000\"}", -1,
               "no watchdog rule matches (rules[0]: field \"s\" is not \"a\")");
    expect_err(r + 1, 1, "k", "{\"b\":\"tru\"}", -1,
               "no watchdog rule matches (rules[0]: field \"b\" is not \"true\")");
}

TEST(watchdog_no_rule_matches)
{
    expect_err(sample, NSAMPLE, NULL, "{\"device\":\"pump-1\",\"type\":\"x\"}", 5,
               "no watchdog rule matches (rules[0]: ID \"pump-1\" lacks prefix \"sensor-\"; "
               "rules[1]: no message key; rules[2]: no message key)");
    expect_err(sample, NSAMPLE, "", "{\"type\":\"heartbeat\"}", 5,
               "no watchdog rule matches (rules[0]: no field \"device\"; rules[1]: no message key; "
               "rules[2]: no message key)");
    expect_err(sample, 2, "k", "not json", 5,
               "no watchdog rule matches (rules[0]: value is not a JSON object; rules[1]: value is "
               "not a JSON object); value: invalid JSON: '[' or '{' expected near 'not' at byte 3");
    expect_err(sample, 2, "k", "[1]", 5,
               "no watchdog rule matches (rules[0]: value is not a JSON object; rules[1]: value is "
               "not a JSON object); value: not a JSON object");
    expect_err(sample, 0, "k", "{\"a\":1}", 5,
               "not a command, and no watchdog rules are configured");
    expect_err(
        sample, 0, "k", "x", 5,
        "not a command, and no watchdog rules are configured; value: invalid JSON: '[' or '{' "
        "expected near 'x' at byte 1");
    /* IDs in reasons are quoted */
    const struct lapse_ingress_rule p[] = {{.id_prefix = S("a"), .timeout_ms = 1}};
    expect_err(p, 1, "b\"\x01", NULL, -1,
               "no watchdog rule matches (rules[0]: ID \"b\\\"\\x01\" lacks prefix \"a\")");
    /* a key shorter than the prefix */
    const struct lapse_ingress_rule p2[] = {{.id_prefix = S("sensor-"), .timeout_ms = 1}};
    expect_err(p2, 1, "sen", NULL, -1,
               "no watchdog rule matches (rules[0]: ID \"sen\" lacks prefix \"sensor-\")");
}

TEST(watchdog_bad_signals)
{
    /* time field present but wrong: an error, not the default rule */
    expect_err(sample, NSAMPLE, "k", "{\"device\":\"sensor-1\",\"ts\":\"1795303123000\"}", 5,
               "rules[0]: field \"ts\": expected a non-negative integer (unix ms)");
    expect_err(sample, NSAMPLE, "k", "{\"device\":\"sensor-1\",\"ts\":-1}", 5,
               "rules[0]: field \"ts\": expected a non-negative integer (unix ms)");
    expect_err(sample, NSAMPLE, "k", "{\"device\":\"sensor-1\",\"ts\":1.5}", 5,
               "rules[0]: field \"ts\": expected a non-negative integer (unix ms)");
    expect_err(sample, NSAMPLE, "k", "{\"device\":\"sensor-1\",\"ts\":8639999999990000}", 5,
               "rules[0]: the time field + timeout_ms is past 8640000000000000 ms");
    const struct lapse_ingress_rule kr[] = {{.time_source = LAPSE_TIME_KAFKA, .timeout_ms = 2}};
    expect_err(kr, 1, "k", NULL, INT64_C(8639999999999999),
               "rules[0]: the Kafka timestamp + timeout_ms is past 8640000000000000 ms");
    json_t *j;
    REQUIRE(apply(kr, 1, "k", NULL, INT64_C(8639999999999998), &j) == 0); /* exactly the max */
    expect_extend("k", LAPSE_WHEN_ABS, LAPSE_WHEN_MAX, 0);
    REQUIRE(apply(kr, 1, "k", NULL, 0, &j) == 0); /* epoch 0 is a timestamp */
    expect_extend("k", LAPSE_WHEN_ABS, 2, 0);

    /* IDs */
    const struct lapse_ingress_rule fr[] = {{.id_field = S("dev"), .timeout_ms = 1},
                                            {.timeout_ms = 2}};
    expect_err(fr, 2, "k", "{\"dev\":true}", -1,
               "rules[0]: field \"dev\": expected a string or integer ID");
    expect_err(fr, 2, "k", "{\"dev\":{\"a\":1}}", -1,
               "rules[0]: field \"dev\": expected a string or integer ID");
    expect_err(fr, 2, "k", "{\"dev\":\"\"}", -1,
               "rules[0]: field \"dev\": ID must be 1..512 bytes (got 0)");
    expect_err(fr, 2, "k", "{\"dev\":\"a b\"}", -1,
               "rules[0]: field \"dev\": ID contains a space at offset 1");
    expect_err(fr + 1, 1, "tab\there", NULL, -1,
               "rules[0]: message key: ID contains control byte 0x09 at offset 3");
    char key[LAPSE_ID_MAX + 2];
    memset(key, 'k', sizeof key - 1);
    key[LAPSE_ID_MAX + 1] = '\0';
    expect_err(fr + 1, 1, key, NULL, -1,
               "rules[0]: message key: ID must be 1..512 bytes (got 513)");
    key[LAPSE_ID_MAX] = '\0';
    REQUIRE(apply(fr + 1, 1, key, NULL, -1, &j) == 0);
    CHECK(res.cmd.id_len == LAPSE_ID_MAX);
}

TEST(watchdog_reason_is_cut)
{
    struct lapse_ingress_rule many[40];
    for (size_t i = 0; i < 40; i++)
        many[i] = (struct lapse_ingress_rule){.id_field = S("device"), .timeout_ms = 1};
    char jerr[8];
    json_t *j = lapse_command_load("{}", 2, jerr, sizeof jerr);
    struct lapse_signal sig = {NULL, 0, j, NULL, NULL, -1};
    char small[64];
    memset(small, 'x', sizeof small);
    CHECK(lapse_watchdog_apply(many, 40, &sig, &res, small, 40) == -1);
    CHECK(strlen(small) == 39 && small[40] == 'x');
    CHECK(strcmp(small + 36, "...") == 0);
    CHECK(strncmp(small, "no watchdog rule matches (rules[0]: no", 36) == 0);
    static char big[4096];
    CHECK(lapse_watchdog_apply(many, 40, &sig, &res, big, sizeof big) == -1);
    CHECK(strlen(big) < sizeof big);
    CHECK(strstr(big, "...") != NULL); /* the misses are cut at their own limit */
    CHECK(lapse_watchdog_apply(many, 40, &sig, &res, NULL, 0) == -1);
    json_decref(j);
}
