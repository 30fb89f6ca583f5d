/*
 * line — parses one line of the producer protocol (docs/protocol.md, "The
 * producer protocol") from bytes: no I/O, no allocation, so it can be unit-tested
 * and fuzzed on its own and the producer's hot loop never touches malloc.
 *
 * Invariants:
 *  - Only the `len` bytes given are read; NUL is an ordinary byte.
 *  - Only 0x20 separates fields. Any other byte, tab and NUL included, belongs
 *    to the field it sits in, and the field's own rules reject it.
 *  - On LAPSE_LINE_OK every pointer in the command points into `line`.
 *  - An error message is one short line that never contains a raw control or
 *    non-ASCII byte: offending tokens are quoted through lapse_quote(), which
 *    escapes and truncates them. Input is untrusted and the message goes to a
 *    terminal or a log.
 *  - The fast path (a well-formed command) formats nothing: snprintf runs
 *    only on the error path.
 */
#include "line.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A field: [p, p + n). n == 0 means "absent". */
struct field {
    const char *p;
    size_t n;
};

/* Cursor over the line being parsed. */
struct scan {
    const char *p;   /* next unread byte */
    const char *end; /* one past the last byte (trailing \r already dropped) */
};

static void skip_spaces(struct scan *s)
{
    while (s->p < s->end && *s->p == ' ')
        s->p++;
}

/* Next space-delimited field; empty when the line is exhausted. */
static struct field next_field(struct scan *s)
{
    skip_spaces(s);
    struct field f = {s->p, 0};
    while (s->p < s->end && *s->p != ' ')
        s->p++;
    f.n = (size_t)(s->p - f.p);
    return f;
}

void lapse_quote(char *out, const char *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        char e[4];
        size_t en;
        if (c == '"' || c == '\\') {
            e[0] = '\\';
            e[1] = (char)c;
            en = 2;
        } else if (c < 0x20 || c >= 0x7f) {
            e[0] = '\\';
            e[1] = 'x';
            e[2] = hex[c >> 4];
            e[3] = hex[c & 15];
            en = 4;
        } else {
            e[0] = (char)c;
            en = 1;
        }
        if (o + en > LAPSE_QUOTE_MAX) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(out + o, e, en);
        o += en;
    }
    out[o] = '\0';
}

__attribute__((format(printf, 3, 4))) static enum lapse_line_result fail(char *errstr, size_t size,
                                                                         const char *fmt, ...)
{
    if (errstr && size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errstr, size, fmt, ap);
        va_end(ap);
    }
    return LAPSE_LINE_ERROR;
}

/* The commands, exact lowercase, in enum order: every list of them (the
 * programs' --help, the ingress's errors) is made from this table. The
 * usage line is the "missing field" error; args is what --help shows. */
static const struct op_info {
    enum lapse_op op;
    const char *name;
    const char *usage;
    const char *args;
} ops[] = {
    {LAPSE_OP_TOUCH, "touch", "touch needs <id> <when>", "<id> <when> [<payload>]"},
    {LAPSE_OP_EXTEND, "extend", "extend needs <id> <when>", "<id> <when> [<payload>]"},
    {LAPSE_OP_REPEAT, "repeat", "repeat needs <id> <when> <period_ms>",
     "<id> <when> <period_ms> [<payload>]"},
    {LAPSE_OP_CANCEL, "cancel", "cancel needs <id>", "<id>"},
    {LAPSE_OP_WATCH, "watch", "watch needs <id> <when>", "<id> <when> [<payload>]"},
};

/*
 * Parses f as decimal digits only (no sign, no space) into *out.
 * Returns 0 on success, -1 when a byte is not a digit or f is empty, -2 when
 * the value passes LAPSE_WHEN_MAX. Overflow-safe: the check runs before each
 * multiply, so any number of digits is fine.
 */
