/*
 * test_command — the ingress command messages: every accepted shape, and
 * every error path with its exact reason, so an operator reading a
 * dead-letter header sees what these tests see.
 */
#include "command.h"
#include "flatjson.h"
#include "t.h"

#include <stdlib.h>

static char why[256];

/* Loads and parses `text`; returns lapse_command_from_json's result, the
 * reason in `why`. *keep receives the JSON (the command points into it). */
static int parse_keep(const char *text, size_t len, struct lapse_cmd *cmd, json_t **keep)
{
    why[0] = '\0';
    json_t *j = lapse_command_load(text, len, why, sizeof why);
    REQUIRE(j != NULL);
    CHECK(lapse_command_is(j));
    int rc = lapse_command_from_json(j, cmd, why, sizeof why);
    *keep = j;
    /* The same text read in place (flatjson.h), when it is flat: the same
     * verdict, reason and command. */
    struct lapse_flatjson flat;
    if (lapse_flatjson_scan(text, len, &flat) == 0) {
        char why2[sizeof why] = "";
        struct lapse_cmd c2;
        CHECK(lapse_command_is_flat(&flat));
        CHECK(lapse_command_from_flat(&flat, &c2, why2, sizeof why2) == rc);
        CHECK(strcmp(why2, why) == 0);
        if (rc == 0)
            CHECK(c2.op == cmd->op && c2.id_len == cmd->id_len &&
                  memcmp(c2.id, cmd->id, c2.id_len) == 0 && c2.when_kind == cmd->when_kind &&
                  c2.when_ms == cmd->when_ms && c2.period_ms == cmd->period_ms &&
                  c2.payload_len == cmd->payload_len &&
                  (c2.payload == NULL) == (cmd->payload == NULL) &&
                  (!c2.payload || memcmp(c2.payload, cmd->payload, c2.payload_len) == 0));
    }
    return rc;
}

static int parse(const char *text, struct lapse_cmd *cmd, json_t **keep)
{
    return parse_keep(text, strlen(text), cmd, keep);
}

static void expect_err(const char *text, const char *want)
{
    struct lapse_cmd cmd;
    json_t *j;
    CHECK(parse(text, &cmd, &j) == -1);
    CHECK_STR(why, want);
    json_decref(j);
}

TEST(command_touch_in_ms)
{
    struct lapse_cmd c;
    json_t *j;
    REQUIRE(parse("{\"op\":\"touch\",\"id\":\"dev-42\",\"in_ms\":60000}", &c, &j) == 0);
    CHECK(c.op == LAPSE_OP_TOUCH);
    CHECK(c.id_len == 6 && memcmp(c.id, "dev-42", 6) == 0);
    CHECK(c.when_kind == LAPSE_WHEN_REL && c.when_ms == 60000);
    CHECK(c.payload == NULL && c.payload_len == 0);
    CHECK(c.period_ms == 0);
    json_decref(j);
}

TEST(command_extend_at_ms_payload)
{
    struct lapse_cmd c;
    json_t *j;
    REQUIRE(parse("{\"payload\": \"{\\\"k\\\": 1} sp  aces\", \"at_ms\": 1795303123000,"
                  " \"id\": \"order:17\", \"op\": \"extend\"}",
                  &c, &j) == 0);
    CHECK(c.op == LAPSE_OP_EXTEND);
    CHECK(c.id_len == 8 && memcmp(c.id, "order:17", 8) == 0);
    CHECK(c.when_kind == LAPSE_WHEN_ABS && c.when_ms == INT64_C(1795303123000));
    REQUIRE(c.payload != NULL);
    CHECK(c.payload_len == 17 && memcmp(c.payload, "{\"k\": 1} sp  aces", 17) == 0);
    /* the command points into the JSON object */
    CHECK(c.id == json_string_value(json_object_get(j, "id")));
    json_decref(j);
}

