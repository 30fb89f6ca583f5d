/*
 * test_event — the exact bytes of the event JSON: consumers parse it, and the
 * field names and order are part of the contract ("type" first). Also checks that bytes
 * which are not UTF-8 come out readable and recoverable (base64), and that
 * JSON-special characters survive a round trip through a real parser.
 */
#include "event.h"
#include "t.h"

#include <jansson.h>
#include <stdlib.h>

#define FFFD "\xef\xbf\xbd"

/* Encodes ev and checks the output against want, length included. */
static void check_json(const struct lapse_event *ev, const char *want)
{
    size_t len = 0;
    char *got = lapse_event_encode(ev, &len);
    REQUIRE(got != NULL);
    CHECK_STR(got, want);
    CHECK(len == strlen(got));
    free(got);
}

static struct lapse_event base(void)
{
    struct lapse_event ev = {
        .ns = "demo",
        .id = "dev-42",
        .id_len = 6,
        .deadline_ms = INT64_C(1795303123000),
        .fired_ms = INT64_C(1795303123004),
        .shard = 5,
    };
    return ev;
}

TEST(event_full)
{
    struct lapse_event ev = base();
    ev.payload = "hello world";
    ev.payload_len = 11;
    check_json(
        &ev,
        "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
        "\"fired_ms\":1795303123004,\"shard\":5,\"payload\":\"hello world\"}");
}

TEST(event_without_payload)
{
    struct lapse_event ev = base();
    check_json(
        &ev,
        "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
        "\"fired_ms\":1795303123004,\"shard\":5}");
}

TEST(event_empty_payload_is_present)
{
    struct lapse_event ev = base();
    ev.payload = "";
    ev.payload_len = 0;
    check_json(
        &ev,
        "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
        "\"fired_ms\":1795303123004,\"shard\":5,\"payload\":\"\"}");
}

TEST(event_with_seq)
{
    struct lapse_event ev = base();
    ev.payload = "p";
    ev.payload_len = 1;
    ev.seq = 3;
    check_json(
        &ev,
        "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
        "\"fired_ms\":1795303123004,\"shard\":5,\"payload\":\"p\",\"seq\":3}");
    ev.payload = NULL;
    ev.seq = 1;
    check_json(
        &ev,
        "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
        "\"fired_ms\":1795303123004,\"shard\":5,\"seq\":1}");
}

/* Every fire says what it is, first: "type" is "timeout" (new 2026-11-26;
 * the contract's "recovered" events will carry their own), whatever else
 * the event holds. */
TEST(event_type_is_timeout_and_first)
{
    struct lapse_event ev = base();
    ev.payload = "{\"type\":\"recovered\"}"; /* a payload cannot pass for the type */
    ev.payload_len = strlen(ev.payload);
    ev.seq = 7;
    char *s = lapse_event_encode(&ev, NULL);
    REQUIRE(s != NULL);
    CHECK(strncmp(s, "{\"type\":\"timeout\",", 18) == 0);
    json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
    REQUIRE(j != NULL);
    CHECK_STR(json_string_value(json_object_get(j, "type")), "timeout");
    const char *first = json_object_iter_key(json_object_iter(j));
    REQUIRE(first != NULL);
    CHECK_STR(first, "type");
    json_decref(j);
    free(s);
}

TEST(event_id_is_length_delimited)
{
    struct lapse_event ev = base();
    ev.id = "dev-42-and-more";
    ev.id_len = 6;
    check_json(
        &ev,
        "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
        "\"fired_ms\":1795303123004,\"shard\":5}");
}

TEST(event_non_utf8_id)
{
    struct lapse_event ev = base();
    ev.id = "a\xff"
            "b";
    ev.id_len = 3;
    ev.shard = 0;
    check_json(&ev,
               "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"a" FFFD "b\",\"id_b64\":\"Yf9i\","
               "\"deadline_ms\":1795303123000,\"fired_ms\":1795303123004,\"shard\":0}");
}

TEST(event_valid_utf8_passes_through)
{
    struct lapse_event ev = base();
    ev.id = "caf\xc3\xa9-\xf0\x9f\x98\x80";
    ev.id_len = 10;
    check_json(&ev, "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"caf\xc3\xa9-\xf0\x9f\x98\x80\","
                    "\"deadline_ms\":1795303123000,\"fired_ms\":1795303123004,\"shard\":5}");
}

TEST(event_non_utf8_payload)
{
    /* overlong, surrogate, truncated, past U+10FFFF: each bad byte -> U+FFFD;
     * the valid emoji and é after them stay. */
    static const char p[] = "\xed\xa0\x80\xe2\x82\xf4\x90\x80\x80\xf0\x9f\x98\x80\xc3\xa9";
    struct lapse_event ev = base();
    ev.payload = p;
    ev.payload_len = sizeof p - 1;
    ev.seq = 2;
    check_json(
        &ev,
        "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
        "\"fired_ms\":1795303123004,\"shard\":5,"
        "\"payload\":\"" FFFD FFFD FFFD FFFD FFFD FFFD FFFD FFFD FFFD
        "\xf0\x9f\x98\x80\xc3\xa9\",\"payload_b64\":\"7aCA4oL0kICA8J+YgMOp\","
        "\"seq\":2}");
}

TEST(event_nul_is_replaced)
{
    struct lapse_event ev = base();
    ev.payload = "x\0y";
    ev.payload_len = 3;
    check_json(
        &ev,
        "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
        "\"fired_ms\":1795303123004,\"shard\":5,"
        "\"payload\":\"x" FFFD "y\",\"payload_b64\":\"eAB5\"}");
}