static int parse_ms(struct field f, int64_t *out)
{
    if (f.n == 0)
        return -1;
    int64_t v = 0;
    int big = 0;
    for (size_t i = 0; i < f.n; i++) {
        unsigned char c = (unsigned char)f.p[i];
        if (c < '0' || c > '9')
            return -1; /* a syntax error wins over a range error */
        int d = c - '0';
        /* (constant bounds: no division per digit; v * 10 + d cannot
         * overflow once v <= LAPSE_WHEN_MAX / 10) */
        if (big || v > LAPSE_WHEN_MAX / 10 || v * 10 + d > LAPSE_WHEN_MAX)
            big = 1; /* keep scanning: "+9999...x" is still a syntax error */
        else
            v = v * 10 + d;
    }
    if (big)
        return -2;
    *out = v;
    return 0;
}

static enum lapse_line_result parse_when(struct field f, struct lapse_cmd *cmd, char *errstr,
                                         size_t size)
{
    char q[LAPSE_QUOTE_MAX + 4];
    int rc = -1;
    if (f.n >= 1 && (f.p[0] == '+' || f.p[0] == '@')) {
        cmd->when_kind = f.p[0] == '+' ? LAPSE_WHEN_REL : LAPSE_WHEN_ABS;
        rc = parse_ms((struct field){f.p + 1, f.n - 1}, &cmd->when_ms);
        if (rc == 0)
            return LAPSE_LINE_OK;
    }
    lapse_quote(q, f.p, f.n);
    if (rc == -2)
        return fail(errstr, size, "time \"%s\" out of range (max %lld ms)", q,
                    (long long)LAPSE_WHEN_MAX);
    return fail(errstr, size, "bad time \"%s\": expected +<ms> or @<unix_ms>", q);
}

static enum lapse_line_result parse_period(struct field f, struct lapse_cmd *cmd, char *errstr,
                                           size_t size)
{
    char q[LAPSE_QUOTE_MAX + 4];
    int rc = parse_ms(f, &cmd->period_ms);
    if (rc == 0 && cmd->period_ms >= 1)
        return LAPSE_LINE_OK;
    lapse_quote(q, f.p, f.n);
    if (rc == -2)
        return fail(errstr, size, "period \"%s\" out of range (max %lld ms)", q,
                    (long long)LAPSE_WHEN_MAX);
    return fail(errstr, size, "bad period \"%s\": expected <period_ms> >= 1", q);
}

/* The id rules: 1..LAPSE_ID_MAX bytes, none in 0x00-0x20 or 0x7f. */
static enum lapse_line_result check_id(struct field f, char *errstr, size_t size)
{
    if (f.n > LAPSE_ID_MAX)
        return fail(errstr, size, "id longer than %d bytes", LAPSE_ID_MAX);
    /* Every ID is checked on its way in: first without an early exit (the
     * compiler vectorises this), then, only when something is wrong, again
     * to say where. */
    unsigned bad = 0;
    for (size_t i = 0; i < f.n; i++) {
        unsigned char c = (unsigned char)f.p[i];
        bad |= (c <= 0x20) | (c == 0x7f);
    }
    if (!bad)
        return LAPSE_LINE_OK;
    for (size_t i = 0; i < f.n; i++) {
        unsigned char c = (unsigned char)f.p[i];
        if (c == ' ') /* (not a control byte: say what it is) */
            return fail(errstr, size, "id contains a space at offset %zu", i);
        if (c < 0x20 || c == 0x7f)
            return fail(errstr, size, "id contains control byte 0x%02x at offset %zu", c, i);
    }
    return LAPSE_LINE_OK;
}

