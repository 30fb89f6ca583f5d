/*
 * flatjson — reads a flat JSON object in place (see flatjson.h).
 *
 * Invariants:
 *  - 0 only for input jansson (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
 *    top level an object) decodes to an object with exactly these members
 *    and values; every doubt is -1, never a guess.
 *  - Reads only within buf[0..len); writes only `out`.
 */
#include "flatjson.h"

#include <string.h>

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && is_ws(*p))
        p++;
    return p;
}

/* A string without escapes at p ('"'): its bytes in *s, *n; the byte after
 * it, or NULL. Only printable ASCII: no UTF-8 to validate, no control
 * bytes (which JSON forbids unescaped). */
static const char *string(const char *p, const char *end, const char **s, size_t *n)
{
    const char *q = ++p;
    while (q < end && *q != '"') {
        unsigned char c = (unsigned char)*q;
        if (c == '\\' || c < 0x20 || c >= 0x7f)
            return NULL;
        q++;
    }
    if (q == end)
        return NULL;
    *s = p;
    *n = (size_t)(q - p);
    return q + 1;
}

/* An integer at p: -?(0|[1-9][0-9]{0,17}), not followed by '.', 'e', 'E'
 * or a digit. The byte after it, or NULL. */
static const char *integer(const char *p, const char *end, int64_t *out)
{
    int neg = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    const char *d = p;
    int64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - d < 18)
        v = v * 10 + (*p++ - '0');
    if (p == d || (*d == '0' && p - d > 1))
        return NULL;
    if (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E'))
        return NULL;
    *out = neg ? -v : v;
    return p;
}

static const char *literal(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(end - p) < n || memcmp(p, word, n) != 0)
        return NULL;
    return p + n;
}

int lapse_flatjson_scan(const char *buf, size_t len, struct lapse_flatjson *out)
{
    const char *p = buf, *end = buf + len;
    out->n = 0;
    p = skip_ws(p, end);
    if (p == end || *p != '{')
        return -1;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        p++;
        goto done;
    }
    for (;;) {
        if (out->n == LAPSE_FLATJSON_MAX || p == end || *p != '"')
            return -1;
        const char *key;
        size_t key_len;
        if (!(p = string(p, end, &key, &key_len)))
            return -1;
        for (size_t i = 0; i < out->n; i++) /* a duplicate: jansson's error */
            if (out->m[i].key_len == key_len && memcmp(out->m[i].key, key, key_len) == 0)
                return -1;
        p = skip_ws(p, end);
        if (p == end || *p != ':')
            return -1;
        p = skip_ws(p + 1, end);
        if (p == end)
            return -1;
        struct lapse_flatjson_value v = {LAPSE_FLATJSON_NONE, NULL, 0, 0};
        if (*p == '"') {
            v.type = LAPSE_FLATJSON_STRING;
            p = string(p, end, &v.str, &v.len);
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            v.type = LAPSE_FLATJSON_INTEGER;
            p = integer(p, end, &v.num);
        } else if (*p == 't') {
            v.type = LAPSE_FLATJSON_TRUE;
            p = literal(p, end, "true");
        } else if (*p == 'f') {
            v.type = LAPSE_FLATJSON_FALSE;
            p = literal(p, end, "false");
        } else if (*p == 'n') {
            v.type = LAPSE_FLATJSON_NULL;
            p = literal(p, end, "null");
        } else {
            return -1; /* an object, an array, or not JSON */
        }
        if (!p)
            return -1;
        out->m[out->n].key = key;
        out->m[out->n].key_len = key_len;
        out->m[out->n].v = v;
        out->n++;
        p = skip_ws(p, end);
        if (p == end)
            return -1;
        if (*p == '}') {
            p++;
            break;
        }
        if (*p != ',')
            return -1;
        p = skip_ws(p + 1, end);
    }
done:
    return skip_ws(p, end) == end ? 0 : -1;
}

struct lapse_flatjson_value lapse_flatjson_get(const struct lapse_flatjson *o, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < o->n; i++)
        if (o->m[i].key_len == n && memcmp(o->m[i].key, name, n) == 0)
            return o->m[i].v;
    return (struct lapse_flatjson_value){LAPSE_FLATJSON_NONE, NULL, 0, 0};
}
