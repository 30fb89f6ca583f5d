/* conn — see conn.h. */
#include "conn.h"

#include <hiredis/sds.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

struct lapse_conn {
    redisContext *c;        /* hiredis: the socket, output buffer and reader */
    lapse_tls_session *tls; /* NULL: plain, hiredis does the I/O */
    char errstr[256];
};

static struct timeval conn_tv(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

lapse_conn *lapse_conn_open(const char *host, int port, lapse_tls *tls, int connect_timeout_ms,
                            int command_timeout_ms, int *refused, char *err, size_t size)
{
    *refused = 0;
    lapse_conn *k = calloc(1, sizeof *k);
    if (!k || !(k->c = redisConnectWithTimeout(host, port, conn_tv(connect_timeout_ms)))) {
        free(k);
        snprintf(err, size, "out of memory");
        return NULL;
    }
    if (k->c->err) {
        snprintf(err, size, "connect: %s", k->c->errstr);
        lapse_conn_free(k);
        return NULL;
    }
    redisEnableKeepAlive(k->c);
    /* the handshake is part of connecting: it gets the connect timeout */
    redisSetTimeout(k->c, conn_tv(connect_timeout_ms));
    if (tls && !(k->tls = lapse_tls_start(tls, k->c->fd, host, refused, err, size))) {
        lapse_conn_free(k);
        return NULL;
    }
    redisSetTimeout(k->c, conn_tv(command_timeout_ms));
    return k;
}

void lapse_conn_free(lapse_conn *k)
{
    if (!k)
        return;
    lapse_tls_end(k->tls);
    if (k->c)
        redisFree(k->c);
    free(k);
}

static int conn_oom(lapse_conn *k)
{
    snprintf(k->errstr, sizeof k->errstr, "out of memory");
    return -1;
}

int lapse_conn_vappend(lapse_conn *k, const char *fmt, va_list ap)
{
    return redisvAppendCommand(k->c, fmt, ap) == REDIS_OK ? 0 : conn_oom(k);
}

int lapse_conn_append(lapse_conn *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lapse_conn_vappend(k, fmt, ap);
    va_end(ap);
    return rc;
}

/* The command written straight into the output buffer: redisAppendCommandArgv
 * formats a string per argument and copies the result (resp.h). */
int lapse_conn_append_argv(lapse_conn *k, int argc, const char **argv, const size_t *argvlen)
{
    size_t len = lapse_resp_len(argc, argvlen);
    if (len > INT_MAX) /* (sdsIncrLen's bound; hiredis's way takes it) */
        return redisAppendCommandArgv(k->c, argc, argv, argvlen) == REDIS_OK ? 0 : conn_oom(k);
    sds ob = sdsMakeRoomFor(k->c->obuf, len);
    if (!ob)
        return conn_oom(k);
    k->c->obuf = ob;
    lapse_resp_write(ob + sdslen(ob), argc, argv, argvlen);
    sdsIncrLen(ob, (int)len);
    return 0;
}

/* hiredis's reason for a failed call of its own I/O. */
static int conn_hiredis_error(lapse_conn *k)
{
    snprintf(k->errstr, sizeof k->errstr, "%s", k->c->errstr[0] ? k->c->errstr : "connection lost");
    return -1;
}

int lapse_conn_flush(lapse_conn *k)
{
    if (!k->tls) {
        int done = 0;
        while (!done)
            if (redisBufferWrite(k->c, &done) != REDIS_OK)
                return conn_hiredis_error(k);
        return 0;
    }
    size_t len = sdslen(k->c->obuf);
    if (len == 0)
        return 0;
    if (lapse_tls_write(k->tls, k->c->obuf, len, k->errstr, sizeof k->errstr) < 0)
        return -1;
    sdsclear(k->c->obuf);
    return 0;
}

int lapse_conn_reply(lapse_conn *k, redisReply **reply)
{
    *reply = NULL;
    if (!k->tls) {
        void *r = NULL;
        if (redisGetReply(k->c, &r) != REDIS_OK || !r)
            return conn_hiredis_error(k);
        *reply = r;
        return 0;
    }
    if (lapse_conn_flush(k) < 0)
        return -1;
    for (;;) {
        void *r = NULL;
        if (redisGetReplyFromReader(k->c, &r) != REDIS_OK)
            return conn_hiredis_error(k); /* a protocol error */
        if (r) {
            *reply = r;
            return 0;
        }
        char buf[16384];
        ssize_t n = lapse_tls_read(k->tls, buf, sizeof buf, k->errstr, sizeof k->errstr);
        if (n < 0)
            return -1;
        if (redisReaderFeed(k->c->reader, buf, (size_t)n) != REDIS_OK)
            return conn_oom(k);
    }
}

redisReply *lapse_conn_vcommand(lapse_conn *k, const char *fmt, va_list ap)
{
    redisReply *r;
    if (lapse_conn_vappend(k, fmt, ap) < 0 || lapse_conn_reply(k, &r) < 0)
        return NULL;
    return r;
}

redisReply *lapse_conn_command(lapse_conn *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = lapse_conn_vcommand(k, fmt, ap);
    va_end(ap);
    return r;
}

redisReply *lapse_conn_command_argv(lapse_conn *k, int argc, const char **argv,
                                    const size_t *argvlen)
{
    redisReply *r;
    if (lapse_conn_append_argv(k, argc, argv, argvlen) < 0 || lapse_conn_reply(k, &r) < 0)
        return NULL;
    return r;
}

int lapse_conn_refused(const lapse_conn *k)
{
    return k->tls && lapse_tls_broken(k->tls);
}

const char *lapse_conn_errstr(const lapse_conn *k)
{
    return k->errstr[0] ? k->errstr : "connection lost";
}

int lapse_conn_fd(const lapse_conn *k)
{
    return k && k->c && !k->c->err ? (int)k->c->fd : -1;
}