enum lapse_line_result lapse_line_parse(const char *line, size_t len, struct lapse_cmd *cmd,
                                        char *errstr, size_t size)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    struct scan s = {line, line + len};

    /* Leading spaces are tolerated: a line of only spaces is blank anyway. */
    struct field op = next_field(&s);
    if (op.n == 0)
        return LAPSE_LINE_BLANK;

    const struct op_info *info = NULL;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (op.n == strlen(ops[i].name) && memcmp(op.p, ops[i].name, op.n) == 0)
            info = &ops[i];
    if (info == NULL) {
        char q[LAPSE_QUOTE_MAX + 4];
        lapse_quote(q, op.p, op.n);
        return fail(errstr, size, "unknown command \"%s\"", q);
    }
    memset(cmd, 0, sizeof *cmd);
    cmd->op = info->op;
    const char *usage = info->usage;

    struct field id = next_field(&s);
    if (id.n == 0)
        return fail(errstr, size, "%s", usage);
    if (check_id(id, errstr, size) != LAPSE_LINE_OK)
        return LAPSE_LINE_ERROR;
    cmd->id = id.p;
    cmd->id_len = id.n;

    if (cmd->op == LAPSE_OP_CANCEL) {
        skip_spaces(&s);
        if (s.p < s.end)
            return fail(errstr, size, "cancel takes only an id");
        return LAPSE_LINE_OK;
    }

    struct field when = next_field(&s);
    if (when.n == 0)
        return fail(errstr, size, "%s", usage);
    if (parse_when(when, cmd, errstr, size) != LAPSE_LINE_OK)
        return LAPSE_LINE_ERROR;

    if (cmd->op == LAPSE_OP_REPEAT) {
        struct field period = next_field(&s);
        if (period.n == 0)
            return fail(errstr, size, "%s", usage);
        if (parse_period(period, cmd, errstr, size) != LAPSE_LINE_OK)
            return LAPSE_LINE_ERROR;
    }

    /* The payload is the rest verbatim, spaces and control bytes included;
     * only the spaces separating it from the last field are not part of it. */
    skip_spaces(&s);
    if (s.p < s.end) {
        size_t n = (size_t)(s.end - s.p);
        if (n > LAPSE_PAYLOAD_MAX)
            return fail(errstr, size, "payload longer than %d bytes", LAPSE_PAYLOAD_MAX);
        cmd->payload = s.p;
        cmd->payload_len = n;
    }
    return LAPSE_LINE_OK;
}

int lapse_cmd_check(const struct lapse_cmd *cmd, char *errstr, size_t size)
{
    if (cmd->op < LAPSE_OP_TOUCH || cmd->op > LAPSE_OP_WATCH)
        return fail(errstr, size, "unknown command"), -1;
    if (!cmd->id || cmd->id_len == 0)
        return fail(errstr, size, "%s needs an id", lapse_op_name(cmd->op)), -1;
    if (check_id((struct field){cmd->id, cmd->id_len}, errstr, size) != LAPSE_LINE_OK)
        return -1;
    if (cmd->op == LAPSE_OP_CANCEL)
        return 0;
    if (cmd->when_kind != LAPSE_WHEN_REL && cmd->when_kind != LAPSE_WHEN_ABS)
        return fail(errstr, size, "%s needs a time", lapse_op_name(cmd->op)), -1;
    if (cmd->when_ms < 0 || cmd->when_ms > LAPSE_WHEN_MAX)
        return fail(errstr, size, "time %lld out of range (0..%lld ms)", (long long)cmd->when_ms,
                    (long long)LAPSE_WHEN_MAX),
               -1;
    if (cmd->op == LAPSE_OP_REPEAT && (cmd->period_ms < 1 || cmd->period_ms > LAPSE_WHEN_MAX))
        return fail(errstr, size, "period %lld out of range (1..%lld ms)",
                    (long long)cmd->period_ms, (long long)LAPSE_WHEN_MAX),
               -1;
    if (cmd->payload && cmd->payload_len > LAPSE_PAYLOAD_MAX)
        return fail(errstr, size, "payload longer than %d bytes", LAPSE_PAYLOAD_MAX), -1;
    return 0;
}

const char *lapse_op_name(enum lapse_op op)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].op == op)
            return ops[i].name;
    return "?";
}

const char *lapse_op_args(enum lapse_op op)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].op == op)
            return ops[i].args;
    return NULL;
}
