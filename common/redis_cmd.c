/*
 * redis_cmd — a command as the backends take it (struct redis_cmd,
 * redis_priv.h): its words as argv, or as a hiredis format with its
 * arguments (lapse_redis_command's), and what routing needs: its name and
 * the key a cluster routes it by (the first key of EVAL/EVALSHA, argv[1] of
 * anything else, none for keyless commands).
 *
 * A format's words are read here without formatting the command: the format
 * is walked as hiredis's redisvFormatCommand walks it (words split at
 * spaces; %s, %b, %% and printf's integer and double conversions, each
 * consuming its arguments), and only the first REDIS_CMD_WORDS words are
 * composed, into cmd->own. The connection formats the command once, when it
 * is appended (redis_cmd_append). Invariant: a format this walk takes is one
 * hiredis takes, with the same words (tests/unit/test_redis_cmd.c compares
 * them); one it refuses (-2) hiredis refuses too, or would read past its end.
 * Pure: no I/O, no handle.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redis_priv.h"

int redis_cmd_key_arg(int argc, const char **argv, const size_t *argvlen)
{
    if ((argvlen[0] == 4 && strncasecmp(argv[0], "EVAL", 4) == 0) ||
        (argvlen[0] == 7 && strncasecmp(argv[0], "EVALSHA", 7) == 0)) {
        char nk[32] = ""; /* (argv[2] need not end in a NUL) */
        if (argc > 2)
            memcpy(nk, argv[2], argvlen[2] < sizeof nk - 1 ? argvlen[2] : sizeof nk - 1);
        return argc > 3 && atoi(nk) > 0 ? 3 : -1;
    }
    static const char *const keyless[] = {"INFO",  "WAIT",   "PING",   "CLUSTER",
                                          "HELLO", "SCRIPT", "CLIENT", "TIME"};
    for (size_t i = 0; i < sizeof keyless / sizeof keyless[0]; i++)
        if (argvlen[0] == strlen(keyless[i]) && strncasecmp(argv[0], keyless[i], argvlen[0]) == 0)
            return -1;
    return argc > 1 ? 1 : -1;
}

void redis_cmd_argv(struct redis_cmd *cmd, int argc, const char **argv, const size_t *argvlen,
                    int key, int slot)
{
    memset(cmd, 0, sizeof *cmd);
    cmd->argc = argc;
    cmd->argv = argv;
    cmd->argvlen = argvlen;
    cmd->name = argc > 0 ? argv[0] : "";
    cmd->namelen = argc > 0 ? argvlen[0] : 0;
    if (key >= 0 && key < argc)
        cmd->key = argv[key], cmd->keylen = argvlen[key];
    cmd->slot = slot;
}

/* A format being walked: the words composed so far (the first
 * REDIS_CMD_WORDS, each ending in a NUL in buf) and the one under way. */
struct walk {
    char *buf;
    size_t used, cap;
    size_t off[REDIS_CMD_WORDS], len[REDIS_CMD_WORDS];
    int argc;    /* words ended so far */
    int touched; /* the word under way has begun (hiredis's "touched") */
};

/* Room for n more bytes in buf: 0, or -1 (out of memory). */
static int walk_room(struct walk *w, size_t n)
{
    if (w->used + n <= w->cap)
        return 0;
    size_t cap = 2 * (w->used + n) + 64; /* (the first words: small but for EVAL's script) */
    char *b = realloc(w->buf, cap);
    if (!b)
        return -1;
    w->buf = b, w->cap = cap;
    return 0;
}

/* n bytes of the word under way (kept only for the first words). */
static int walk_put(struct walk *w, const char *p, size_t n)
{
    w->touched = 1;
    if (w->argc >= REDIS_CMD_WORDS || n == 0)
        return 0;
    if (walk_room(w, n) < 0)
        return -1;
    memcpy(w->buf + w->used, p, n);
    w->used += n;
    return 0;
}

/* The word under way ends. */
static int walk_end(struct walk *w)
{
    if (w->argc < REDIS_CMD_WORDS) {
        if (walk_room(w, 1) < 0)
            return -1;
        size_t start = w->argc ? w->off[w->argc - 1] + w->len[w->argc - 1] + 1 : 0;
        w->off[w->argc] = start;
        w->len[w->argc] = w->used - start;
        w->buf[w->used++] = '\0';
    }
    w->argc++;
    w->touched = 0;
    return 0;
}

/* A printf conversion at c ("%..."): its arguments consumed from ap and,
 * in one of the first words, printed. *next is set to its last character.
 * 0, -1 (out of memory) or -2 (not one hiredis takes). */
