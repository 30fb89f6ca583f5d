/*
 * watchdog — applies ingress.rules to a raw signal (see watchdog.h).
 *
 * Invariants:
 *  - A rule either misses (its ID, a match or its time is not there: try the
 *    next rule) or matches; a matched rule's malformed ID or time is an error
 *    of the signal, never a reason to try the next rule, so a broken signal
 *    cannot silently fall through to a catch-all with another timeout.
 *  - The "no rule matches" reason lists why each rule missed, in rule order,
 *    cut (with "...") to the caller's buffer: the operator reading a
 *    dead-letter header sees which rule was expected to take it.
 *  - Untrusted bytes in reasons are quoted (lapse_command_quote).
 */
#include "watchdog.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "command.h"

/* The caller's errstr, filled piecewise. */
struct out {
    char *buf;
    size_t size, len; /* len: bytes written so far, < size when size > 0 */
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
    if (o->buf == NULL || o->size == 0 || o->len + 1 >= o->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= o->size - o->len) { /* cut: end with "..." when there is room */
        o->len = o->size - 1;
        if (o->size > 4)
            memcpy(o->buf + o->size - 4, "...", 3);
    } else {
        o->len += (size_t)n;
    }
}

/* A member's value, from jansson or flatjson alike. */
struct val {
    enum { V_STRING, V_INTEGER, V_TRUE, V_FALSE, V_OTHER } type;
    const char *str; /* V_STRING */
    size_t len;
    int64_t num; /* V_INTEGER */
};

/* 1 when the value is a JSON object (decoded or read in place). */
static int has_object(const struct lapse_signal *sig)
{
    return sig->json != NULL || sig->flat != NULL;
}

/* The member `name` of the signal's JSON object into *v: 1, or 0 when it
 * is missing or null (or when the value is not an object). */
static int field(const struct lapse_signal *sig, const char *name, struct val *v)
{
    memset(v, 0, sizeof *v);
    if (sig->json) {
        const json_t *j = json_object_get(sig->json, name);
        if (j == NULL || json_is_null(j))
            return 0;
        if (json_is_string(j)) {
            v->type = V_STRING;
            v->str = json_string_value(j);
            v->len = json_string_length(j);
        } else if (json_is_integer(j)) {
            v->type = V_INTEGER;
            v->num = json_integer_value(j);
        } else {
            v->type = json_is_true(j) ? V_TRUE : json_is_false(j) ? V_FALSE : V_OTHER;
        }
        return 1;
    }
    if (sig->flat == NULL)
        return 0;
    struct lapse_flatjson_value f = lapse_flatjson_get(sig->flat, name);
    switch (f.type) {
    case LAPSE_FLATJSON_NONE:
    case LAPSE_FLATJSON_NULL:
        return 0;
    case LAPSE_FLATJSON_STRING:
        v->type = V_STRING;
        v->str = f.str;
        v->len = f.len;
        return 1;
    case LAPSE_FLATJSON_INTEGER:
        v->type = V_INTEGER;
        v->num = f.num;
        return 1;
    case LAPSE_FLATJSON_TRUE:
    case LAPSE_FLATJSON_FALSE:
        v->type = f.type == LAPSE_FLATJSON_TRUE ? V_TRUE : V_FALSE;
        return 1;
    }
    return 0;
}

/* Why rule `r` needs the JSON object, when it does and there is none. */
static int needs_json(const struct lapse_ingress_rule *r)
{
    return r->id_field || r->match_field || r->time_source == LAPSE_TIME_FIELD;
}

/* Does JSON value `v` equal the configured text `want`? */
static int value_equals(const struct val *v, const char *want)
{
    char num[32];
    if (v->type == V_STRING)
        return v->len == strlen(want) && memcmp(v->str, want, v->len) == 0;
    if (v->type == V_INTEGER) {
        snprintf(num, sizeof num, "%" PRId64, v->num);
        return strcmp(num, want) == 0;
    }
    if (v->type == V_TRUE || v->type == V_FALSE)
        return strcmp(v->type == V_TRUE ? "true" : "false", want) == 0;
    return 0;
}

static const char *id_source(const struct lapse_ingress_rule *r, char *buf, size_t size);

/* Checks the ID against the producer's rules; rule r says where it came from. */
static int check_id(const char *id, size_t n, size_t i, const struct lapse_ingress_rule *r,
                    struct out *o)
{
    char buf[300];
    const char *src = NULL;
    if (n > LAPSE_ID_MAX) {
        src = id_source(r, buf, sizeof buf);
        put(o, "rules[%zu]: %s: ID must be 1..%d bytes (got %zu)", i, src, LAPSE_ID_MAX, n);
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)id[k];
        if (c == ' ') {
            src = id_source(r, buf, sizeof buf);
            put(o, "rules[%zu]: %s: ID contains a space at offset %zu", i, src, k);
            return -1;
        }
        if (c < 0x20 || c == 0x7f) {
            src = id_source(r, buf, sizeof buf);
            put(o, "rules[%zu]: %s: ID contains control byte 0x%02x at offset %zu", i, src, c, k);
            return -1;
        }
    }
    return 0;
}

enum outcome { MISS, MATCH, BAD };

/*
 * Tries rule i. MISS appends "rules[i]: why; " to `miss`; BAD writes the
 * error to `o`; MATCH fills `res`.
 */
/* Where rule r takes the ID from, for reasons: "message key" or
 * "field \"NAME\"" (formatted only when a reason needs it). */
static const char *id_source(const struct lapse_ingress_rule *r, char *buf, size_t size)
{
    if (r->id_field == NULL)
        return "message key";
    snprintf(buf, size, "field \"%s\"", r->id_field);
    return buf;
}

