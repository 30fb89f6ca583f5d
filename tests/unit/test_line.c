/*
 * test_line — the producer line protocol, byte by byte: every command, both
 * time forms, the payload's edges, the id's limits, and the exact error text,
 * since users read it on stderr and scripts may match it. Lines are passed
 * with an explicit length so NUL bytes can sit inside them.
 */
#include "line.h"
#include "t.h"

#include <stdlib.h>

static struct lapse_cmd cmd;
static char err[128];

/* Parses the `n` bytes of s; err is cleared first so a stale message can't
 * make an error check pass. */
static enum lapse_line_result parse_n(const char *s, size_t n)
{
    err[0] = '\0';
    memset(&cmd, 0xa5, sizeof cmd);
    return lapse_line_parse(s, n, &cmd, err, sizeof err);
}

static enum lapse_line_result parse(const char *s)
{
    return parse_n(s, strlen(s));
}

/* 1 when the payload is exactly the n bytes of want. */
static int payload_is(const char *want, size_t n)
{
    return cmd.payload != NULL && cmd.payload_len == n && memcmp(cmd.payload, want, n) == 0;
}

static int id_is(const char *want)
{
    return cmd.id_len == strlen(want) && memcmp(cmd.id, want, cmd.id_len) == 0;
}

/* Error lines the caller expects, checked together. */
#define CHECK_ERR(line, want)                   \
    do {                                        \
        CHECK(parse(line) == LAPSE_LINE_ERROR); \
        CHECK_STR(err, want);                   \
    } while (0)

TEST(line_touch_relative)
{
    const char *s = "touch dev-42 +30000";
    REQUIRE(parse(s) == LAPSE_LINE_OK);
    CHECK(cmd.op == LAPSE_OP_TOUCH);
    CHECK(cmd.id == s + 6); /* points into the line, nothing copied */
    CHECK(id_is("dev-42"));
    CHECK(cmd.when_kind == LAPSE_WHEN_REL);
    CHECK(cmd.when_ms == 30000);
    CHECK(cmd.payload == NULL);
    CHECK(cmd.payload_len == 0);
    CHECK(err[0] == '\0');
}

TEST(line_touch_absolute_with_payload)
{
    REQUIRE(parse("touch dev-42 @1795303123000 {\"a\": 1}") == LAPSE_LINE_OK);
    CHECK(cmd.when_kind == LAPSE_WHEN_ABS);
    CHECK(cmd.when_ms == INT64_C(1795303123000));
    CHECK(payload_is("{\"a\": 1}", 8));
}

TEST(line_extend)
{
    REQUIRE(parse("extend x @0") == LAPSE_LINE_OK);
    CHECK(cmd.op == LAPSE_OP_EXTEND);
    CHECK(id_is("x"));
    CHECK(cmd.when_kind == LAPSE_WHEN_ABS);
    CHECK(cmd.when_ms == 0);
    CHECK(cmd.payload == NULL);
}

/* watch: an extend with recovery on, the same fields (2026-11-27) */
TEST(line_watch)
{
    REQUIRE(parse("watch dev-7 +60000 last seen at gate 3") == LAPSE_LINE_OK);
    CHECK(cmd.op == LAPSE_OP_WATCH);
    CHECK(id_is("dev-7"));
    CHECK(cmd.when_kind == LAPSE_WHEN_REL && cmd.when_ms == 60000);
    CHECK(payload_is("last seen at gate 3", 19));
    CHECK_STR(lapse_op_name(LAPSE_OP_WATCH), "watch");
    CHECK(lapse_cmd_check(&cmd, err, sizeof err) == 0);
    CHECK_ERR("watch dev-7", "watch needs <id> <when>");
}

TEST(line_repeat)
{
    REQUIRE(parse("repeat hb +0 1000") == LAPSE_LINE_OK);
    CHECK(cmd.op == LAPSE_OP_REPEAT);
    CHECK(id_is("hb"));
    CHECK(cmd.when_kind == LAPSE_WHEN_REL);
    CHECK(cmd.when_ms == 0);
    CHECK(cmd.period_ms == 1000);
    CHECK(cmd.payload == NULL);

    REQUIRE(parse("repeat hb @5 1 ping pong") == LAPSE_LINE_OK);
    CHECK(cmd.period_ms == 1);
    CHECK(payload_is("ping pong", 9));
}

