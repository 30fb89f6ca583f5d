/* redis — see redis.h. The only place that talks to hiredis directly. */
#include "redis.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000

struct lapse_redis {
    redisContext *c;                 /* NULL while disconnected */
    char name[300];                  /* host:port, for messages */
    char *host, *password;           /* copies of the node's */
    int port, db;
    int connect_timeout_ms, command_timeout_ms;
    char sha[LAPSE_SCRIPT_COUNT][41];
    int scripts_loaded;              /* 0: load before the next call */
    int64_t next_attempt_ms;         /* monotonic: earliest reconnect */
    struct lapse_backoff backoff;    /* between failed connects */
    int connected_once;
    uint64_t reconnects;
    char errstr[256];
};

static void redis_set_error(lapse_redis *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void redis_set_error(lapse_redis *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->errstr, sizeof r->errstr, fmt, ap);
    va_end(ap);
}

lapse_redis *lapse_redis_new(const struct lapse_redis_node *node, int connect_timeout_ms,
                             int command_timeout_ms)
{
    lapse_redis *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->host = strdup(node->host);
    r->password = node->password ? strdup(node->password) : NULL;
    if (!r->host || (node->password && !r->password)) {
        lapse_redis_free(r);
        return NULL;
    }
    r->port = node->port;
    r->db = node->db;
    r->connect_timeout_ms = connect_timeout_ms;
    r->command_timeout_ms = command_timeout_ms;
    lapse_backoff_init(&r->backoff, BACKOFF_MIN_MS, BACKOFF_MAX_MS);
    snprintf(r->name, sizeof r->name, "%s:%d", node->host, node->port);
    return r;
}

void lapse_redis_free(lapse_redis *r)
{
    if (!r)
        return;
    if (r->c)
        redisFree(r->c);
    free(r->host);
    free(r->password);
    free(r);
}

void lapse_redis_disconnect(lapse_redis *r)
{
    if (r->c) {
        redisFree(r->c);
        r->c = NULL;
    }
    r->scripts_loaded = 0;
}

/* Drops the context after an I/O error, keeping hiredis's reason. */
static void redis_fail(lapse_redis *r, const char *what)
{
    if (r->c)
        redis_set_error(r, "redis %s: %s: %s", r->name, what,
                        r->c->errstr[0] ? r->c->errstr : "connection lost");
    lapse_redis_disconnect(r);
}