static enum outcome try_rule(const struct lapse_ingress_rule *r, size_t i,
                             const struct lapse_signal *sig, struct lapse_watchdog_result *res,
                             struct out *miss, struct out *o)
{
    char q[LAPSE_QUOTE_MAX + 4], src[300];
    const char *id;
    size_t id_len;
    struct val idv, mv, tv;

    if (needs_json(r) && !has_object(sig)) {
        put(miss, "rules[%zu]: value is not a JSON object; ", i);
        return MISS;
    }
    /* 1. the ID */
    if (r->id_field == NULL) {
        if (sig->key == NULL || sig->key_len == 0) {
            put(miss, "rules[%zu]: no message key; ", i);
            return MISS;
        }
        id = sig->key;
        id_len = sig->key_len;
    } else {
        if (!field(sig, r->id_field, &idv)) {
            put(miss, "rules[%zu]: no %s; ", i, id_source(r, src, sizeof src));
            return MISS;
        }
        if (idv.type == V_STRING) {
            id = idv.str;
            id_len = idv.len;
        } else if (idv.type == V_INTEGER) {
            id_len = (size_t)snprintf(res->idbuf, sizeof res->idbuf, "%" PRId64, idv.num);
            id = res->idbuf;
        } else {
            put(o, "rules[%zu]: %s: expected a string or integer ID", i,
                id_source(r, src, sizeof src));
            return BAD;
        }
        if (id_len == 0) {
            put(o, "rules[%zu]: %s: ID must be 1..%d bytes (got 0)", i,
                id_source(r, src, sizeof src), LAPSE_ID_MAX);
            return BAD;
        }
    }
    /* 2. the prefix */
    if (r->id_prefix &&
        (id_len < strlen(r->id_prefix) || memcmp(id, r->id_prefix, strlen(r->id_prefix)) != 0)) {
        lapse_command_quote(q, id, id_len);
        put(miss, "rules[%zu]: ID \"%s\" lacks prefix \"%s\"; ", i, q, r->id_prefix);
        return MISS;
    }
    /* 3. the match */
    if (r->match_field) {
        if (!field(sig, r->match_field, &mv)) {
            put(miss, "rules[%zu]: no field \"%s\"; ", i, r->match_field);
            return MISS;
        }
        if (!value_equals(&mv, r->match_value)) {
            put(miss, "rules[%zu]: field \"%s\" is not \"%s\"; ", i, r->match_field,
                r->match_value);
            return MISS;
        }
    }
    /* 4. the time */
    int64_t t = 0;
    if (r->time_source == LAPSE_TIME_KAFKA) {
        if (sig->kafka_ts_ms < 0) {
            put(miss, "rules[%zu]: no Kafka timestamp; ", i);
            return MISS;
        }
        t = sig->kafka_ts_ms;
    } else if (r->time_source == LAPSE_TIME_FIELD) {
        if (!field(sig, r->time_field, &tv)) {
            put(miss, "rules[%zu]: no field \"%s\"; ", i, r->time_field);
            return MISS;
        }
        if (tv.type != V_INTEGER || tv.num < 0) {
            put(o, "rules[%zu]: field \"%s\": expected a non-negative integer (unix ms)", i,
                r->time_field);
            return BAD;
        }
        t = tv.num;
    }
    /* matched: now the ID and the deadline must be right */
    if (check_id(id, id_len, i, r, o) < 0)
        return BAD;
    if (r->time_source != LAPSE_TIME_ARRIVAL && t > LAPSE_WHEN_MAX - r->timeout_ms) {
        put(o, "rules[%zu]: %s + timeout_ms is past %" PRId64 " ms", i,
            r->time_source == LAPSE_TIME_FIELD ? "the time field" : "the Kafka timestamp",
            (int64_t)LAPSE_WHEN_MAX);
        return BAD;
    }
    memset(&res->cmd, 0, sizeof res->cmd);
    res->cmd.op = r->recover ? LAPSE_OP_WATCH : LAPSE_OP_EXTEND;
    res->cmd.id = id;
    res->cmd.id_len = id_len;
    res->cmd.when_kind = r->time_source == LAPSE_TIME_ARRIVAL ? LAPSE_WHEN_REL : LAPSE_WHEN_ABS;
    res->cmd.when_ms = (r->time_source == LAPSE_TIME_ARRIVAL ? 0 : t) + r->timeout_ms;
    res->rule = i;
    return MATCH;
}

int lapse_watchdog_apply(const struct lapse_ingress_rule *rules, size_t n,
                         const struct lapse_signal *sig, struct lapse_watchdog_result *res,
                         char *errstr, size_t size)
{
    struct out o = {errstr, size, 0};
    if (errstr && size)
        errstr[0] = '\0';
    if (n == 0) {
        put(&o, "not a command, and no watchdog rules are configured");
    } else {
        char why[384]; /* the misses; cut to the caller's size below anyway */
        struct out miss = {why, sizeof why, 0};
        why[0] = '\0';
        for (size_t i = 0; i < n; i++) {
            switch (try_rule(&rules[i], i, sig, res, &miss, &o)) {
            case MATCH:
                return 0;
            case BAD:
                return -2;
            case MISS:
                break;
            }
        }
        if (miss.len >= 2 && strcmp(why + miss.len - 2, "; ") == 0)
            why[miss.len - 2] = '\0';
        put(&o, "no watchdog rule matches (%s)", why);
    }
    if (!has_object(sig) && sig->json_err)
        put(&o, "; value: %s", sig->json_err);
    return -1;
}