TEST(event_base64_padding)
{
    /* 1, 2 and 3 bytes: two '=', one '=', none */
    static const struct {
        const char *id;
        size_t n;
        const char *b64;
    } cases[] = {
        {"\xff", 1, "/w=="},
        {"\xff\xfe", 2, "//4="},
        {"\xc0\x80", 2, "wIA="},
        {"\xff\xfe\xfd", 3, "//79"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct lapse_event ev = base();
        ev.id = cases[i].id;
        ev.id_len = cases[i].n;
        char *s = lapse_event_encode(&ev, NULL);
        REQUIRE(s != NULL);
        json_t *j = json_loads(s, 0, NULL);
        REQUIRE(j != NULL);
        CHECK_STR(json_string_value(json_object_get(j, "id_b64")), cases[i].b64);
        CHECK(json_string_length(json_object_get(j, "id")) == 3 * cases[i].n);
        json_decref(j);
        free(s);
    }
}

TEST(event_json_special_chars_round_trip)
{
    static const char p[] = "say \"hi\"\\ back\nslash / tab\t ctl\x01 end";
    struct lapse_event ev = base();
    ev.payload = p;
    ev.payload_len = sizeof p - 1;
    size_t len;
    char *s = lapse_event_encode(&ev, &len);
    REQUIRE(s != NULL);
    CHECK_STR(
        s, "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
           "\"fired_ms\":1795303123004,\"shard\":5,"
           "\"payload\":\"say \\\"hi\\\"\\\\ back\\nslash / tab\\t ctl\\u0001 end\"}");
    CHECK(strchr(s, '\n') == NULL); /* one message, one line */

    json_error_t e;
    json_t *j = json_loadb(s, len, 0, &e);
    REQUIRE(j != NULL);
    json_t *v = json_object_get(j, "payload");
    REQUIRE(json_is_string(v));
    CHECK(json_string_length(v) == sizeof p - 1);
    CHECK(memcmp(json_string_value(v), p, sizeof p - 1) == 0);
    CHECK(json_object_get(j, "payload_b64") == NULL);
    CHECK(json_integer_value(json_object_get(j, "deadline_ms")) == INT64_C(1795303123000));
    json_decref(j);
    free(s);
}

/* lapse_event_write into a buffer reused across events (the scanner's hot
 * path): same bytes as lapse_event_encode, within lapse_event_size, and the
 * rest of jansson's escapes (\b \f \r, \u00XX in upper case, DEL verbatim). */
TEST(event_write_reused_buffer)
{
    static const char p[] = "\b\f\r\x1f\x7f\xc3\xa9";
    struct lapse_event ev = base();
    ev.payload = p;
    ev.payload_len = sizeof p - 1;
    ev.deadline_ms = INT64_MIN;
    ev.seq = INT64_MAX;
    size_t cap = lapse_event_size(&ev);
    char *buf = malloc(cap + 200); /* reused below for a shorter event */
    REQUIRE(buf != NULL);
    memset(buf, 'x', cap + 200);
    size_t n = lapse_event_write(&ev, buf);
    const char *want =
        "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":-9223372036854775808,"
        "\"fired_ms\":1795303123004,\"shard\":5,"
        "\"payload\":\"\\b\\f\\r\\u001F\x7f\xc3\xa9\",\"seq\":9223372036854775807}";
    CHECK_STR(buf, want);
    CHECK(n == strlen(want));
    size_t len;
    char *s = lapse_event_encode(&ev, &len);
    REQUIRE(s != NULL);
    CHECK(len == n && memcmp(s, buf, n + 1) == 0);
    free(s);

    /* a shorter event after a longer one: nothing of the first is left */
    ev = base();
    n = lapse_event_write(&ev, buf);
    CHECK_STR(
        buf,
        "{\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
        "\"fired_ms\":1795303123004,\"shard\":5}");
    CHECK(n == strlen(buf));
    free(buf);

    /* the size bound holds for the worst case: every byte a control byte,
     * not valid UTF-8 (NUL), so escaped, replaced and base64'd */
    char worst[300];
    memset(worst, 0, sizeof worst);
    for (size_t i = 1; i < sizeof worst; i += 2)
        worst[i] = 0x01;
    ev.id = worst;
    ev.id_len = sizeof worst;
    ev.payload = worst;
    ev.payload_len = sizeof worst;
    size_t size = lapse_event_size(&ev);
    char *big = malloc(size);
    REQUIRE(big != NULL);
    n = lapse_event_write(&ev, big);
    CHECK(n + 1 <= size);
    free(big);
}

/* A watched ID that came back (recovered_ms > 0, 2026-11-27): its own
 * fields in their fixed order, down_ms = recovered_ms - deadline_ms, no
 * payload and no seq whatever the struct holds. */
TEST(event_recovered)
{
    struct lapse_event ev = base();
    ev.payload = "ignored";
    ev.payload_len = 7;
    ev.seq = 4;
    ev.recovered_ms = INT64_C(1795303187310);
    check_json(
        &ev,
        "{\"type\":\"recovered\",\"ns\":\"demo\",\"id\":\"dev-42\",\"deadline_ms\":1795303123000,"
        "\"fired_ms\":1795303123004,\"recovered_ms\":1795303187310,\"down_ms\":64310,"
        "\"shard\":5}");
    ev.id = "d\xff";
    ev.id_len = 2;
    char *s = lapse_event_encode(&ev, NULL);
    REQUIRE(s != NULL);
    CHECK(strstr(s, "\"id_b64\":\"ZP8=\"") != NULL); /* the exact bytes, as for a timeout */
    free(s);
}
