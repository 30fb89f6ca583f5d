/*
 * line — the producer line protocol, parsed from bytes (no I/O).
 *
 *   touch  <id> <when> [<payload>]
 *   extend <id> <when> [<payload>]
 *   repeat <id> <when> <period_ms> [<payload>]
 *   cancel <id>
 *   watch  <id> <when> [<payload>]
 *
 * watch is extend with recovery on: the ID is remembered as offline once its
 * timeout fires, and its next touch/extend/watch sends a "recovered" event
 * (protocol.md, "Recovered events"). The ID keeps recovery on until a
 * cancel or a repeat.
 *
 * Fields are separated by one or more spaces. <id> is 1..512 bytes, none of
 * them 0x00-0x20 or 0x7f. <when> is +<ms> (relative to the moment the write is
 * first applied, on the shard's Redis clock; sent again, the write keeps
 * the deadline that first application set) or
 * @<unix_ms>. <payload> is the rest of the line after the spaces following
 * the last field, a trailing \r dropped, at most 64 KiB. The parsed command
 * points into the caller's buffer: nothing is copied or allocated.
 */
#ifndef LAPSE_LINE_H
#define LAPSE_LINE_H

#include <stddef.h>
#include <stdint.h>

#define LAPSE_ID_MAX 512
#define LAPSE_PAYLOAD_MAX 65536
#define LAPSE_WHEN_MAX INT64_C(8640000000000000) /* ms; the limit of JS Date */

enum lapse_op {
    LAPSE_OP_TOUCH = 1,
    LAPSE_OP_EXTEND,
    LAPSE_OP_REPEAT,
    LAPSE_OP_CANCEL,
    LAPSE_OP_WATCH, /* an extend with recovery on: see lapse_line_parse */
};

enum lapse_when_kind {
    LAPSE_WHEN_NONE = 0, /* cancel */
    LAPSE_WHEN_REL,      /* +ms: from the moment the write is applied */
    LAPSE_WHEN_ABS,      /* @unix_ms */
};

struct lapse_cmd {
    enum lapse_op op;
    const char *id; /* points into the line */
    size_t id_len;
    enum lapse_when_kind when_kind;
    int64_t when_ms;     /* 0..LAPSE_WHEN_MAX */
    int64_t period_ms;   /* repeat only, >= 1 */
    const char *payload; /* NULL when the line has none */
    size_t payload_len;
};

enum lapse_line_result {
    LAPSE_LINE_OK = 0,
    LAPSE_LINE_BLANK, /* empty or only spaces: ignore it */
    LAPSE_LINE_ERROR, /* errstr says why */
};

/*
 * Parses one line of `len` bytes (without its '\n'; a trailing '\r' is
 * dropped here). On LAPSE_LINE_OK fills `cmd`, whose pointers point into
 * `line`. On LAPSE_LINE_ERROR writes a short reason (no "line N:" prefix) to
 * errstr and leaves `cmd` unspecified.
 */
enum lapse_line_result lapse_line_parse(const char *line, size_t len, struct lapse_cmd *cmd,
                                        char *errstr, size_t size);

/*
 * Checks a command built by hand (the library's callers, the Kafka ingress)
 * against the same rules the parser enforces: op, id bytes and length, time
 * kind and range, period, payload size. Returns 0, or -1 with a short reason
 * in errstr.
 */
int lapse_cmd_check(const struct lapse_cmd *cmd, char *errstr, size_t size);

/*
 * Writes the `n` bytes at `p` into out (NUL-terminated, room for
 * LAPSE_QUOTE_MAX + 4 bytes) as printable ASCII for an error message: bytes
 * outside 0x20..0x7e, the quote and the backslash are escaped, and a token
 * whose escaped form passes LAPSE_QUOTE_MAX characters is cut there and
 * marked with "...". The caller puts the quotes around it.
 */
#define LAPSE_QUOTE_MAX 40
void lapse_quote(char *out, const char *p, size_t n);

/* "touch", "extend", "repeat", "cancel", "watch"; "?" for any other value. */
const char *lapse_op_name(enum lapse_op op);

/* The op's arguments in the line protocol, "<id> <when> [<payload>]" for
 * touch; NULL for a value that is no op. The ops are numbered from
 * LAPSE_OP_TOUCH up without a gap, so a list of them all runs from there
 * to the first NULL. */
const char *lapse_op_args(enum lapse_op op);

#endif