TEST(command_repeat_and_cancel)
{
    struct lapse_cmd c;
    json_t *j;
    REQUIRE(parse("{\"op\":\"repeat\",\"id\":\"r\",\"in_ms\":0,\"period_ms\":1}", &c, &j) == 0);
    CHECK(c.op == LAPSE_OP_REPEAT && c.when_kind == LAPSE_WHEN_REL && c.when_ms == 0);
    CHECK(c.period_ms == 1);
    json_decref(j);
    REQUIRE(parse("{\"op\":\"repeat\",\"id\":\"r\",\"at_ms\":8640000000000000,"
                  "\"period_ms\":8640000000000000,\"payload\":\"\"}",
                  &c, &j) == 0);
    CHECK(c.when_kind == LAPSE_WHEN_ABS && c.when_ms == LAPSE_WHEN_MAX);
    CHECK(c.period_ms == LAPSE_WHEN_MAX);
    CHECK(c.payload != NULL && c.payload_len == 0); /* empty, not absent */
    json_decref(j);
    REQUIRE(parse("{\"op\":\"cancel\",\"id\":\"x\"}", &c, &j) == 0);
    CHECK(c.op == LAPSE_OP_CANCEL && c.when_kind == LAPSE_WHEN_NONE && c.payload == NULL);
    json_decref(j);
}

TEST(command_watch)
{
    struct lapse_cmd c;
    json_t *j;
    REQUIRE(parse("{\"op\":\"watch\",\"id\":\"dev-7\",\"in_ms\":60000}", &c, &j) == 0);
    CHECK(c.op == LAPSE_OP_WATCH && c.when_kind == LAPSE_WHEN_REL && c.when_ms == 60000);
    json_decref(j);
}

TEST(command_null_is_absent_unknown_ignored)
{
    struct lapse_cmd c;
    json_t *j;
    REQUIRE(parse("{\"op\":\"touch\",\"id\":\"a\",\"in_ms\":5,\"at_ms\":null,\"payload\":null,"
                  "\"period_ms\":null,\"trace\":{\"x\":[1,2]},\"v\":2}",
                  &c, &j) == 0);
    CHECK(c.when_kind == LAPSE_WHEN_REL && c.when_ms == 5 && c.payload == NULL);
    json_decref(j);
    REQUIRE(parse("{\"op\":\"cancel\",\"id\":\"a\",\"in_ms\":null,\"payload\":null}", &c, &j) == 0);
    json_decref(j);
}

TEST(command_id_and_payload_limits)
{
    struct lapse_cmd c;
    json_t *j;
    static char text[200000];
    char id[LAPSE_ID_MAX + 2];
    memset(id, 'i', sizeof id - 1);
    id[LAPSE_ID_MAX] = '\0';
    snprintf(text, sizeof text, "{\"op\":\"touch\",\"id\":\"%s\",\"in_ms\":1}", id);
    REQUIRE(parse(text, &c, &j) == 0);
    CHECK(c.id_len == LAPSE_ID_MAX);
    json_decref(j);
    id[LAPSE_ID_MAX] = 'i';
    id[LAPSE_ID_MAX + 1] = '\0';
    snprintf(text, sizeof text, "{\"op\":\"touch\",\"id\":\"%s\",\"in_ms\":1}", id);
    expect_err(text, "field \"id\": must be 1..512 bytes (got 513)");

    /* UTF-8 bytes count as bytes: 256 two-byte characters fit, 257 do not */
    size_t off = (size_t)snprintf(text, sizeof text, "{\"op\":\"touch\",\"in_ms\":1,\"id\":\"");
    for (int i = 0; i < 256; i++)
        off += (size_t)snprintf(text + off, sizeof text - off, "\xc3\xa9");
    snprintf(text + off, sizeof text - off, "\"}");
    REQUIRE(parse(text, &c, &j) == 0);
    CHECK(c.id_len == 512 && (unsigned char)c.id[0] == 0xc3);
    json_decref(j);
    snprintf(text + off, sizeof text - off, "\\u00e9\"}");
    expect_err(text, "field \"id\": must be 1..512 bytes (got 514)");

    off = (size_t)snprintf(text, sizeof text,
                           "{\"op\":\"touch\",\"id\":\"p\",\"in_ms\":1,\"payload\":\"");
    memset(text + off, 'y', LAPSE_PAYLOAD_MAX);
    snprintf(text + off + LAPSE_PAYLOAD_MAX, sizeof text - off - LAPSE_PAYLOAD_MAX, "\"}");
    REQUIRE(parse(text, &c, &j) == 0);
    CHECK(c.payload_len == LAPSE_PAYLOAD_MAX);
    json_decref(j);
    snprintf(text + off + LAPSE_PAYLOAD_MAX, sizeof text - off - LAPSE_PAYLOAD_MAX, "y\"}");
    expect_err(text, "field \"payload\": longer than 65536 bytes (got 65537)");
}