static struct timeval redis_tv(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

/* Runs one setup command on a fresh context; 0 or -1 with errstr set. */
static int redis_setup(lapse_redis *r, redisReply *reply, const char *what)
{
    if (!reply) {
        redis_fail(r, what);
        return -1;
    }
    int ok = reply->type != REDIS_REPLY_ERROR;
    if (!ok)
        redis_set_error(r, "redis %s: %s: %s", r->name, what, reply->str);
    freeReplyObject(reply);
    if (!ok)
        lapse_redis_disconnect(r);
    return ok ? 0 : -1;
}

static int redis_load_scripts(lapse_redis *r)
{
    for (int s = 0; s < LAPSE_SCRIPT_COUNT; s++) {
        redisReply *reply = redisCommand(r->c, "SCRIPT LOAD %s", lapse_script_source(s));
        if (!reply) {
            redis_fail(r, "SCRIPT LOAD");
            return -1;
        }
        if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
            redis_set_error(r, "redis %s: SCRIPT LOAD: %s", r->name,
                            reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected reply");
            freeReplyObject(reply);
            lapse_redis_disconnect(r);
            return -1;
        }
        memcpy(r->sha[s], reply->str, 41);
        freeReplyObject(reply);
    }
    r->scripts_loaded = 1;
    return 0;
}

static int redis_connect(lapse_redis *r)
{
    redisContext *c = redisConnectWithTimeout(r->host, r->port, redis_tv(r->connect_timeout_ms));
    if (!c) {
        redis_set_error(r, "redis %s: out of memory", r->name);
        return -1;
    }
    if (c->err) {
        redis_set_error(r, "redis %s: connect: %s", r->name, c->errstr);
        redisFree(c);
        return -1;
    }
    redisSetTimeout(c, redis_tv(r->command_timeout_ms));
    redisEnableKeepAlive(c);
    r->c = c;
    if (r->password && redis_setup(r, redisCommand(c, "AUTH %s", r->password), "AUTH") < 0)
        return -1;
    if (r->db && redis_setup(r, redisCommand(c, "SELECT %d", r->db), "SELECT") < 0)
        return -1;
    return 0;
}

int lapse_redis_ensure(lapse_redis *r)
{
    if (r->c && r->scripts_loaded)
        return 0;
    int fresh = 0;
    if (!r->c) {
        int64_t now = lapse_clock_mono_ms();
        if (now < r->next_attempt_ms)
            return -1; /* errstr still says why the last attempt failed */
        if (redis_connect(r) < 0) {
            r->next_attempt_ms = now + lapse_backoff_next(&r->backoff);
            return -1;
        }
        fresh = 1;
    }
    if (redis_load_scripts(r) < 0) {
        r->next_attempt_ms = lapse_clock_mono_ms() + lapse_backoff_next(&r->backoff);
        return -1;
    }
    lapse_backoff_reset(&r->backoff);
    if (fresh && r->connected_once)
        r->reconnects++; /* a new connection, not a script reload (NOSCRIPT) */
    r->connected_once = 1;
    return 0;
}

int lapse_redis_backoff_ms(const lapse_redis *r)
{
    if (r->c)
        return 0;
    int64_t left = r->next_attempt_ms - lapse_clock_mono_ms();
    return left > 0 ? (int)left : 0;
}

redisReply *lapse_redis_command(lapse_redis *r, const char *fmt, ...)
{
    if (lapse_redis_ensure(r) < 0)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = redisvCommand(r->c, fmt, ap);
    va_end(ap);
    if (!reply)
        redis_fail(r, "command");
    return reply;
}

redisReply *lapse_redis_command_argv(lapse_redis *r, int argc, const char **argv,
                                     const size_t *argvlen)
{
    if (lapse_redis_ensure(r) < 0)
        return NULL;
    redisReply *reply = redisCommandArgv(r->c, argc, argv, argvlen);
    if (!reply)
        redis_fail(r, "command");
    return reply;
}

int lapse_redis_append_eval(lapse_redis *r, enum lapse_script s, int nkeys, int argc,
                            const char **argv, const size_t *argvlen)
{
    if (lapse_redis_ensure(r) < 0)
        return -1;
    /* EVALSHA sha nkeys argv... : built on the stack for small calls. */
    enum { SMALL = 64 };
    const char *sv[SMALL + 3];
    size_t sl[SMALL + 3];
    const char **v = sv;
    size_t *l = sl;
    if (argc > SMALL) {
        v = malloc((size_t)(argc + 3) * sizeof *v);
        l = malloc((size_t)(argc + 3) * sizeof *l);
        if (!v || !l) {
            free(v);
            free(l);
            redis_set_error(r, "redis %s: out of memory", r->name);
            return -1;
        }
    }
    char nk[16];
    int nklen = snprintf(nk, sizeof nk, "%d", nkeys);
    v[0] = "EVALSHA", l[0] = 7;
    v[1] = r->sha[s], l[1] = 40;
    v[2] = nk, l[2] = (size_t)nklen;
    memcpy(v + 3, argv, (size_t)argc * sizeof *v);
    memcpy(l + 3, argvlen, (size_t)argc * sizeof *l);
    int rc = redisAppendCommandArgv(r->c, argc + 3, v, l) == REDIS_OK ? 0 : -1;
    if (v != sv) {
        free(v);
        free(l);
    }
    if (rc < 0)
        redis_set_error(r, "redis %s: out of memory", r->name);
    return rc;
}

int lapse_redis_append_argv(lapse_redis *r, int argc, const char **argv, const size_t *argvlen)
{
    if (lapse_redis_ensure(r) < 0)
        return -1;
    if (redisAppendCommandArgv(r->c, argc, argv, argvlen) == REDIS_OK)
        return 0;
    redis_set_error(r, "redis %s: out of memory", r->name);
    return -1;
}

int lapse_redis_send(lapse_redis *r)
{
    if (!r->c) {
        redis_set_error(r, "redis %s: not connected", r->name);
        return -1;
    }
    int done = 0;
    while (!done)
        if (redisBufferWrite(r->c, &done) != REDIS_OK) {
            redis_fail(r, "write");
            return -1;
        }
    return 0;
}

int lapse_redis_get_reply(lapse_redis *r, redisReply **reply)
{
    *reply = NULL;
    if (!r->c) {
        redis_set_error(r, "redis %s: not connected", r->name);
        return -1;
    }
    void *rep = NULL;
    if (redisGetReply(r->c, &rep) != REDIS_OK || !rep) {
        redis_fail(r, "reply");
        return -1;
    }
    *reply = rep;
    return 0;
}

int lapse_redis_noscript(lapse_redis *r, const redisReply *reply)
{
    if (reply && reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        r->scripts_loaded = 0;
        return 1;
    }
    return 0;
}

redisReply *lapse_redis_eval(lapse_redis *r, enum lapse_script s, int nkeys, int argc,
                             const char **argv, const size_t *argvlen)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        redisReply *reply = NULL;
        if (lapse_redis_append_eval(r, s, nkeys, argc, argv, argvlen) < 0 ||
            lapse_redis_get_reply(r, &reply) < 0)
            return NULL;
        if (!lapse_redis_noscript(r, reply))
            return reply;
        freeReplyObject(reply);
    }
    redis_set_error(r, "redis %s: NOSCRIPT persists after reloading", r->name);
    return NULL;
}

const char *lapse_redis_errstr(const lapse_redis *r) { return r->errstr; }
const char *lapse_redis_name(const lapse_redis *r) { return r->name; }
uint64_t lapse_redis_reconnects(const lapse_redis *r) { return r->reconnects; }