static int walk_printf(struct walk *w, const char *c, va_list *ap, const char **next)
{
    static const char ints[] = "diouxX";
    const char *p = c + 1;
    for (const char *flag = "#0- +"; *flag; flag++) /* (each at most once, in this order) */
        if (*p == *flag)
            p++;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p);)
            p++;
    va_list cpy;
    va_copy(cpy, *ap);
    int ok = 1;
    if (*p && strchr(ints, *p))
        (void)va_arg(*ap, int);
    else if (*p && strchr("eEfFgGaA", *p))
        (void)va_arg(*ap, double);
    else if (p[0] == 'h' && p[1] == 'h' && p[2] && strchr(ints, p[2]))
        p += 2, (void)va_arg(*ap, int);
    else if (p[0] == 'h' && p[1] && strchr(ints, p[1]))
        p += 1, (void)va_arg(*ap, int);
    else if (p[0] == 'l' && p[1] == 'l' && p[2] && strchr(ints, p[2]))
        p += 2, (void)va_arg(*ap, long long);
    else if (p[0] == 'l' && p[1] && strchr(ints, p[1]))
        p += 1, (void)va_arg(*ap, long);
    else
        ok = 0;
    int rc = ok ? 0 : -2;
    size_t l = (size_t)(p + 1 - c);
    *next = c + 1;
    if (ok && l < 14) { /* (hiredis prints nothing of a longer one, and goes on after "%x") */
        char f[16];
        memcpy(f, c, l);
        f[l] = '\0';
        *next = p;
        w->touched = 1;
        if (w->argc < REDIS_CMD_WORDS) {
            va_list cpy2;
            va_copy(cpy2, cpy);
            int n = vsnprintf(NULL, 0, f, cpy2);
            va_end(cpy2);
            if (n < 0 || walk_room(w, (size_t)n + 1) < 0)
                rc = -1;
            else
                w->used += (size_t)vsnprintf(w->buf + w->used, (size_t)n + 1, f, cpy);
        }
    }
    va_end(cpy);
    return rc;
}

/* Walks fmt with its arguments into w. 0, -1 or -2 (as redis_cmd_format). */
static int walk_format(struct walk *w, const char *fmt, va_list *ap)
{
    for (const char *c = fmt; *c; c++) {
        int rc = 0;
        if (*c != '%' || c[1] == '\0') {
            if (*c != ' ')
                rc = walk_put(w, c, 1);
            else if (w->touched)
                rc = walk_end(w);
            if (rc < 0)
                return rc;
            continue;
        }
        if (c[1] == 's') {
            const char *a = va_arg(*ap, const char *);
            rc = walk_put(w, a, strlen(a));
        } else if (c[1] == 'b') {
            const char *a = va_arg(*ap, const char *);
            size_t n = va_arg(*ap, size_t);
            rc = walk_put(w, a, n);
        } else if (c[1] == '%') {
            rc = walk_put(w, "%", 1);
        } else {
            const char *next;
            rc = walk_printf(w, c, ap, &next);
            c = next - 1;
        }
        if (rc < 0)
            return rc;
        c++;
    }
    return w->touched ? walk_end(w) : 0;
}

int redis_cmd_format(struct redis_cmd *cmd, const char *fmt, va_list *ap, int slot)
{
    memset(cmd, 0, sizeof *cmd);
    cmd->fmt = fmt;
    cmd->ap = ap;
    cmd->slot = slot;
    struct walk w = {0};
    va_list aq;
    va_copy(aq, *ap);
    int rc = walk_format(&w, fmt, &aq);
    va_end(aq);
    cmd->own = w.buf;
    if (rc < 0)
        return rc;
    const char *words[REDIS_CMD_WORDS];
    int n = w.argc < REDIS_CMD_WORDS ? w.argc : REDIS_CMD_WORDS;
    for (int i = 0; i < n; i++)
        words[i] = w.buf + w.off[i];
    cmd->argc = w.argc;
    if (n > 0) {
        cmd->name = words[0], cmd->namelen = w.len[0];
        int key = redis_cmd_key_arg(w.argc, words, w.len);
        if (key >= 0)
            cmd->key = words[key], cmd->keylen = w.len[key];
    }
    return 0;
}

void redis_cmd_done(struct redis_cmd *cmd)
{
    free(cmd->own);
    cmd->own = NULL;
}

int redis_cmd_append(lapse_conn *c, const struct redis_cmd *cmd)
{
    if (!cmd->fmt)
        return lapse_conn_append_argv(c, cmd->argc, cmd->argv, cmd->argvlen);
    va_list aq;
    va_copy(aq, *cmd->ap);
    int rc = lapse_conn_vappend(c, cmd->fmt, aq);
    va_end(aq);
    return rc;
}
