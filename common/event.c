/*
 * event — encodes a fire as the JSON value of its Kafka message.
 *
 * IDs and payloads are arbitrary bytes but JSON strings must be UTF-8, so a
 * value that is not strictly valid UTF-8 is written twice: as a readable
 * string with U+FFFD in place of each bad byte, and exactly, in base64, under
 * "<name>_b64". NUL counts as bad too: a "\u0000" in a string breaks many
 * consumers (C strings, some databases), and the base64 keeps it anyway.
 *
 * Written by hand, not with jansson: this runs once per fired ID on the
 * scanner's hot path, where building a jansson object (an allocation per
 * field) cost about as much CPU as the rest of the dispatch. The bytes are
 * exactly what jansson's json_dumps(JSON_COMPACT) wrote before (the unit
 * tests and the fuzz target, which parses every output with jansson, hold
 * it to that).
 *
 * Invariants:
 *  - Field order is fixed (type, ns, id, [id_b64], deadline_ms, fired_ms,
 *    shard, [payload, [payload_b64]], [seq]; a recovered event: type, ns,
 *    id, [id_b64], deadline_ms, fired_ms, recovered_ms, down_ms, shard).
 *  - "type" comes first, "timeout" for every fire and "recovered" when a
 *    watched ID came back: a consumer tells an event's kind before reading
 *    the rest.
 *  - Escaping is jansson's compact form: \" \\ \b \f \n \r \t, any other
 *    byte below 0x20 as \u00XX (upper-case hex); everything else verbatim.
 *  - The output needs at most lapse_event_size(ev) bytes, so one check of
 *    the buffer's size up front covers every write.
 */
#include "event.h"

#include <stdlib.h>
#include <string.h>

#include "decimal.h"

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

/* Writes s as the body of a JSON string (no quotes); returns the end. */
static char *put_escaped(char *o, const unsigned char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"':
            *o++ = '"';
            break;
        case '\\':
            *o++ = '\\';
            break;
        case '\b':
            *o++ = 'b';
            break;
        case '\f':
            *o++ = 'f';
            break;
        case '\n':
            *o++ = 'n';
            break;
        case '\r':
            *o++ = 'r';
            break;
        case '\t':
            *o++ = 't';
            break;
        default:
            memcpy(o, "u00", 3);
            o[3] = hex[c >> 4];
            o[4] = hex[c & 15];
            o += 5;
        }
    }
    return o;
}

/* The bytes with each byte that starts no valid sequence replaced by U+FFFD,
 * escaped; returns the end. */
static char *put_replaced(char *o, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(s + i, n - i);
        if (k == 0) {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            o = put_escaped(o, s + i, k);
            i += k;
        }
    }
    return o;
}

/* Standard base64 (RFC 4648 section 4) with padding; returns the end. */
static char *put_base64(char *o, const unsigned char *s, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        *o++ = tab[v >> 6 & 63];
        *o++ = tab[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)s[i + 1] << 8;
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *o++ = '=';
    }
    return o;
}

static char *put_lit(char *o, const char *lit)
{
    size_t n = strlen(lit);
    memcpy(o, lit, n);
    return o + n;
}

/*
 * ,"key":"<bytes>" and, when they are not valid UTF-8 and b64key is not
 * NULL, ,"b64key":"<base64>". `lead` is the separator before the key.
 */
static char *put_bytes(char *o, const char *lead, const char *key, const char *b64key,
                       const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    o = put_lit(o, lead);
    o = put_lit(o, key);
    o = put_lit(o, "\":\"");
    if (utf8_valid(s, n))
        return put_lit(put_escaped(o, s, n), "\"");
    o = put_lit(put_replaced(o, s, n), "\"");
    if (b64key) {
        o = put_lit(o, ",\"");
        o = put_lit(o, b64key);
        o = put_lit(o, "\":\"");
        o = put_lit(put_base64(o, s, n), "\"");
    }
    return o;
}

/* The most a string field and its base64 twin can take for n bytes: 6 per
 * byte escaped (\u00XX), plus the base64, plus names and quotes. */
static size_t bytes_max(size_t n)
{
    return 6 * n + (n + 2) / 3 * 4 + 64;
}

size_t lapse_event_size(const struct lapse_event *ev)
{
    size_t n = 160 + bytes_max(strlen(ev->ns)) + bytes_max(ev->id_len);
    if (ev->payload)
        n += bytes_max(ev->payload_len);
    return n;
}

size_t lapse_event_write(const struct lapse_event *ev, char *buf)
{
    int back = ev->recovered_ms > 0;
    char *o = put_lit(buf, back ? "{\"type\":\"recovered\"" : "{\"type\":\"timeout\"");
    o = put_bytes(o, ",\"", "ns", NULL, ev->ns, strlen(ev->ns));
    o = put_bytes(o, ",\"", "id", "id_b64", ev->id, ev->id_len);
    o = lapse_decimal(put_lit(o, ",\"deadline_ms\":"), ev->deadline_ms);
    o = lapse_decimal(put_lit(o, ",\"fired_ms\":"), ev->fired_ms);
    if (back) {
        o = lapse_decimal(put_lit(o, ",\"recovered_ms\":"), ev->recovered_ms);
        o = lapse_decimal(put_lit(o, ",\"down_ms\":"), ev->recovered_ms - ev->deadline_ms);
        o = lapse_decimal(put_lit(o, ",\"shard\":"), ev->shard);
        *o++ = '}';
        *o = '\0';
        return (size_t)(o - buf);
    }
    o = lapse_decimal(put_lit(o, ",\"shard\":"), ev->shard);
    if (ev->payload)
        o = put_bytes(o, ",\"", "payload", "payload_b64", ev->payload, ev->payload_len);
    if (ev->seq > 0)
        o = lapse_decimal(put_lit(o, ",\"seq\":"), ev->seq);
    *o++ = '}';
    *o = '\0';
    return (size_t)(o - buf);
}

char *lapse_event_encode(const struct lapse_event *ev, size_t *len)
{
    char *buf = malloc(lapse_event_size(ev));
    if (buf == NULL)
        return NULL;
    size_t n = lapse_event_write(ev, buf);
    if (len)
        *len = n;
    return buf;
}