TEST(command_payload_nul_bytes)
{
    struct lapse_cmd c;
    json_t *j;
    REQUIRE(parse("{\"op\":\"touch\",\"id\":\"n\",\"in_ms\":1,\"payload\":\"a\\u0000b\"}", &c,
                  &j) == 0);
    CHECK(c.payload_len == 3 && memcmp(c.payload, "a\0b", 3) == 0);
    json_decref(j);
    expect_err("{\"op\":\"touch\",\"id\":\"a\\u0000b\",\"in_ms\":1}",
               "field \"id\": contains control byte 0x00 at offset 1");
}

TEST(command_op_errors)
{
    expect_err("{\"op\":5,\"id\":\"a\",\"in_ms\":1}", "field \"op\": expected a string");
    expect_err("{\"op\":[\"touch\"],\"id\":\"a\",\"in_ms\":1}", "field \"op\": expected a string");
    expect_err(
        "{\"op\":\"frob\",\"id\":\"a\",\"in_ms\":1}",
        "field \"op\": unknown operation \"frob\" (expected touch, extend, repeat, cancel or watch)");
    expect_err(
        "{\"op\":\"TOUCH\",\"id\":\"a\",\"in_ms\":1}",
        "field \"op\": unknown operation \"TOUCH\" (expected touch, extend, repeat, cancel or watch)");
    expect_err(
        "{\"op\":\"\",\"id\":\"a\"}",
        "field \"op\": unknown operation \"\" (expected touch, extend, repeat, cancel or watch)");
    /* untrusted bytes are escaped and cut */
    expect_err("{\"op\":\"to\\tuch\\\"\\u0000\",\"id\":\"a\",\"in_ms\":1}",
               "field \"op\": unknown operation \"to\\x09uch\\\"\\x00\" (expected touch, extend, "
               "repeat, cancel or watch)");
    expect_err("{\"op\":\"touchtouchtouchtouchtouchtouchtouchtouchtouch\"}",
               "field \"op\": unknown operation \"touchtouchtouchtouchtouchtouchtouchtouch...\" "
               "(expected touch, extend, repeat, cancel or watch)");
    /* a NUL-terminated prefix is not the op */
    expect_err(
        "{\"op\":\"touch\\u0000x\",\"id\":\"a\",\"in_ms\":1}",
        "field \"op\": unknown operation \"touch\\x00x\" (expected touch, extend, repeat, cancel or watch)");
}

TEST(command_id_errors)
{
    expect_err("{\"op\":\"touch\",\"in_ms\":1}", "field \"id\": missing");
    expect_err("{\"op\":\"touch\",\"id\":null,\"in_ms\":1}", "field \"id\": missing");
    expect_err("{\"op\":\"touch\",\"id\":42,\"in_ms\":1}", "field \"id\": expected a string");
    expect_err("{\"op\":\"touch\",\"id\":\"\",\"in_ms\":1}",
               "field \"id\": must be 1..512 bytes (got 0)");
    expect_err("{\"op\":\"touch\",\"id\":\"a b\",\"in_ms\":1}",
               "field \"id\": contains a space at offset 1");
    expect_err("{\"op\":\"touch\",\"id\":\"tab\\there\",\"in_ms\":1}",
               "field \"id\": contains control byte 0x09 at offset 3");
    expect_err("{\"op\":\"cancel\",\"id\":\"del\\u007f\"}",
               "field \"id\": contains control byte 0x7f at offset 3");
}

