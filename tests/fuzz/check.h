/*
 * check — what every fuzz harness here needs to report a broken invariant:
 * fail() names the harness (FUZZ_NAME, defined before including this) and
 * aborts, which libFuzzer reports with the input that did it; ASSERT is
 * fail() for a condition; fuzz_error_text checks a parser's error message
 * the same way in every harness (NUL-terminated within its buffer, not
 * empty, shorter than max, printable ASCII). Header-only: each harness is
 * one program.
 */
#ifndef LAPSE_FUZZ_CHECK_H
#define LAPSE_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_NAME
#error "define FUZZ_NAME (the harness's name) before including check.h"
#endif

static void fail(const char *what, const char *detail) __attribute__((noreturn, unused));
static void fail(const char *what, const char *detail)
{
    fprintf(stderr, FUZZ_NAME ": invariant broken: %s%s%s\n", what, detail ? ": " : "",
            detail ? detail : "");
    abort();
}

#define ASSERT(cond)           \
    do {                       \
        if (!(cond))           \
            fail(#cond, NULL); \
    } while (0)

/* The error message in err (a buffer of cap bytes): NUL-terminated, not
 * empty, shorter than max, printable ASCII. Returns its length. */
static size_t fuzz_error_text(const char *err, size_t cap, size_t max) __attribute__((unused));
static size_t fuzz_error_text(const char *err, size_t cap, size_t max)
{
    const char *nul = memchr(err, '\0', cap);
    if (nul == NULL)
        fail("error message not NUL-terminated", NULL);
    size_t n = (size_t)(nul - err);
    if (n == 0)
        fail("empty error message", NULL);
    if (n >= max)
        fail("error message too long", err);
    for (size_t i = 0; i < n; i++)
        if (err[i] < 0x20 || err[i] > 0x7e)
            fail("error message has a non-printable byte", err);
    return n;
}

#endif
