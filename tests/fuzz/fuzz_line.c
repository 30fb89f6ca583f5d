/*
 * fuzz_line — libFuzzer target for lapse_line_parse: one input is one line
 * (without its '\n'), any bytes, NUL included.
 *
 * Besides "never crash, never UB" (ASan + UBSan), each input is checked
 * against line.h's contract:
 *  - on OK every pointer lies inside the input, the id is 1..LAPSE_ID_MAX
 *    bytes with none in 0x00-0x20 or 0x7f, the payload at most
 *    LAPSE_PAYLOAD_MAX, when/period in range, the op and when kind valid;
 *  - on ERROR the message is NUL-terminated, non-empty, printable ASCII and
 *    short, and a smaller errstr gets a prefix of it (snprintf semantics);
 *    errstr NULL or size 0 is never written;
 *  - a parsed command passes lapse_cmd_check;
 *  - the verdict and the parsed fields agree with ref_parse() below, an
 *    independent, deliberately naive reading of the protocol (tokenize, then
 *    check), and an error's message starts the way the rule it broke says.
 *
 * Any disagreement calls abort(), so libFuzzer saves the input as a crash.
 */
#include "line.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME "fuzz_line"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ERR_SHORT 128 /* the size lapse's errstr buffers have */

/* ---- the reference reading ---------------------------------------------- */

struct tok {
    size_t off, n;
};

struct ref {
    enum lapse_line_result res;
    const char *err_prefix; /* on ERROR: how the message must start */
    enum lapse_op op;
    struct tok id;
    enum lapse_when_kind kind;
    int64_t when_ms, period_ms;
    int has_payload;
    struct tok payload;
};

/* Decimal digits only, 1 or more, value 0..LAPSE_WHEN_MAX. Returns 0 ok,
 * -1 syntax, -2 range. Leading zeros are stripped first, then anything
 * longer than 16 significant digits is out of range without arithmetic. */
static int ref_number(const uint8_t *p, size_t n, int64_t *out)
{
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return -1;
    while (n > 1 && p[0] == '0')
        p++, n--;
    if (n > 16) /* LAPSE_WHEN_MAX has 16 digits */
        return -2;
    char buf[17];
    memcpy(buf, p, n);
    buf[n] = '\0';
    long long v = strtoll(buf, NULL, 10);
    if (v > LAPSE_WHEN_MAX)
        return -2;
    *out = v;
    return 0;
}

static int tok_is(const uint8_t *line, struct tok t, const char *s)
{
    return t.n == strlen(s) && memcmp(line + t.off, s, t.n) == 0;
}

/* An ERROR verdict for r's op; prefix "" means "the op's usage line". */
static struct ref ref_error(struct ref r, const char *prefix)
{
    r.res = LAPSE_LINE_ERROR;
    r.err_prefix = prefix;
    return r;
}

static struct ref ref_parse(const uint8_t *line, size_t len)
{
    struct ref r;
    memset(&r, 0, sizeof r);
    if (len > 0 && line[len - 1] == '\r')
        len--;

    /* All space-separated tokens, and where the text after each one's
     * following spaces starts (for the payload). */
    enum { MAXTOK = 5 };
    struct tok t[MAXTOK];
    size_t after[MAXTOK];
    size_t nt = 0, i = 0;
    while (nt < MAXTOK) {
        while (i < len && line[i] == ' ')
            i++;
        if (i == len)
            break;
        size_t start = i;
        while (i < len && line[i] != ' ')
            i++;
        t[nt] = (struct tok){start, i - start};
        size_t j = i;
        while (j < len && line[j] == ' ')
            j++;
        after[nt] = j;
        nt++;
    }
    if (nt == 0) {
        r.res = LAPSE_LINE_BLANK;
        return r;
    }

    size_t need; /* tokens before the payload, op included */
    if (tok_is(line, t[0], "touch"))
        r.op = LAPSE_OP_TOUCH, need = 3;
    else if (tok_is(line, t[0], "extend"))
        r.op = LAPSE_OP_EXTEND, need = 3;
    else if (tok_is(line, t[0], "repeat"))
        r.op = LAPSE_OP_REPEAT, need = 4;
    else if (tok_is(line, t[0], "cancel"))
        r.op = LAPSE_OP_CANCEL, need = 2;
    else
        return ref_error(r, "unknown command \"");

