/*
 * fuzz_command — libFuzzer target for the ingress command parser
 * (producer/ingress/command.h): one input is one Kafka message value, any bytes.
 *
 * The bytes go through lapse_command_load; every command object found (the
 * message itself, or each element of an array) goes through
 * lapse_command_from_json. Besides "never crash, never UB, never leak":
 *  - errors: NUL-terminated, non-empty, printable ASCII, shorter than
 *    ERR_MAX; a smaller errstr gets a prefix (snprintf semantics); errstr
 *    NULL or size 0 is never written; the verdict does not depend on it;
 *  - the verdict agrees with ref_command() below, an independent reading of
 *    command.h's rules written straight against jansson;
 *  - on success the command matches the reference field by field, its
 *    pointers point into the JSON strings, the limits of line.h hold, and
 *    lapse_cmd_check accepts it;
 *  - a valid command that the line protocol can express, printed as a line,
 *    parses with lapse_line_parse to the same command ("valid here exactly
 *    when valid on a producer's stdin");
 *  - lapse_command_quote on the raw input fits in LAPSE_QUOTE_MAX + 4 bytes
 *    and is printable ASCII.
 */
#include "command.h"
#include "line.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME "fuzz_command"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Longest error accepted. jansson's own text ("invalid JSON: ...") can reach
 * about 200 characters; lapse's errstr buffers are 128 and cut it. */
#define ERR_MAX 256

static void check_err_text(const char *err, size_t cap)
{
    (void)fuzz_error_text(err, cap, ERR_MAX);
}

/* ---- the reference reading ---------------------------------------------- */

/* The member, or NULL when missing or null. */
static json_t *member(const json_t *obj, const char *name)
{
    json_t *v = json_object_get(obj, name);
    return v == NULL || json_is_null(v) ? NULL : v;
}

static int ms_ok(const json_t *v, int64_t min, int64_t *out)
{
    if (!json_is_integer(v))
        return 0;
    json_int_t x = json_integer_value(v);
    if (x < min || x > LAPSE_WHEN_MAX)
        return 0;
    *out = x;
    return 1;
}

/* 1 when obj is a valid command, with the expected fields in *c. */
static int ref_command(const json_t *obj, struct lapse_cmd *c)
{
    memset(c, 0, sizeof *c);
    if (!json_is_object(obj))
        return 0;
    static const char *names[] = {"touch", "extend", "repeat", "cancel"};
    const json_t *op = member(obj, "op");
    if (!json_is_string(op))
        return 0;
    for (int i = 0; i < 4; i++)
        if (json_string_length(op) == strlen(names[i]) &&
            memcmp(json_string_value(op), names[i], strlen(names[i])) == 0)
            c->op = (enum lapse_op)(LAPSE_OP_TOUCH + i);
    if (c->op == 0)
        return 0;

    const json_t *id = member(obj, "id");
    if (!json_is_string(id))
        return 0;
    c->id = json_string_value(id);
    c->id_len = json_string_length(id);
    if (c->id_len < 1 || c->id_len > LAPSE_ID_MAX)
        return 0;
    for (size_t i = 0; i < c->id_len; i++) {
        unsigned char b = (unsigned char)c->id[i];
        if (b <= 0x20 || b == 0x7f)
            return 0;
    }

    const json_t *in = member(obj, "in_ms"), *at = member(obj, "at_ms");
    const json_t *period = member(obj, "period_ms"), *payload = member(obj, "payload");
    if (c->op == LAPSE_OP_CANCEL)
        return !in && !at && !period && !payload;

    if ((in != NULL) == (at != NULL))
        return 0;
    c->when_kind = in ? LAPSE_WHEN_REL : LAPSE_WHEN_ABS;
    if (!ms_ok(in ? in : at, 0, &c->when_ms))
        return 0;
    if ((c->op == LAPSE_OP_REPEAT) != (period != NULL))
        return 0;
    if (period && !ms_ok(period, 1, &c->period_ms))
        return 0;
    if (payload) {
        if (!json_is_string(payload) || json_string_length(payload) > LAPSE_PAYLOAD_MAX)
            return 0;
        c->payload = json_string_value(payload);
        c->payload_len = json_string_length(payload);
    }
    return 1;
}

/* ---- the checks --------------------------------------------------------- */

static void check_same(const struct lapse_cmd *got, const struct lapse_cmd *want)
{
    ASSERT(got->op == want->op);
    ASSERT(got->id == want->id && got->id_len == want->id_len); /* into the JSON */
    ASSERT(got->id_len >= 1 && got->id_len <= LAPSE_ID_MAX);
    ASSERT(got->when_kind == want->when_kind);
    if (got->op == LAPSE_OP_CANCEL) {
        ASSERT(got->when_kind == LAPSE_WHEN_NONE);
        ASSERT(got->payload == NULL && got->payload_len == 0);
        return;
    }
    ASSERT(got->when_ms == want->when_ms);
    ASSERT(got->when_ms >= 0 && got->when_ms <= LAPSE_WHEN_MAX);
    if (got->op == LAPSE_OP_REPEAT) {
        ASSERT(got->period_ms == want->period_ms);
        ASSERT(got->period_ms >= 1);
    }
    ASSERT(got->payload == want->payload && got->payload_len == want->payload_len);
    ASSERT(got->payload_len <= LAPSE_PAYLOAD_MAX);
}

/* Prints c as a protocol line and parses it back, when the line protocol can
 * carry it: a payload that is empty, starts with a space or ends with \r
 * cannot survive the trip. */