TEST(line_cancel)
{
    REQUIRE(parse("cancel dev-42") == LAPSE_LINE_OK);
    CHECK(cmd.op == LAPSE_OP_CANCEL);
    CHECK(id_is("dev-42"));
    CHECK(cmd.when_kind == LAPSE_WHEN_NONE);
    CHECK(cmd.payload == NULL);

    CHECK(parse("cancel dev-42   ") == LAPSE_LINE_OK);
    CHECK(parse("cancel dev-42\r") == LAPSE_LINE_OK);
    CHECK(id_is("dev-42"));
}

TEST(line_cancel_extra_field)
{
    CHECK_ERR("cancel dev-42 +5", "cancel takes only an id");
    CHECK_ERR("cancel dev-42 \t", "cancel takes only an id");
}

TEST(line_op_names)
{
    CHECK_STR(lapse_op_name(LAPSE_OP_TOUCH), "touch");
    CHECK_STR(lapse_op_name(LAPSE_OP_EXTEND), "extend");
    CHECK_STR(lapse_op_name(LAPSE_OP_REPEAT), "repeat");
    CHECK_STR(lapse_op_name(LAPSE_OP_CANCEL), "cancel");
}

TEST(line_spaces_between_fields)
{
    REQUIRE(parse("  touch   a    +1     hello") == LAPSE_LINE_OK);
    CHECK(id_is("a"));
    CHECK(cmd.when_ms == 1);
    CHECK(payload_is("hello", 5));
}

TEST(line_payload_keeps_inner_and_trailing_spaces)
{
    REQUIRE(parse("touch a +1 hello   big  world ") == LAPSE_LINE_OK);
    CHECK(payload_is("hello   big  world ", 19));
}

/* The contract's "everything after the spaces that follow the last field"
 * (docs/protocol.md, lapse-producer(1)): leading spaces are separators, so a payload
 * cannot begin with one here; inner and trailing spaces are payload. */
TEST(line_payload_leading_spaces_are_separators)
{
    REQUIRE(parse("touch a +1    x  y ") == LAPSE_LINE_OK);
    CHECK(payload_is("x  y ", 5));
    REQUIRE(parse("extend a @7 \t x ") == LAPSE_LINE_OK);
    CHECK(payload_is("\t x ", 4));
    REQUIRE(parse("repeat a +1 5  {\"k\": 1}  ") == LAPSE_LINE_OK);
    CHECK(payload_is("{\"k\": 1}  ", 10));
}

TEST(line_trailing_spaces_are_no_payload)
{
    REQUIRE(parse("touch a +1     ") == LAPSE_LINE_OK);
    CHECK(cmd.payload == NULL);
    REQUIRE(parse("repeat a +1 7   \r") == LAPSE_LINE_OK);
    CHECK(cmd.period_ms == 7);
    CHECK(cmd.payload == NULL);
}

TEST(line_trailing_cr_dropped)
{
    REQUIRE(parse("touch a +1 data\r") == LAPSE_LINE_OK);
    CHECK(payload_is("data", 4));
    REQUIRE(parse("touch a +1\r") == LAPSE_LINE_OK);
    CHECK(cmd.when_ms == 1);
    CHECK(cmd.payload == NULL);
    /* only one \r is the line end; an earlier one is payload */
    REQUIRE(parse("touch a +1 x\r\r") == LAPSE_LINE_OK);
    CHECK(payload_is("x\r", 2));
}

TEST(line_payload_control_bytes)
{
    static const char s[] = "touch a +1 t\tab\0nul\x01\x7f\xff end";
    REQUIRE(parse_n(s, sizeof s - 1) == LAPSE_LINE_OK);
    CHECK(payload_is("t\tab\0nul\x01\x7f\xff end", sizeof s - 1 - 11));
    /* a payload that starts with a tab: only spaces separate fields */
    REQUIRE(parse("touch a +1 \tx") == LAPSE_LINE_OK);
    CHECK(payload_is("\tx", 2));
}

/* "touch a +1 " followed by n bytes of 'p', without NUL. */
static char *payload_line(size_t n, size_t *len)
{
    static const char head[] = "touch a +1 ";
    size_t h = sizeof head - 1;
    char *s = malloc(h + n + 1);
    if (s == NULL)
        abort();
    memcpy(s, head, h);
    memset(s + h, 'p', n);
    s[h + n] = '\r';
    *len = h + n;
    return s;
}