    /* Fields are checked left to right: the first bad one names the error. */
    if (nt < 2)
        return ref_error(r, "");
    r.id = t[1];
    if (r.id.n > LAPSE_ID_MAX)
        return ref_error(r, "id longer than ");
    for (size_t k = 0; k < r.id.n; k++) {
        uint8_t c = line[r.id.off + k];
        if (c <= 0x20 || c == 0x7f)
            return ref_error(r, "id contains control byte ");
    }
    if (r.op == LAPSE_OP_CANCEL) {
        if (nt > 2)
            return ref_error(r, "cancel takes only an id");
        r.res = LAPSE_LINE_OK;
        return r;
    }

    if (nt < 3)
        return ref_error(r, "");
    struct tok w = t[2];
    uint8_t c0 = line[w.off];
    int rc = -1;
    if (c0 == '+' || c0 == '@') {
        r.kind = c0 == '+' ? LAPSE_WHEN_REL : LAPSE_WHEN_ABS;
        rc = ref_number(line + w.off + 1, w.n - 1, &r.when_ms);
    }
    if (rc == -2)
        return ref_error(r, "time \"");
    if (rc != 0)
        return ref_error(r, "bad time \"");

    if (r.op == LAPSE_OP_REPEAT) {
        if (nt < 4)
            return ref_error(r, "");
        rc = ref_number(line + t[3].off, t[3].n, &r.period_ms);
        if (rc == -2)
            return ref_error(r, "period \"");
        if (rc != 0 || r.period_ms < 1)
            return ref_error(r, "bad period \"");
    }

    size_t p = after[need - 1];
    if (p < len) {
        if (len - p > LAPSE_PAYLOAD_MAX)
            return ref_error(r, "payload longer than ");
        r.has_payload = 1;
        r.payload = (struct tok){p, len - p};
    }
    r.res = LAPSE_LINE_OK;
    return r;
}

/* ---- the checks --------------------------------------------------------- */

static int inside(const uint8_t *base, size_t len, const char *p, size_t n)
{
    const uint8_t *q = (const uint8_t *)p;
    return q >= base && q <= base + len && n <= (size_t)(base + len - q);
}

static void check_ok(const uint8_t *data, size_t size, const struct lapse_cmd *c,
                     const struct ref *r)
{
    ASSERT(c->op >= LAPSE_OP_TOUCH && c->op <= LAPSE_OP_CANCEL);
    ASSERT(c->op == r->op);
    ASSERT(c->id != NULL && inside(data, size, c->id, c->id_len));
    ASSERT(c->id_len >= 1 && c->id_len <= LAPSE_ID_MAX);
    for (size_t i = 0; i < c->id_len; i++) {
        unsigned char b = (unsigned char)c->id[i];
        ASSERT(b > 0x20 && b != 0x7f);
    }
    ASSERT((const uint8_t *)c->id == data + r->id.off && c->id_len == r->id.n);

    if (c->op == LAPSE_OP_CANCEL) {
        ASSERT(c->when_kind == LAPSE_WHEN_NONE);
        ASSERT(c->payload == NULL && c->payload_len == 0);
        return;
    }
    ASSERT(c->when_kind == LAPSE_WHEN_REL || c->when_kind == LAPSE_WHEN_ABS);
    ASSERT(c->when_kind == r->kind);
    ASSERT(c->when_ms >= 0 && c->when_ms <= LAPSE_WHEN_MAX);
    ASSERT(c->when_ms == r->when_ms);
    if (c->op == LAPSE_OP_REPEAT) {
        ASSERT(c->period_ms >= 1 && c->period_ms <= LAPSE_WHEN_MAX);
        ASSERT(c->period_ms == r->period_ms);
    }
    if (c->payload == NULL) {
        ASSERT(c->payload_len == 0);
        ASSERT(!r->has_payload);
    } else {
        ASSERT(inside(data, size, c->payload, c->payload_len));
        ASSERT(c->payload_len >= 1 && c->payload_len <= LAPSE_PAYLOAD_MAX);
        ASSERT(r->has_payload);
        ASSERT((const uint8_t *)c->payload == data + r->payload.off);
        ASSERT(c->payload_len == r->payload.n);
        ASSERT(c->payload[0] != ' ');
    }
}

