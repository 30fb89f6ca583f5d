/*
 * fuzz_event — libFuzzer target for lapse_event_encode (the scanner's
 * hand-written encoder, lapse_event_write, in a malloc'd buffer): arbitrary
 * ns, id and payload bytes and arbitrary integers in, and the JSON out must
 * be what event.h promises to a consumer, as judged by jansson:
 *  - it parses with jansson (no JSON_ALLOW_NUL, duplicates rejected), is one
 *    line, and *len is its exact length;
 *  - the keys are exactly type, ns, id, [id_b64], deadline_ms, fired_ms,
 *    shard, [payload, [payload_b64]], [seq], in that order, and type is
 *    "timeout";
 *  - a value that is valid UTF-8 without NUL comes back byte for byte, with
 *    no _b64 field; any other value comes back exactly from its _b64 field
 *    (strict, canonical base64), and its string field is the bytes with each
 *    byte that starts no valid sequence replaced by U+FFFD;
 *  - the integers come back exactly; seq appears iff > 0.
 * "Valid UTF-8" is decided by jansson's own validator (json_stringn), not by
 * event.c's, so the two implementations check each other.
 *
 * Input layout: a 32-byte header (zero-padded when the input is shorter),
 * then ns, id and payload bytes back to back:
 *   [0] flags: bit 0 = payload present (the other bits are unused)
 *   [1] ns length (mod 33)   [2..3] id length (LE; clipped to what is left)
 *   [4..11] deadline_ms  [12..19] fired_ms  [20..23] shard  [24..31] seq
 * The ns stops at its first NUL (it is a C string); the payload is the rest.
 */
#include "event.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME "fuzz_event"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER 32

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A heap copy of exactly n bytes (at least 1 allocated, so a present empty
 * value is still non-NULL), so ASan sees any read past the end. */
static char *dup_exact(const uint8_t *p, size_t n)
{
    char *s = malloc(n ? n : 1);
    if (s == NULL)
        abort();
    if (n)
        memcpy(s, p, n);
    return s;
}

/* Valid UTF-8 without NUL, per jansson's validator. */
static int oracle_valid(const char *p, size_t n)
{
    if (memchr(p, '\0', n) != NULL)
        return 0;
    json_t *j = json_stringn(p, n);
    json_decref(j);
    return j != NULL;
}

/* The expected readable string: at each position, the shortest prefix that
 * is valid UTF-8 is one code point and is copied; when there is none, the
 * byte becomes U+FFFD. Returns a malloc'd buffer, its length in *outn. */
static char *oracle_replaced(const char *p, size_t n, size_t *outn)
{
    char *out = malloc(3 * n + 1);
    if (out == NULL)
        abort();
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)p[i];
        size_t k = c >= 0x01 && c <= 0x7f; /* ASCII but NUL: no need to ask */
        for (size_t t = 1; k == 0 && t <= 4 && i + t <= n; t++)
            if (oracle_valid(p + i, t)) {
                k = t;
                break;
            }
        if (k == 0) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, p + i, k);
            o += k;
            i += k;
        }
    }
    *outn = o;
    return out;
}

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Strict RFC 4648 decoding: padded, standard alphabet, unused bits zero.
 * Returns a malloc'd buffer and its length, or NULL when s is not canonical. */
static uint8_t *b64_decode(const char *s, size_t n, size_t *outn)
{
    if (n % 4 != 0)
        return NULL;
    uint8_t *out = malloc(n / 4 * 3 + 1);
    if (out == NULL)
        abort();
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int last = i + 4 == n;
        int pad = 0;
        int v[4];
        for (int k = 0; k < 4; k++) {
            if (last && s[i + k] == '=' && k >= 2) {
                pad++;
                v[k] = 0;
                continue;
            }
            v[k] = pad ? -1 : b64val(s[i + k]);
            if (v[k] < 0)
                goto bad;
        }
        if (pad == 1 && s[i + 2] == '=') /* "xx=y" */
            goto bad;
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (uint8_t)(w >> 16);
        if (pad < 2)
            out[o++] = (uint8_t)(w >> 8);
        else if (w & 0xffff)
            goto bad; /* non-canonical: leftover bits */
        if (pad < 1)
            out[o++] = (uint8_t)w;
        else if (w & 0xff)
            goto bad;
    }
    *outn = o;
    return out;
bad:
    free(out);
    return NULL;
}

