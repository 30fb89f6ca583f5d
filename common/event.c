/*
 * event — encodes a fire as the JSON value of its Kafka message.
 *
 * IDs and payloads are arbitrary bytes but JSON strings must be UTF-8, so a
 * value that is not strictly valid UTF-8 is written twice: as a readable
 * string with U+FFFD in place of each bad byte, and exactly, in base64, under
 * "<name>_b64". NUL counts as bad too: a "\u0000" in a string breaks many
 * consumers (C strings, some databases), and the base64 keeps it anyway.
 *
 * Invariants:
 *  - Field order is fixed (ns, id, [id_b64], deadline_ms, fired_ms, shard,
 *    [payload, [payload_b64]], [seq]); jansson keeps insertion order.
 *  - Valid strings, the common case, are handed to jansson as they are: the
 *    replacement copy and the base64 are built only for bad ones.
 *  - The returned buffer comes from our malloc(), not jansson's allocator,
 *    so the caller's free() is right whatever json_set_alloc_funcs says.
 */
#include "event.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/*
 * Length of the valid UTF-8 sequence starting at s[0] (1..4 bytes, at most
 * n), or 0 when s[0] does not start one. Strict (RFC 3629): no overlongs, no
 * surrogates, nothing past U+10FFFF, and no NUL.
 */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c >= 0x01 && c <= 0x7f)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the 2nd byte */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* past U+10FFFF */
    } else {
        return 0; /* NUL, continuation byte, 0xc0/0xc1, 0xf5..0xff */
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

static int utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(s + i, n - i);
        if (k == 0)
            return 0;
        i += k;
    }
    return 1;
}

/* A JSON string of s with each byte that starts no valid sequence replaced
 * by U+FFFD (3 bytes in UTF-8, hence the 3n bound). NULL on ENOMEM. */
static json_t *utf8_replaced(const unsigned char *s, size_t n)
{
    char *buf = malloc(n * 3 + 1);
    if (buf == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(s + i, n - i);
        if (k == 0) {
            memcpy(buf + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(buf + o, s + i, k);
            o += k;
            i += k;
        }
    }
    json_t *j = json_stringn(buf, o);
    free(buf);
    return j;
}

/* Standard base64 (RFC 4648 section 4) with padding, as a JSON string. */
static json_t *base64(const unsigned char *s, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t outn = (n + 2) / 3 * 4;
    char *out = malloc(outn + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        out[o++] = tab[v >> 18 & 63];
        out[o++] = tab[v >> 12 & 63];
        out[o++] = tab[v >> 6 & 63];
        out[o++] = tab[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)s[i + 1] << 8;
        out[o++] = tab[v >> 18 & 63];
        out[o++] = tab[v >> 12 & 63];
        out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
        out[o++] = '=';
    }
    json_t *j = json_stringn(out, o);
    free(out);
    return j;
}

/*
 * Sets obj[key] to the bytes as a string and, when they are not valid UTF-8
 * and b64key is not NULL, obj[b64key] to their base64. 0, or -1 on ENOMEM.
 */
static int set_bytes(json_t *obj, const char *key, const char *b64key, const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    if (utf8_valid(s, n))
        return json_object_set_new(obj, key, json_stringn(p, n));
    if (json_object_set_new(obj, key, utf8_replaced(s, n)) != 0)
        return -1;
    if (b64key && json_object_set_new(obj, b64key, base64(s, n)) != 0)
        return -1;
    return 0;
}

/* A growing output buffer for json_dump_callback. */
struct out {
    char *buf;
    size_t len, cap; /* cap > len always, room for the final NUL */
};

static int out_write(const char *p, size_t n, void *data)
{
    struct out *o = data;
    if (o->len + n >= o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (o->len + n >= cap)
            cap *= 2;
        char *b = realloc(o->buf, cap);
        if (b == NULL)
            return -1;
        o->buf = b;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
    return 0;
}

char *lapse_event_encode(const struct lapse_event *ev, size_t *len)
{
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    /* json_object_set_new returns -1 (and frees nothing twice) when the
     * value is NULL, so one check per field also covers allocation failure. */
    int bad = set_bytes(o, "ns", NULL, ev->ns, strlen(ev->ns)) ||
              set_bytes(o, "id", "id_b64", ev->id, ev->id_len) ||
              json_object_set_new(o, "deadline_ms", json_integer(ev->deadline_ms)) ||
              json_object_set_new(o, "fired_ms", json_integer(ev->fired_ms)) ||
              json_object_set_new(o, "shard", json_integer(ev->shard));
    if (!bad && ev->payload)
        bad = set_bytes(o, "payload", "payload_b64", ev->payload, ev->payload_len);
    if (!bad && ev->seq > 0)
        bad = json_object_set_new(o, "seq", json_integer(ev->seq));

    struct out out = {NULL, 0, 0};
    if (!bad)
        bad = json_dump_callback(o, out_write, &out, JSON_COMPACT) != 0 || out.buf == NULL;
    json_decref(o);
    if (bad) {
        free(out.buf);
        return NULL;
    }
    out.buf[out.len] = '\0';
    if (len)
        *len = out.len;
    return out.buf;
}
