/*
 * tokens — the console's write tokens (console.tokens_file): who may cancel
 * an ID or set its deadline from lapse-console.
 *
 * The file holds one token a line, "NAME TOKEN": NAME (1..64 bytes of
 * letters, digits, '.', '_', '-') is what the log says did the write, TOKEN
 * (16..256 printable bytes, no spaces) is what a request sends as
 * "Authorization: Bearer TOKEN". Blank lines and lines starting with '#'
 * are skipped. Anything else is refused with the line's number, never
 * quoting the line (it may hold a token).
 *
 * A token is a password: a file that others may read, or that holds no
 * token, is refused at start (lapse_tokens_load), and the comparison takes
 * the same time wherever the tokens differ.
 */
#ifndef LAPSE_CONSOLE_TOKENS_H
#define LAPSE_CONSOLE_TOKENS_H

#include <stddef.h>

#define LAPSE_TOKENS_NAME_MAX 64
#define LAPSE_TOKENS_MIN 16  /* shortest token taken: guessing must not pay */
#define LAPSE_TOKENS_MAX 256 /* longest */

typedef struct lapse_tokens lapse_tokens;

/* Parses `len` bytes of a tokens file (`path` only names it in errors).
 * Returns the set (free with lapse_tokens_free), or NULL with the reason
 * in errstr ("PATH:LINE: reason", or "PATH: holds no token"). */
lapse_tokens *lapse_tokens_parse(const char *path, const char *text, size_t len, char *errstr,
                                 size_t size);

/* Reads and parses `path`, refusing a file that does not exist, is not a
 * regular file, can be read or written by others (mode & 007: 0600 or 0640
 * are taken), or holds no token. NULL with the reason in errstr. */
lapse_tokens *lapse_tokens_load(const char *path, char *errstr, size_t size);

/* The name of the token equal to the `len` bytes at `token`, or NULL when
 * none is. Compares with every token in full, whatever matched. The name
 * lives as long as the set. */
const char *lapse_tokens_match(const lapse_tokens *t, const char *token, size_t len);

/* How many tokens the set holds. */
size_t lapse_tokens_count(const lapse_tokens *t);

void lapse_tokens_free(lapse_tokens *t); /* accepts NULL */

#endif
