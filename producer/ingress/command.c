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

/* The command object: decoded by jansson, or read in place (flatjson.h). */
struct obj {
    const json_t *json;
    const struct lapse_flatjson *flat; /* when json is NULL */
};

/* A member's value, from either. */
struct val {
    enum { V_STRING, V_INTEGER, V_OTHER } type;
    const char *str; /* V_STRING */
    size_t len;
    int64_t num; /* V_INTEGER */
};

/* The member `name` into *v: 1, or 0 when it is missing or null. */
static int get(const struct obj *o, const char *name, struct val *v)
{
    memset(v, 0, sizeof *v);
    if (o->json) {
        const json_t *j = json_object_get(o->json, name);
        if (j == NULL || json_is_null(j))
            return 0;
        v->type = json_is_string(j) ? V_STRING : json_is_integer(j) ? V_INTEGER : V_OTHER;
        if (v->type == V_STRING) {
            v->str = json_string_value(j);
            v->len = json_string_length(j);
        }
        v->num = v->type == V_INTEGER ? json_integer_value(j) : 0;
        return 1;
    }
    struct lapse_flatjson_value f = lapse_flatjson_get(o->flat, name);
    if (f.type == LAPSE_FLATJSON_NONE || f.type == LAPSE_FLATJSON_NULL)
        return 0;
    v->type = f.type == LAPSE_FLATJSON_STRING    ? V_STRING
              : f.type == LAPSE_FLATJSON_INTEGER ? V_INTEGER
                                                 : V_OTHER;
    v->str = f.str;
    v->len = f.len;
    v->num = f.num;
    return 1;
}

/*
 * Reads the integer member `name` (present, not null) into *out within
 * min..LAPSE_WHEN_MAX. Returns 0 or fails with the member named.
 */
static int get_ms(const struct val *v, const char *name, int64_t min, int64_t *out, char *errstr,
                  size_t size)
{
    if (v->type != V_INTEGER || v->num < min)
        return min > 0 ? fail(errstr, size, "field \"%s\": expected an integer >= %lld", name,
                              (long long)min)
                       : fail(errstr, size, "field \"%s\": expected a non-negative integer", name);
    if (v->num > LAPSE_WHEN_MAX)
        return fail(errstr, size, "field \"%s\": out of range (max %lld ms)", name,
                    (long long)LAPSE_WHEN_MAX);
    *out = v->num;
    return 0;
}

static int parse_op(const struct obj *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    struct val v;
    if (!get(obj, "op", &v))
        return fail(errstr, size, "field \"op\": missing");
    if (v.type != V_STRING)
        return fail(errstr, size, "field \"op\": expected a string");
    const char *s = v.str;
    size_t n = v.len;
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

static int parse_id(const struct obj *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    struct val v;
    if (!get(obj, "id", &v))
        return fail(errstr, size, "field \"id\": missing");
    if (v.type != V_STRING)
        return fail(errstr, size, "field \"id\": expected a string");
    const char *s = v.str;
    size_t n = v.len;
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

static int parse_when(const struct obj *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    struct val in_v, at_v;
    const struct val *in = get(obj, "in_ms", &in_v) ? &in_v : NULL;
    const struct val *at = get(obj, "at_ms", &at_v) ? &at_v : NULL;
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

static int parse_period(const struct obj *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    struct val v;
    int has = get(obj, "period_ms", &v);
    if (cmd->op != LAPSE_OP_REPEAT) {
        if (has)
            return fail(errstr, size, "field \"period_ms\": only for repeat");
        return 0;
    }
    if (!has)
        return fail(errstr, size, "field \"period_ms\": missing (repeat needs it)");
    return get_ms(&v, "period_ms", 1, &cmd->period_ms, errstr, size);
}

static int parse_payload(const struct obj *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    struct val v;
    if (!get(obj, "payload", &v))
        return 0;
    if (cmd->op == LAPSE_OP_CANCEL)
        return fail(errstr, size, "field \"payload\": not allowed with cancel");
    if (v.type != V_STRING)
        return fail(errstr, size, "field \"payload\": expected a string");
    if (v.len > LAPSE_PAYLOAD_MAX)
        return fail(errstr, size, "field \"payload\": longer than %d bytes (got %zu)",
                    LAPSE_PAYLOAD_MAX, v.len);
    cmd->payload = v.str;
    cmd->payload_len = v.len;
    return 0;
}

static int from_obj(const struct obj *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    memset(cmd, 0, sizeof *cmd);
    if (parse_op(obj, cmd, errstr, size) < 0 || parse_id(obj, cmd, errstr, size) < 0 ||
        parse_when(obj, cmd, errstr, size) < 0 || parse_period(obj, cmd, errstr, size) < 0 ||
        parse_payload(obj, cmd, errstr, size) < 0)
        return -1;
    return 0;
}

int lapse_command_from_json(const json_t *obj, struct lapse_cmd *cmd, char *errstr, size_t size)
{
    if (!json_is_object(obj))
        return fail(errstr, size, "expected a JSON object");
    struct obj o = {obj, NULL};
    return from_obj(&o, cmd, errstr, size);
}

int lapse_command_is_flat(const struct lapse_flatjson *obj)
{
    enum lapse_flatjson_type op = lapse_flatjson_get(obj, "op").type;
    return op != LAPSE_FLATJSON_NONE && op != LAPSE_FLATJSON_NULL;
}

int lapse_command_from_flat(const struct lapse_flatjson *obj, struct lapse_cmd *cmd, char *errstr,
                            size_t size)
{
    struct obj o = {NULL, obj};
    return from_obj(&o, cmd, errstr, size);
}