static void check_line_round_trip(const struct lapse_cmd *c)
{
    if (c->payload &&
        (c->payload_len == 0 || c->payload[0] == ' ' || c->payload[c->payload_len - 1] == '\r'))
        return;
    size_t cap = 64 + c->id_len + c->payload_len;
    char *line = malloc(cap);
    if (line == NULL)
        abort();
    int n = snprintf(line, cap, "%s ", lapse_op_name(c->op));
    memcpy(line + n, c->id, c->id_len);
    size_t len = (size_t)n + c->id_len;
    if (c->op != LAPSE_OP_CANCEL) {
        len += (size_t)snprintf(line + len, cap - len, " %c%lld",
                                c->when_kind == LAPSE_WHEN_REL ? '+' : '@', (long long)c->when_ms);
        if (c->op == LAPSE_OP_REPEAT)
            len += (size_t)snprintf(line + len, cap - len, " %lld", (long long)c->period_ms);
        if (c->payload) {
            line[len++] = ' ';
            memcpy(line + len, c->payload, c->payload_len);
            len += c->payload_len;
        }
    }
    struct lapse_cmd l;
    char err[128];
    if (lapse_line_parse(line, len, &l, err, sizeof err) != LAPSE_LINE_OK)
        fail("valid command is not a valid line", err);
    ASSERT(l.op == c->op && l.id_len == c->id_len && memcmp(l.id, c->id, c->id_len) == 0);
    ASSERT(l.when_kind == c->when_kind && l.when_ms == c->when_ms);
    if (c->op == LAPSE_OP_REPEAT)
        ASSERT(l.period_ms == c->period_ms);
    ASSERT((l.payload == NULL) == (c->payload == NULL) && l.payload_len == c->payload_len);
    ASSERT(l.payload_len == 0 || memcmp(l.payload, c->payload, l.payload_len) == 0);
    free(line);
}

/* Set while check_padded runs: its 64 KiB line round trip would cost more
 * than it could find. */
static int padding;

/* Runs every check on one object (or any value); returns the verdict. */
static int check_command(const json_t *obj)
{
    struct lapse_cmd want, got;
    int ok = ref_command(obj, &want);
    char err[1024];
    memset(err, 'E', sizeof err);
    memset(&got, 0xa5, sizeof got);
    int rc = lapse_command_from_json(obj, &got, err, sizeof err);
    if (rc != 0 && rc != -1)
        fail("lapse_command_from_json returned neither 0 nor -1", NULL);
    if ((rc == 0) != ok)
        fail(ok ? "valid command refused" : "invalid command accepted", rc ? err : NULL);

    char one = 'S';
    struct lapse_cmd tmp;
    ASSERT(lapse_command_from_json(obj, &tmp, NULL, 0) == rc);
    ASSERT(lapse_command_from_json(obj, &tmp, &one, 0) == rc && one == 'S');

    if (rc == 0) {
        check_same(&got, &want);
        if (lapse_cmd_check(&got, err, sizeof err) != 0)
            fail("lapse_cmd_check refuses a parsed command", err);
        if (!padding)
            check_line_round_trip(&got);
        return 0;
    }
    check_err_text(err, sizeof err);
    char small[32];
    size_t cap = 1 + json_object_size(obj) % 24;
    memset(small, 'E', sizeof small);
    ASSERT(lapse_command_from_json(obj, &tmp, small, cap) == -1);
    ASSERT(memchr(small, '\0', cap) != NULL && strncmp(small, err, cap - 1) == 0);
    ASSERT(small[cap] == 'E');
    return -1;
}

/*
 * The payload limit is 64 KiB; inputs seldom grow that far. So a valid
 * command with a payload, when the input's length is a multiple of 16, is
 * checked again with its payload replaced by exactly LAPSE_PAYLOAD_MAX and
 * LAPSE_PAYLOAD_MAX + 1 bytes; the reference decides what each must give.
 */
static void check_padded(json_t *obj)
{
    if (!json_is_string(member(obj, "payload")))
        return;
    static char pad[LAPSE_PAYLOAD_MAX + 1];
    memset(pad, 'p', sizeof pad);
    padding = 1;
    ASSERT(json_object_set_new(obj, "payload", json_stringn(pad, LAPSE_PAYLOAD_MAX)) == 0);
    ASSERT(check_command(obj) == 0);
    ASSERT(json_object_set_new(obj, "payload", json_stringn(pad, sizeof pad)) == 0);
    ASSERT(check_command(obj) == -1);
    padding = 0;
}

static void check_quote(const uint8_t *data, size_t size)
{
    char *out = malloc(LAPSE_QUOTE_MAX + 4); /* exact: ASan sees an overrun */
    if (out == NULL)
        abort();
    lapse_command_quote(out, (const char *)data, size);
    size_t n = strlen(out);
    ASSERT(n <= LAPSE_QUOTE_MAX + 3);
    for (size_t i = 0; i < n; i++)
        ASSERT(out[i] >= 0x20 && out[i] <= 0x7e);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    check_quote(data, size < 200 ? size : 200);

    char err[1024];
    memset(err, 'E', sizeof err);
    json_t *j = lapse_command_load(buf, size, err, sizeof err);
    char one = 'S';
    json_t *j2 = lapse_command_load(buf, size, &one, 0);
    ASSERT((j == NULL) == (j2 == NULL) && one == 'S');
    json_decref(j2);
    if (j == NULL) {
        check_err_text(err, sizeof err);
        return 0;
    }
    ASSERT(json_is_object(j) || json_is_array(j));

    /* Every value goes through, command or not: the parser must refuse what
     * is not one without crashing. */
    if (json_is_array(j)) {
        size_t i;
        json_t *e;
        json_array_foreach(j, i, e)
        {
            check_command(e);
        }
    } else {
        ASSERT(lapse_command_is(j) == (member(j, "op") != NULL)); /* null = absent */
        if (check_command(j) == 0 && size % 16 == 0)
            check_padded(j);
    }
    json_decref(j);
    return 0;
}
