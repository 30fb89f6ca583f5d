/*
 * command — parses a command message of the Kafka ingress (see command.h).
 *
 * Invariants:
 *  - Every field is checked before anything is reported valid; the first
 *    problem in a fixed order (op, id, times, period, payload) is reported,
 *    so the same message always gets the same reason.
 *  - The limits are the line protocol's (LAPSE_ID_MAX, LAPSE_PAYLOAD_MAX,
 *    LAPSE_WHEN_MAX): a command is valid here exactly when the same command
 *    would be valid on a producer's stdin.
 *  - No allocation: `cmd` points into the JSON object.
 */
#include "command.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* JSON_ALLOW_NUL: a payload is bytes; the ID check refuses NUL itself. */
#define LOAD_FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

__attribute__((format(printf, 3, 4))) static int fail(char *errstr, size_t size, const char *fmt,
                                                      ...)
{
    if (errstr && size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errstr, size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void lapse_command_quote(char *out, const char *p, size_t n)
{
    lapse_quote(out, p, n);
}

json_t *lapse_command_load(const char *buf, size_t len, char *errstr, size_t size)
{
    json_error_t je;
    json_t *j = json_loadb(buf, len, LOAD_FLAGS, &je);
    if (j == NULL) {
        /* jansson's text may quote the input ("near '...'"): keep it printable. */
        for (char *c = je.text; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
                *c = '?';
        fail(errstr, size, "invalid JSON: %s at byte %d", je.text, je.position);
    }
    return j;
}

int lapse_command_is(const json_t *json)
{
    const json_t *op = json_is_object(json) ? json_object_get(json, "op") : NULL;
    return op != NULL && !json_is_null(op);
}

/* The member `name`, or NULL when it is missing or null. */
static json_t *get(const json_t *obj, const char *name)
{
    json_t *v = json_object_get(obj, name);
    return json_is_null(v) ? NULL : v;
}

/*
 * Reads the integer member `name` (present, not null) into *out within
 * min..LAPSE_WHEN_MAX. Returns 0 or fails with the member named.
 */
static int get_ms(const json_t *v, const char *name, int64_t min, int64_t *out, char *errstr,
                  size_t size)
{
    if (!json_is_integer(v) || json_integer_value(v) < min)
        return min > 0 ? fail(errstr, size, "field \"%s\": expected an integer >= %lld", name,
                              (long long)min)
                       : fail(errstr, size, "field \"%s\": expected a non-negative integer", name);
    if (json_integer_value(v) > LAPSE_WHEN_MAX)
        return fail(errstr, size, "field \"%s\": out of range (max %lld ms)", name,
                    (long long)LAPSE_WHEN_MAX);
    *out = json_integer_value(v);
    return 0;
}

static int parse_op(const json_t *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    const json_t *v = get(obj, "op");
    if (v == NULL)
        return fail(errstr, size, "field \"op\": missing");
    if (!json_is_string(v))
        return fail(errstr, size, "field \"op\": expected a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    /* the ops are line.h's, all of them (lapse_op_args) */
    for (int op = LAPSE_OP_TOUCH; lapse_op_args(op); op++)
        if (n == strlen(lapse_op_name(op)) && memcmp(s, lapse_op_name(op), n) == 0) {
            cmd->op = op;
            return 0;
        }
    char expected[128] = "";
    size_t at = 0;
    for (int op = LAPSE_OP_TOUCH; lapse_op_args(op) && at < sizeof expected; op++) {
        int w = snprintf(expected + at, sizeof expected - at, "%s%s",
                         op == LAPSE_OP_TOUCH    ? ""
                         : lapse_op_args(op + 1) ? ", "
                                                 : " or ",
                         lapse_op_name(op));
        at += w > 0 ? (size_t)w : 0;
    }
    char q[LAPSE_QUOTE_MAX + 4];
    lapse_command_quote(q, s, n);
    return fail(errstr, size, "field \"op\": unknown operation \"%s\" (expected %s)", q, expected);
}

static int parse_id(const json_t *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    const json_t *v = get(obj, "id");
    if (v == NULL)
        return fail(errstr, size, "field \"id\": missing");
    if (!json_is_string(v))
        return fail(errstr, size, "field \"id\": expected a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n > LAPSE_ID_MAX)
        return fail(errstr, size, "field \"id\": must be 1..%d bytes (got %zu)", LAPSE_ID_MAX, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ')
            return fail(errstr, size, "field \"id\": contains a space at offset %zu", i);
        if (c < 0x20 || c == 0x7f)
            return fail(errstr, size, "field \"id\": contains control byte 0x%02x at offset %zu", c,
                        i);
    }
    cmd->id = s;
    cmd->id_len = n;
    return 0;
}

static int parse_when(const json_t *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    const json_t *in = get(obj, "in_ms"), *at = get(obj, "at_ms");
    const char *name = lapse_op_name(cmd->op);
    if (cmd->op == LAPSE_OP_CANCEL) {
        if (in || at)
            return fail(errstr, size, "field \"%s\": not allowed with cancel",
                        in ? "in_ms" : "at_ms");
        cmd->when_kind = LAPSE_WHEN_NONE;
        return 0;
    }
    if (in && at)
        return fail(errstr, size, "fields \"in_ms\" and \"at_ms\": give only one");
    if (!in && !at)
        return fail(errstr, size, "%s needs field \"in_ms\" or \"at_ms\"", name);
    cmd->when_kind = in ? LAPSE_WHEN_REL : LAPSE_WHEN_ABS;
    return get_ms(in ? in : at, in ? "in_ms" : "at_ms", 0, &cmd->when_ms, errstr, size);
}

static int parse_period(const json_t *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    const json_t *v = get(obj, "period_ms");
    if (cmd->op != LAPSE_OP_REPEAT) {
        if (v)
            return fail(errstr, size, "field \"period_ms\": only for repeat");
        return 0;
    }
    if (v == NULL)
        return fail(errstr, size, "field \"period_ms\": missing (repeat needs it)");
    return get_ms(v, "period_ms", 1, &cmd->period_ms, errstr, size);
}

static int parse_payload(const json_t *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    const json_t *v = get(obj, "payload");
    if (v == NULL)
        return 0;
    if (cmd->op == LAPSE_OP_CANCEL)
        return fail(errstr, size, "field \"payload\": not allowed with cancel");
    if (!json_is_string(v))
        return fail(errstr, size, "field \"payload\": expected a string");
    if (json_string_length(v) > LAPSE_PAYLOAD_MAX)
        return fail(errstr, size, "field \"payload\": longer than %d bytes (got %zu)",
                    LAPSE_PAYLOAD_MAX, json_string_length(v));
    cmd->payload = json_string_value(v);
    cmd->payload_len = json_string_length(v);
    return 0;
}

int lapse_command_from_json(const json_t *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    if (!json_is_object(obj))
        return fail(errstr, size, "expected a JSON object");
    memset(cmd, 0, sizeof *cmd);
    if (parse_op(obj, cmd, errstr, size) < 0 || parse_id(obj, cmd, errstr, size) < 0 ||
        parse_when(obj, cmd, errstr, size) < 0 || parse_period(obj, cmd, errstr, size) < 0 ||
        parse_payload(obj, cmd, errstr, size) < 0)
        return -1;
    return 0;
}
