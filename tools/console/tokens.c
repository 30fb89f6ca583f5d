/*
 * tokens — see tokens.h. The set is a flat array: a console has a handful
 * of operators, and every token is compared on every write anyway.
 */
#include "tokens.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX (1024 * 1024) /* a tokens file larger than this is not one */

struct token {
    char name[LAPSE_TOKENS_NAME_MAX + 1];
    char value[LAPSE_TOKENS_MAX + 1];
    size_t len;
};

struct lapse_tokens {
    struct token *t; /* n of them */
    size_t n;
};

static int name_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

/* One line without its newline: 0 when blank or a comment, 1 with *out
 * filled, -1 with the reason in why. */
static int parse_line(const char *p, size_t len, struct token *out, const char **why)
{
    while (len && (p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    size_t i = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i == len || p[i] == '#')
        return 0;
    size_t n0 = i;
    while (i < len && name_byte((unsigned char)p[i]))
        i++;
    size_t nlen = i - n0;
    if (nlen == 0 || nlen > LAPSE_TOKENS_NAME_MAX || i == len || (p[i] != ' ' && p[i] != '\t')) {
        *why = "not \"NAME TOKEN\" (NAME: 1 to 64 letters, digits, '.', '_' or '-')";
        return -1;
    }
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    size_t t0 = i;
    while (i < len && (unsigned char)p[i] > 0x20 && (unsigned char)p[i] < 0x7f)
        i++;
    size_t tlen = i - t0;
    if (i != len) {
        *why = "the token holds a space or a byte that is not printable ASCII, or a third field";
        return -1;
    }
    if (tlen < LAPSE_TOKENS_MIN || tlen > LAPSE_TOKENS_MAX) {
        *why = "a token has 16 to 256 bytes";
        return -1;
    }
    memcpy(out->name, p + n0, nlen);
    out->name[nlen] = '\0';
    memcpy(out->value, p + t0, tlen);
    out->value[tlen] = '\0';
    out->len = tlen;
    return 1;
}

lapse_tokens *lapse_tokens_parse(const char *path, const char *text, size_t len, char *errstr,
                                 size_t size)
{
    lapse_tokens *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(errstr, size, "out of memory");
        return NULL;
    }
    size_t cap = 0, line = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        struct token tok;
        const char *why = NULL;
        line++;
        int rc = memchr(text + at, '\0', end - at) ? (why = "a NUL byte", -1)
                                                   : parse_line(text + at, end - at, &tok, &why);
        if (rc < 0) {
            snprintf(errstr, size, "%s:%zu: %s", path, line, why);
            lapse_tokens_free(t);
            return NULL;
        }
        if (rc > 0) {
            if (t->n == cap) {
                cap = cap ? cap * 2 : 8;
                struct token *g = realloc(t->t, cap * sizeof *g);
                if (!g) {
                    snprintf(errstr, size, "out of memory");
                    lapse_tokens_free(t);
                    return NULL;
                }
                t->t = g;
            }
            t->t[t->n++] = tok;
        }
        at = end + 1;
    }
    if (t->n == 0) {
        snprintf(errstr, size, "%s: holds no token (a line \"NAME TOKEN\" each)", path);
        lapse_tokens_free(t);
        return NULL;
    }
    return t;
}

lapse_tokens *lapse_tokens_load(const char *path, char *errstr, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(errstr, size, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(errstr, size, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    if (st.st_mode & 007) {
        snprintf(errstr, size,
                 "%s: others may read or write it (mode %04o): it holds passwords (chmod 600)",
                 path, (unsigned)(st.st_mode & 07777));
        close(fd);
        return NULL;
    }
    if (st.st_size > FILE_MAX) {
        snprintf(errstr, size, "%s: larger than %d bytes", path, FILE_MAX);
        close(fd);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    ssize_t n = 0;
    while (buf && got < (size_t)st.st_size &&
           (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
        got += (size_t)n;
    int e = errno;
    close(fd);
    if (!buf || n < 0) {
        snprintf(errstr, size, "%s: %s", path, buf ? strerror(e) : "out of memory");
        free(buf);
        return NULL;
    }
    lapse_tokens *t = lapse_tokens_parse(path, buf, got, errstr, size);
    memset(buf, 0, got); /* (the tokens stay in the set alone) */
    free(buf);
    return t;
}

const char *lapse_tokens_match(const lapse_tokens *t, const char *token, size_t len)
{
    const char *found = NULL;
    if (!t || len == 0 || len > LAPSE_TOKENS_MAX)
        return NULL;
    for (size_t i = 0; i < t->n; i++) {
        /* every byte of every token is looked at: no early exit tells how
         * much of a guess was right */
        unsigned char diff = (unsigned char)(t->t[i].len != len);
        for (size_t k = 0; k < LAPSE_TOKENS_MAX; k++) {
            unsigned char a = (unsigned char)(k < t->t[i].len ? t->t[i].value[k] : 0);
            unsigned char b = (unsigned char)(k < len ? token[k] : 0);
            diff |= a ^ b;
        }
        if (diff == 0 && !found)
            found = t->t[i].name;
    }
    return found;
}

size_t lapse_tokens_count(const lapse_tokens *t)
{
    return t ? t->n : 0;
}

void lapse_tokens_free(lapse_tokens *t)
{
    if (!t)
        return;
    if (t->t)
        memset(t->t, 0, t->n * sizeof *t->t);
    free(t->t);
    free(t);
}
