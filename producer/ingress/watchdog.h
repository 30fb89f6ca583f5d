/*
 * watchdog — turns a raw device signal into an `extend`, by config rules.
 *
 * Why it exists: a device pipeline should not have to reformat its signals
 * into lapse commands. The ingress hands every message that is not a command
 * here; the rules of ingress.rules (common/config.h, documented in
 * lapse.conf.example) say where the ID and the time come from and which
 * timeout applies. Pure: no I/O, no allocation, no clock (the arrival time
 * is left to Redis as a relative deadline).
 *
 * Rule i matches a signal when, in this order:
 *   1. its ID source is there: the message key (any non-empty key), or the
 *      top-level JSON field id_field holding a string or an integer;
 *   2. the ID starts with id_prefix (when set);
 *   3. the JSON field match_field equals match_value (when set): a string
 *      by its bytes, an integer or a boolean by its JSON text;
 *   4. its time is there: a Kafka timestamp for "kafka", the field
 *      time_field (non-null) for "field"; "arrival" always is.
 * The first rule that matches decides. A rule that needs a JSON field never
 * matches a value that is not a JSON object, so key-and-arrival rules work
 * for any bytes. Once a rule matched, a bad ID (not 1..512 bytes without
 * 0x00-0x20 / 0x7f; an id_field of another JSON type) or a bad time field
 * (not a non-negative integer, or time + timeout past LAPSE_WHEN_MAX) is an
 * error: the signal is not understood, rather than given to a later rule.
 *
 * The result is `extend ID @<time + timeout_ms>`, or `extend ID
 * +<timeout_ms>` for "arrival" (counted from when Redis applies it). Extend
 * never moves a deadline earlier, so out-of-order and replayed signals are
 * harmless.
 */
#ifndef LAPSE_WATCHDOG_H
#define LAPSE_WATCHDOG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "flatjson.h"
#include "line.h"

/* What a rule can look at in one Kafka message. */
struct lapse_signal {
    const char *key; /* message key bytes; NULL (or key_len 0) = none */
    size_t key_len;
    const json_t *json;                /* the value decoded, when it is a JSON object; else NULL */
    const struct lapse_flatjson *flat; /* or, with json NULL, the object read in place; or NULL */
    const char *json_err; /* when both are NULL: why, for the "no rule" reason; may be NULL */
    int64_t kafka_ts_ms;  /* the message timestamp in unix ms; -1 = none */
};

/* A matched signal. `cmd` points into the signal's key or JSON, or into
 * `idbuf` (an integer ID): valid while both the signal and this live. */
struct lapse_watchdog_result {
    struct lapse_cmd cmd; /* LAPSE_OP_EXTEND (LAPSE_OP_WATCH: the rule recovers), no payload */
    size_t rule;          /* index of the rule that matched */
    char idbuf[24];       /* the decimal text of an integer ID */
};

/*
 * Applies `rules[0..n)` to `sig`. Returns 0 with `res` filled; -1 when no
 * rule matches, errstr "no watchdog rule matches (rules[0]: ...; ...)"; -2
 * when rule i matched a malformed signal, errstr "rules[i]: <what is wrong>".
 * `res` is unspecified on error.
 */
int lapse_watchdog_apply(const struct lapse_ingress_rule *rules, size_t n,
                         const struct lapse_signal *sig, struct lapse_watchdog_result *res,
                         char *errstr, size_t size);

#endif