TEST(line_payload_max)
{
    size_t n;
    char *s = payload_line(LAPSE_PAYLOAD_MAX, &n);
    REQUIRE(parse_n(s, n) == LAPSE_LINE_OK);
    CHECK(cmd.payload_len == LAPSE_PAYLOAD_MAX);
    /* the trailing \r does not count towards the limit */
    CHECK(parse_n(s, n + 1) == LAPSE_LINE_OK);
    CHECK(cmd.payload_len == LAPSE_PAYLOAD_MAX);
    free(s);

    s = payload_line(LAPSE_PAYLOAD_MAX + 1, &n);
    CHECK(parse_n(s, n) == LAPSE_LINE_ERROR);
    CHECK_STR(err, "payload longer than 65536 bytes");
    free(s);
}

TEST(line_id_length)
{
    char s[600] = "touch ";
    memset(s + 6, 'i', 512);
    strcpy(s + 6 + 512, " +1");
    REQUIRE(parse(s) == LAPSE_LINE_OK);
    CHECK(cmd.id_len == 512);

    memset(s + 6, 'i', 513);
    strcpy(s + 6 + 513, " +1");
    CHECK(parse(s) == LAPSE_LINE_ERROR);
    CHECK_STR(err, "id longer than 512 bytes");
}

TEST(line_id_control_bytes)
{
    CHECK_ERR("touch abc\tdef +1", "id contains control byte 0x09 at offset 3");
    CHECK_ERR("touch \x01 +1", "id contains control byte 0x01 at offset 0");
    CHECK_ERR("touch ab\x7f +1", "id contains control byte 0x7f at offset 2");
    CHECK_ERR("cancel x\x1b[2J", "id contains control byte 0x1b at offset 1");
    static const char nul[] = "touch ab\0c +1";
    CHECK(parse_n(nul, sizeof nul - 1) == LAPSE_LINE_ERROR);
    CHECK_STR(err, "id contains control byte 0x00 at offset 2");
    /* a \r inside the line is no line end */
    CHECK_ERR("touch a\rb +1", "id contains control byte 0x0d at offset 1");
}

/* A space cannot reach an ID through the line (it separates fields), but
 * it can through the library: it is named, not called a control byte. */
TEST(cmd_check_id_with_a_space)
{
    struct lapse_cmd c = {.op = LAPSE_OP_CANCEL, .id = "dev 42", .id_len = 6};
    CHECK(lapse_cmd_check(&c, err, sizeof err) == -1);
    CHECK_STR(err, "id contains a space at offset 3");
}

TEST(line_id_high_bytes_allowed)
{
    REQUIRE(parse("touch \x80\xff\xc3\xa9-\xfe +1") == LAPSE_LINE_OK);
    CHECK(id_is("\x80\xff\xc3\xa9-\xfe"));
    REQUIRE(parse("cancel caf\xc3\xa9") == LAPSE_LINE_OK);
    CHECK(cmd.id_len == 5);
}

TEST(line_when_limits)
{
    REQUIRE(parse("touch a +8640000000000000") == LAPSE_LINE_OK);
    CHECK(cmd.when_ms == LAPSE_WHEN_MAX);
    REQUIRE(parse("touch a @0008640000000000000") == LAPSE_LINE_OK);
    CHECK(cmd.when_ms == LAPSE_WHEN_MAX);
    CHECK_ERR("touch a +8640000000000001",
              "time \"+8640000000000001\" out of range (max 8640000000000000 ms)");
    CHECK_ERR("touch a +99999999999999999999",
              "time \"+99999999999999999999\" out of range (max 8640000000000000 ms)");
    CHECK_ERR("touch a @18446744073709551616",
              "time \"@18446744073709551616\" out of range (max 8640000000000000 ms)");
}

TEST(line_bad_times)
{
    CHECK_ERR("touch a +", "bad time \"+\": expected +<ms> or @<unix_ms>");
    CHECK_ERR("touch a @", "bad time \"@\": expected +<ms> or @<unix_ms>");
    CHECK_ERR("touch a abc", "bad time \"abc\": expected +<ms> or @<unix_ms>");
    CHECK_ERR("touch a 5", "bad time \"5\": expected +<ms> or @<unix_ms>");
    CHECK_ERR("touch a @-1", "bad time \"@-1\": expected +<ms> or @<unix_ms>");
    CHECK_ERR("touch a +-1", "bad time \"+-1\": expected +<ms> or @<unix_ms>");
    CHECK_ERR("touch a ++1", "bad time \"++1\": expected +<ms> or @<unix_ms>");
    CHECK_ERR("touch a +1x", "bad time \"+1x\": expected +<ms> or @<unix_ms>");
    CHECK_ERR("touch a +1\t2", "bad time \"+1\\x092\": expected +<ms> or @<unix_ms>");
    CHECK_ERR("extend a -5", "bad time \"-5\": expected +<ms> or @<unix_ms>");
    /* a syntax error wins over overflow */
    CHECK_ERR("touch a +99999999999999999999x",
              "bad time \"+99999999999999999999x\": expected +<ms> or @<unix_ms>");
}

