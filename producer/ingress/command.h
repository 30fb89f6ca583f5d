/*
 * command — a command message of the Kafka ingress, parsed (no I/O).
 *
 * Why it exists: the ingress accepts the producer's operations as JSON so
 * that any language can produce them; this module turns one such object into
 * the same struct lapse_cmd the line protocol gives, with the same limits
 * (producer/lib/line.h), so the producer library cannot tell the two apart.
 *
 *   {"op": "touch"|"extend"|"repeat"|"cancel"|"watch",
 *    "id": "<1..512 bytes, none of them 0x00-0x20 or 0x7f>",
 *    "in_ms": <ms from when the write is applied>  |  "at_ms": <unix ms>,
 *    "period_ms": <ms >= 1>,            repeat only, required there
 *    "payload": "<string, <= 64 KiB>"}  optional; not with cancel
 *
 * Exactly one of in_ms / at_ms, except for cancel, which takes neither.
 * Times are JSON integers 0..LAPSE_WHEN_MAX (1.0 or "5" are errors). A field
 * whose value is null counts as absent. Unknown fields are ignored, so
 * producers may add their own (trace ids, ...) and newer lapse versions may
 * add optional fields without breaking older ones. The ID and the payload are
 * the UTF-8 bytes of the JSON strings (\u0000 is allowed in a payload).
 *
 * Invariants: nothing is allocated by lapse_command_from_json (nor
 * lapse_command_from_flat); the command points into the JSON object (or
 * the bytes the flat object was read from), so it is valid as long as that object lives
 * and is not modified. Error strings are one short line of printable ASCII:
 * untrusted bytes are quoted through lapse_command_quote.
 */
#ifndef LAPSE_COMMAND_H
#define LAPSE_COMMAND_H

#include <jansson.h>
#include <stddef.h>

#include "flatjson.h"
#include "line.h"

/* Longest quoted token, in output characters; quote buffers need + 4. */

/*
 * Decodes `len` bytes as the ingress reads every message: one JSON object or
 * array, nothing after it, duplicate keys rejected, \u0000 allowed. Returns a
 * new reference (the caller json_decref()s it), or NULL with "invalid JSON:
 * <reason> at byte N" in errstr.
 */
json_t *lapse_command_load(const char *buf, size_t len, char *errstr, size_t size);

/* 1 if `json` is a command message (an object with a non-null "op"), else 0. */
int lapse_command_is(const json_t *json);

/*
 * Parses the command object `obj`. Returns 0 with `cmd` filled (pointers into
 * `obj`), or -1 with a reason such as `field "in_ms": expected a
 * non-negative integer` in errstr and `cmd` unspecified.
 */
int lapse_command_from_json(const json_t *obj, struct lapse_cmd *cmd, char *errstr, size_t size);

/* The same for a value read in place (flatjson.h): 1 when it has a
 * non-null "op"; and its command, with the same checks and reasons, the
 * command pointing into the scanned bytes. */
int lapse_command_is_flat(const struct lapse_flatjson *obj);
int lapse_command_from_flat(const struct lapse_flatjson *obj, struct lapse_cmd *cmd, char *errstr,
                            size_t size);

/*
 * Writes the `n` bytes at `p` into out (cap >= LAPSE_QUOTE_MAX + 4) as
 * printable ASCII: '"', '\\' and bytes outside 0x20..0x7e escaped, cut with
 * "..." past LAPSE_QUOTE_MAX characters. The caller adds the quotes.
 */
void lapse_command_quote(char *out, const char *p, size_t n);

#endif