/* Checks obj[key] (and obj[b64key] when b64key is set) against the bytes. */
static void check_bytes(json_t *obj, const char *key, const char *b64key, const char *p, size_t n)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v))
        fail("field missing or not a string", key);
    const char *s = json_string_value(v);
    size_t sn = json_string_length(v);
    json_t *b = b64key ? json_object_get(obj, b64key) : NULL;

    if (oracle_valid(p, n)) {
        if (sn != n || memcmp(s, p, n) != 0)
            fail("valid UTF-8 did not round-trip", key);
        if (b != NULL)
            fail("_b64 field for a valid value", b64key);
        return;
    }
    size_t wn;
    char *want = oracle_replaced(p, n, &wn);
    if (sn != wn || memcmp(s, want, wn) != 0)
        fail("replacement string differs", key);
    free(want);
    if (b64key == NULL)
        return;
    if (!json_is_string(b))
        fail("_b64 field missing for a non-UTF-8 value", b64key);
    size_t dn;
    uint8_t *d = b64_decode(json_string_value(b), json_string_length(b), &dn);
    if (d == NULL)
        fail("_b64 field is not canonical base64", b64key);
    if (dn != n || memcmp(d, p, n) != 0)
        fail("_b64 field does not decode to the bytes", b64key);
    free(d);
}

static void check_int(json_t *obj, const char *key, int64_t want)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        fail("field missing or not an integer", key);
    if (json_integer_value(v) != want)
        fail("integer did not round-trip", key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t h[HEADER] = {0};
    memcpy(h, data, size < HEADER ? size : HEADER);
    const uint8_t *rest = size > HEADER ? data + HEADER : data;
    size_t left = size > HEADER ? size - HEADER : 0;

    size_t ns_n = h[1] % 33;
    if (ns_n > left)
        ns_n = left;
    char ns[33];
    memcpy(ns, rest, ns_n);
    ns[ns_n] = '\0';
    rest += ns_n, left -= ns_n;

    size_t id_n = (size_t)le(h + 2, 2);
    if (id_n > left)
        id_n = left;
    char *id = dup_exact(rest, id_n);
    rest += id_n, left -= id_n;

    char *payload = (h[0] & 1) ? dup_exact(rest, left) : NULL;

    struct lapse_event ev = {
        .ns = ns,
        .id = id,
        .id_len = id_n,
        .deadline_ms = (int64_t)le(h + 4, 8),
        .fired_ms = (int64_t)le(h + 12, 8),
        .shard = (uint32_t)le(h + 20, 4),
        .payload = payload,
        .payload_len = payload ? left : 0,
        .seq = (int64_t)le(h + 24, 8),
    };

    size_t len = (size_t)-1;
    char *out = lapse_event_encode(&ev, &len);
    if (out == NULL) /* malloc failed: nothing to check */
        goto done;
    if (len != strlen(out))
        fail("*len is not the string's length", NULL);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)out[i] < 0x20)
            fail("raw control byte in the JSON text", NULL);

    json_error_t e;
    json_t *j = json_loadb(out, len, JSON_REJECT_DUPLICATES, &e);
    if (j == NULL)
        fail("output does not parse", e.text);
    if (!json_is_object(j))
        fail("output is not an object", NULL);

    /* The keys, in order. */
    const char *want[10];
    size_t nk = 0;
    want[nk++] = "type";
    want[nk++] = "ns";
    want[nk++] = "id";
    if (!oracle_valid(id, id_n))
        want[nk++] = "id_b64";
    want[nk++] = "deadline_ms";
    want[nk++] = "fired_ms";
    want[nk++] = "shard";
    if (payload) {
        want[nk++] = "payload";
        if (!oracle_valid(payload, ev.payload_len))
            want[nk++] = "payload_b64";
    }
    if (ev.seq > 0)
        want[nk++] = "seq";
    if (json_object_size(j) != nk)
        fail("wrong number of keys", out);
    size_t k = 0;
    const char *key;
    json_t *val;
    json_object_foreach(j, key, val)
    {
        if (k >= nk || strcmp(key, want[k]) != 0)
            fail("keys out of order", key);
        k++;
    }

    check_bytes(j, "type", NULL, "timeout", 7);
    check_bytes(j, "ns", NULL, ns, strlen(ns));
    check_bytes(j, "id", "id_b64", id, id_n);
    if (payload)
        check_bytes(j, "payload", "payload_b64", payload, ev.payload_len);
    check_int(j, "deadline_ms", ev.deadline_ms);
    check_int(j, "fired_ms", ev.fired_ms);
    check_int(j, "shard", ev.shard);
    if (ev.seq > 0)
        check_int(j, "seq", ev.seq);

    /* NULL len is allowed and gives the same text. */
    char *again = lapse_event_encode(&ev, NULL);
    if (again == NULL || strcmp(again, out) != 0)
        fail("encoding with len NULL differs", NULL);

    free(again);
    json_decref(j);
    free(out);
done:
    free(payload);
    free(id);
    return 0;
}