TEST(line_repeat_period)
{
    CHECK_ERR("repeat a +1 0", "bad period \"0\": expected <period_ms> >= 1");
    CHECK_ERR("repeat a +1 -1", "bad period \"-1\": expected <period_ms> >= 1");
    CHECK_ERR("repeat a +1 +5", "bad period \"+5\": expected <period_ms> >= 1");
    CHECK_ERR("repeat a +1 1s", "bad period \"1s\": expected <period_ms> >= 1");
    CHECK_ERR("repeat a +1 8640000000000001",
              "period \"8640000000000001\" out of range (max 8640000000000000 ms)");
    REQUIRE(parse("repeat a +1 8640000000000000") == LAPSE_LINE_OK);
    CHECK(cmd.period_ms == LAPSE_WHEN_MAX);
}

TEST(line_missing_fields)
{
    CHECK_ERR("touch", "touch needs <id> <when>");
    CHECK_ERR("touch    ", "touch needs <id> <when>");
    CHECK_ERR("touch a", "touch needs <id> <when>");
    CHECK_ERR("touch a  \r", "touch needs <id> <when>");
    CHECK_ERR("extend a", "extend needs <id> <when>");
    CHECK_ERR("repeat a +1", "repeat needs <id> <when> <period_ms>");
    CHECK_ERR("repeat a", "repeat needs <id> <when> <period_ms>");
    CHECK_ERR("cancel", "cancel needs <id>");
    CHECK_ERR("cancel \r", "cancel needs <id>");
}

TEST(line_unknown_command)
{
    CHECK_ERR("xyz a +1", "unknown command \"xyz\"");
    CHECK_ERR("TOUCH a +1", "unknown command \"TOUCH\"");
    CHECK_ERR("touchy a +1", "unknown command \"touchy\"");
    CHECK_ERR("touc a +1", "unknown command \"touc\"");
    /* a tab is no separator: it is part of the command, shown escaped */
    CHECK_ERR("touch\ta +1", "unknown command \"touch\\x09a\"");
    CHECK_ERR("\x1b]0;pwn\x07 x", "unknown command \"\\x1b]0;pwn\\x07\"");
    CHECK_ERR("\"q\\ x", "unknown command \"\\\"q\\\\\"");
    CHECK_ERR("\xc3\xa9 x", "unknown command \"\\xc3\\xa9\"");
    static const char nul[] = "to\0uch a +1";
    CHECK(parse_n(nul, sizeof nul - 1) == LAPSE_LINE_ERROR);
    CHECK_STR(err, "unknown command \"to\\x00uch\"");
}

TEST(line_unknown_command_truncated)
{
    char s[200];
    memset(s, 'z', 100);
    strcpy(s + 100, " a +1");
    CHECK_ERR(s, "unknown command \"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz...\"");

    /* escapes count in full and are never cut in half */
    memset(s, '\x01', 100);
    CHECK_ERR(s, "unknown command "
                 "\"\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01...\"");
    CHECK(strlen(err) < 80);
}

TEST(line_error_messages_are_printable)
{
    static const char *lines[] = {
        "\x01\x02\x03 a", "touch a \x1b[31m", "touch a +\x1b", "repeat a +1 \x9b", "touch a\x7f +1",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        CHECK(parse(lines[i]) == LAPSE_LINE_ERROR);
        for (const char *p = err; *p; p++)
            CHECK(*p >= 0x20 && *p < 0x7f);
        CHECK(err[0] != '\0');
    }
}

TEST(line_small_errstr)
{
    char small[8];
    CHECK(lapse_line_parse("bogus line", 10, &cmd, small, sizeof small) == LAPSE_LINE_ERROR);
    CHECK_STR(small, "unknown");
    /* no buffer at all is allowed: the caller only wants the verdict */
    CHECK(lapse_line_parse("bogus line", 10, &cmd, NULL, 0) == LAPSE_LINE_ERROR);
}

TEST(line_blank)
{
    CHECK(parse("") == LAPSE_LINE_BLANK);
    CHECK(parse("   ") == LAPSE_LINE_BLANK);
    CHECK(parse("\r") == LAPSE_LINE_BLANK);
    CHECK(parse("    \r") == LAPSE_LINE_BLANK);
    /* a tab is not a space: this line is not blank */
    CHECK_ERR("\t", "unknown command \"\\x09\"");
}
