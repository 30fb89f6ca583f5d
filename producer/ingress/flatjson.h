/*
 * flatjson — the members of a flat JSON object, read in place (no I/O, no
 * allocation).
 *
 * Why it exists: a raw signal is typically a small flat object
 * ({"device":"dev-17","ts":1795303123000,"temp":21}), and all a watchdog
 * rule needs of it is one or two top-level members. Building a jansson
 * tree for each one costs an allocation per member and per string, and a
 * free of each. This scanner reads such an object in one pass into a
 * fixed table of members that point into the message's bytes.
 *
 * It accepts only what it can judge exactly as the ingress's jansson load
 * would (command.h, lapse_command_load: one object, nothing after it,
 * duplicate keys rejected): an object of at most LAPSE_FLATJSON_MAX
 * members whose keys and string values hold printable ASCII without
 * escapes, and whose values are such strings, integers (at most 18 digits,
 * no leading zero), true, false or null. Anything else (nesting, escapes,
 * non-ASCII bytes, numbers with a fraction or exponent, a duplicate key,
 * a syntax error) returns -1 and the caller decodes the value with
 * jansson, which gives the verdict and the reason. So for every input the
 * ingress's outcome is the same with or without this scanner.
 */
#ifndef LAPSE_FLATJSON_H
#define LAPSE_FLATJSON_H

#include <stddef.h>
#include <stdint.h>

#define LAPSE_FLATJSON_MAX 16 /* members at most; more: -1 (jansson decides) */

enum lapse_flatjson_type {
    LAPSE_FLATJSON_NONE, /* no such member (lapse_flatjson_get) */
    LAPSE_FLATJSON_STRING,
    LAPSE_FLATJSON_INTEGER,
    LAPSE_FLATJSON_TRUE,
    LAPSE_FLATJSON_FALSE,
    LAPSE_FLATJSON_NULL,
};

/* One member's value. */
struct lapse_flatjson_value {
    enum lapse_flatjson_type type;
    const char *str; /* STRING: its bytes (in the scanned buffer), not NUL-terminated */
    size_t len;      /* STRING: its length */
    int64_t num;     /* INTEGER: its value */
};

struct lapse_flatjson {
    size_t n; /* members */
    struct {
        const char *key; /* in the scanned buffer, not NUL-terminated */
        size_t key_len;
        struct lapse_flatjson_value v;
    } m[LAPSE_FLATJSON_MAX];
};

/*
 * Scans the `len` bytes at `buf` into `out`. Returns 0 (out's pointers
 * point into buf: valid while it lives), or -1 when the value is not an
 * object of the kind above (out unspecified): decode it with jansson.
 */
int lapse_flatjson_scan(const char *buf, size_t len, struct lapse_flatjson *out);

/* The value of member `name` (NUL-terminated); type NONE when missing. */
struct lapse_flatjson_value lapse_flatjson_get(const struct lapse_flatjson *o, const char *name);

#endif