static void check_error_text(const char *err, size_t cap, const struct ref *r, enum lapse_op op)
{
    (void)fuzz_error_text(err, cap, ERR_SHORT);

    const char *want = r->err_prefix;
    char usage[64];
    if (want[0] == '\0') { /* a missing field: the op's usage line */
        snprintf(usage, sizeof usage, "%s needs <id>", lapse_op_name(op));
        want = usage;
    }
    if (strncmp(err, want, strlen(want)) != 0) {
        char m[256];
        snprintf(m, sizeof m, "want \"%s...\", got \"%s\"", want, err);
        fail("error message is not the expected one", m);
    }
}

static void check_line(const uint8_t *data, size_t size)
{
    const char *line = (const char *)data;
    struct ref r = ref_parse(data, size);

    /* A big errstr, pre-filled so a missing NUL shows. */
    char err[1024];
    memset(err, 'E', sizeof err);
    struct lapse_cmd cmd;
    memset(&cmd, 0xa5, sizeof cmd);
    enum lapse_line_result res = lapse_line_parse(line, size, &cmd, err, sizeof err);

    if (res != r.res) {
        char m[64];
        snprintf(m, sizeof m, "lapse_line_parse %d, reference %d", (int)res, (int)r.res);
        fail("verdict differs from the reference", m);
    }

    switch (res) {
    case LAPSE_LINE_OK:
        check_ok(data, size, &cmd, &r);
        /* What the parser accepts, the check for hand-built commands must
         * accept too. */
        if (lapse_cmd_check(&cmd, err, sizeof err) != 0)
            fail("lapse_cmd_check refuses a parsed command", err);
        break;
    case LAPSE_LINE_BLANK:
        break;
    case LAPSE_LINE_ERROR:
        check_error_text(err, sizeof err, &r, r.op);
        break;
    default:
        fail("unknown result", NULL);
    }

    /* The verdict never depends on the errstr buffer. */
    ASSERT(lapse_line_parse(line, size, &cmd, NULL, 0) == res);
    char one = 'S';
    ASSERT(lapse_line_parse(line, size, &cmd, &one, 0) == res);
    ASSERT(one == 'S'); /* size 0: not written */

    if (res == LAPSE_LINE_ERROR) {
        /* A small buffer gets the message cut, still NUL-terminated. */
        size_t cap = 1 + size % 24;
        char small[32];
        memset(small, 'E', sizeof small);
        ASSERT(lapse_line_parse(line, size, &cmd, small, cap) == res);
        ASSERT(memchr(small, '\0', cap) != NULL);
        ASSERT(strncmp(small, err, cap - 1) == 0);
        ASSERT(small[cap] == 'E'); /* nothing past the buffer */
    }
}

/*
 * The payload limit is 64 KiB, and libFuzzer seldom grows an input that far
 * (nor should the committed corpus hold such files). So an input that parses
 * with a payload is, when its length is a multiple of 256, parsed again with
 * the payload padded to exactly LAPSE_PAYLOAD_MAX bytes (must stay OK) and
 * LAPSE_PAYLOAD_MAX + 1 (must fail on the payload). Only one parse each, and
 * rarely: with coverage tracing, scanning 64 KiB is not cheap.
 */
static void check_padded(const uint8_t *data, size_t size)
{
    static char buf[LAPSE_ID_MAX + LAPSE_PAYLOAD_MAX + 128];
    struct lapse_cmd cmd;
    if (size % 256 != 0 ||
        lapse_line_parse((const char *)data, size, &cmd, NULL, 0) != LAPSE_LINE_OK ||
        cmd.payload == NULL)
        return;
    size_t head = (size_t)((const uint8_t *)cmd.payload - data) + cmd.payload_len;
    size_t n = head + (LAPSE_PAYLOAD_MAX - cmd.payload_len);
    ASSERT(n + 1 <= sizeof buf);
    memcpy(buf, data, head);
    memset(buf + head, 'p', n + 1 - head);

    struct lapse_cmd padded;
    ASSERT(lapse_line_parse(buf, n, &padded, NULL, 0) == LAPSE_LINE_OK);
    ASSERT(padded.payload == buf + (cmd.payload - (const char *)data));
    ASSERT(padded.payload_len == LAPSE_PAYLOAD_MAX);

    char err[128];
    ASSERT(lapse_line_parse(buf, n + 1, &padded, err, sizeof err) == LAPSE_LINE_ERROR);
    ASSERT(strncmp(err, "payload longer than ", 20) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_line(data, size);
    check_padded(data, size);
    return 0;
}