TEST(command_time_errors)
{
    expect_err("{\"op\":\"touch\",\"id\":\"a\"}", "touch needs field \"in_ms\" or \"at_ms\"");
    expect_err("{\"op\":\"extend\",\"id\":\"a\",\"in_ms\":null}",
               "extend needs field \"in_ms\" or \"at_ms\"");
    expect_err("{\"op\":\"repeat\",\"id\":\"a\",\"period_ms\":5}",
               "repeat needs field \"in_ms\" or \"at_ms\"");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"in_ms\":1,\"at_ms\":2}",
               "fields \"in_ms\" and \"at_ms\": give only one");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"in_ms\":-1}",
               "field \"in_ms\": expected a non-negative integer");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"in_ms\":1.0}",
               "field \"in_ms\": expected a non-negative integer");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"in_ms\":1e3}",
               "field \"in_ms\": expected a non-negative integer");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"in_ms\":\"5\"}",
               "field \"in_ms\": expected a non-negative integer");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"at_ms\":true}",
               "field \"at_ms\": expected a non-negative integer");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"at_ms\":{}}",
               "field \"at_ms\": expected a non-negative integer");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"at_ms\":8640000000000001}",
               "field \"at_ms\": out of range (max 8640000000000000 ms)");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"in_ms\":9223372036854775807}",
               "field \"in_ms\": out of range (max 8640000000000000 ms)");
    expect_err("{\"op\":\"cancel\",\"id\":\"a\",\"in_ms\":1}",
               "field \"in_ms\": not allowed with cancel");
    expect_err("{\"op\":\"cancel\",\"id\":\"a\",\"at_ms\":1}",
               "field \"at_ms\": not allowed with cancel");
}

TEST(command_period_payload_errors)
{
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"in_ms\":1,\"period_ms\":5}",
               "field \"period_ms\": only for repeat");
    expect_err("{\"op\":\"cancel\",\"id\":\"a\",\"period_ms\":5}",
               "field \"period_ms\": only for repeat");
    expect_err("{\"op\":\"repeat\",\"id\":\"a\",\"in_ms\":1}",
               "field \"period_ms\": missing (repeat needs it)");
    expect_err("{\"op\":\"repeat\",\"id\":\"a\",\"in_ms\":1,\"period_ms\":0}",
               "field \"period_ms\": expected an integer >= 1");
    expect_err("{\"op\":\"repeat\",\"id\":\"a\",\"in_ms\":1,\"period_ms\":2.5}",
               "field \"period_ms\": expected an integer >= 1");
    expect_err("{\"op\":\"repeat\",\"id\":\"a\",\"in_ms\":1,\"period_ms\":8640000000000001}",
               "field \"period_ms\": out of range (max 8640000000000000 ms)");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"in_ms\":1,\"payload\":{\"k\":1}}",
               "field \"payload\": expected a string");
    expect_err("{\"op\":\"touch\",\"id\":\"a\",\"in_ms\":1,\"payload\":5}",
               "field \"payload\": expected a string");
    expect_err("{\"op\":\"cancel\",\"id\":\"a\",\"payload\":\"p\"}",
               "field \"payload\": not allowed with cancel");
    /* the first problem in field order wins */
    expect_err("{\"payload\":5,\"in_ms\":-1,\"id\":\"\",\"op\":\"touch\"}",
               "field \"id\": must be 1..512 bytes (got 0)");
}

TEST(command_load_and_is)
{
    char e[256];
    json_t *j;
    CHECK(lapse_command_load("not json", 8, e, sizeof e) == NULL);
    CHECK(strncmp(e, "invalid JSON: ", 14) == 0);
    CHECK(strstr(e, " at byte ") != NULL);
    CHECK(lapse_command_load("{\"op\":\"touch\"} x", 16, e, sizeof e) == NULL);
    CHECK(strstr(e, "invalid JSON: end of file expected") == e);
    CHECK(lapse_command_load("{\"op\":\"touch\",\"op\":\"cancel\"}", 28, e, sizeof e) == NULL);
    CHECK(strstr(e, "duplicate object key") != NULL);
    CHECK(lapse_command_load("{\"in_ms\":99999999999999999999}", 30, e, sizeof e) == NULL);
    CHECK(strstr(e, "too big integer") != NULL);
    CHECK(lapse_command_load("", 0, e, sizeof e) == NULL);
    CHECK(lapse_command_load("42", 2, e, sizeof e) == NULL); /* scalars are not messages */
    /* a message's raw bytes in jansson's text are made printable */
    CHECK(lapse_command_load("\x01\x02\xff", 3, e, sizeof e) == NULL);
    for (const char *p = e; *p; p++)
        CHECK(*p >= 0x20 && *p < 0x7f);
    /* only the given bytes are read */
    REQUIRE((j = lapse_command_load("{\"op\":\"cancel\"}garbage", 15, e, sizeof e)) != NULL);
    CHECK(lapse_command_is(j));
    json_decref(j);

    REQUIRE((j = lapse_command_load("{\"device\":\"d\",\"ts\":1}", 21, e, sizeof e)) != NULL);
    CHECK(!lapse_command_is(j));
    json_decref(j);
    REQUIRE((j = lapse_command_load("{\"op\":null,\"id\":\"d\"}", 20, e, sizeof e)) != NULL);
    CHECK(!lapse_command_is(j)); /* null is absent */
    json_decref(j);
    REQUIRE((j = lapse_command_load("[{\"op\":\"touch\"}]", 16, e, sizeof e)) != NULL);
    CHECK(!lapse_command_is(j));
    struct lapse_cmd c;
    CHECK(lapse_command_from_json(j, &c, e, sizeof e) == -1);
    CHECK_STR(e, "expected a JSON object");
    json_decref(j);
    CHECK(!lapse_command_is(NULL));

    /* from_json on an object without op (the caller did not check) */
    REQUIRE((j = lapse_command_load("{\"id\":\"a\"}", 10, e, sizeof e)) != NULL);
    CHECK(lapse_command_from_json(j, &c, e, sizeof e) == -1);
    CHECK_STR(e, "field \"op\": missing");
    json_decref(j);
}

TEST(command_errstr_bounds)
{
    char e[16];
    memset(e, 'x', sizeof e);
    json_t *j = lapse_command_load("{\"op\":\"frob\"}", 13, NULL, 0);
    REQUIRE(j != NULL);
    struct lapse_cmd c;
    CHECK(lapse_command_from_json(j, &c, e, 8) == -1);
    CHECK(strlen(e) == 7 && e[8] == 'x');
    CHECK(lapse_command_from_json(j, &c, NULL, 0) == -1);
    json_decref(j);
    CHECK(lapse_command_load("x", 1, NULL, 0) == NULL);
}

TEST(command_quote)
{
    char q[LAPSE_QUOTE_MAX + 4];
    lapse_command_quote(q, "", 0);
    CHECK_STR(q, "");
    lapse_command_quote(q, "a\"b\\c\x7f\xc3\xa9", 8);
    CHECK_STR(q, "a\\\"b\\\\c\\x7f\\xc3\\xa9");
    char long_in[100];
    memset(long_in, '\x01', sizeof long_in);
    lapse_command_quote(q, long_in, sizeof long_in);
    CHECK_STR(q, "\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01...");
    CHECK(strlen(q) <= LAPSE_QUOTE_MAX + 3);
}
