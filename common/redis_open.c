/*
 * redis_open — opening one authenticated connection for the redis module
 * (redis_single.c's nodes, redis_sentinel.c's sentinels, redis_cluster.c's
 * primaries), and telling its error replies apart: "never" (a refusal: a
 * wrong password, an ACL denial) from "not here, not now" (a failover in
 * progress). The files above call down into this one; it calls none of
 * them. Passwords are sent as arguments, never formatted into a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_priv.h"

int redis_gone(const char *msg)
{
    static const char *const gone[] = {"READONLY", "LOADING", "MASTERDOWN"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        if (strncmp(msg, gone[i], strlen(gone[i])) == 0)
            return 1;
    return 0;
}

int redis_refusal(const char *msg)
{
    /* ("unauthenticated": Redis 7's answer to a large command from a client
     * that sent no password where one is required, e.g. SCRIPT LOAD) */
    static const char *const never[] = {"WRONGPASS",
                                        "NOPERM",
                                        "NOAUTH",
                                        "ERR invalid password",
                                        "ERR AUTH",
                                        "ERR Client sent AUTH",
                                        "ERR Protocol error: unauthenticated"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        if (strncmp(msg, never[i], strlen(never[i])) == 0)
            return 1;
    return 0;
}

/* Splits "host:port" ("[v6]:port" too) into host (at most hsize - 1 bytes)
 * and port; 0, or -1 if malformed. */
int redis_split_addr(const char *a, char *host, size_t hsize, int *port)
{
    const char *colon = strrchr(a, ':');
    if (!colon || colon == a)
        return -1;
    const char *h = a;
    size_t len = (size_t)(colon - a);
    if (h[0] == '[' && colon[-1] == ']')
        h++, len -= 2;
    if (len >= hsize)
        return -1;
    memcpy(host, h, len);
    host[len] = '\0';
    *port = atoi(colon + 1);
    return *port > 0 && *port <= 65535 ? 0 : -1;
}

int redis_tls(lapse_redis *r, char *err, size_t size)
{
    if (r->node.tls && !r->tls &&
        !(r->tls = lapse_tls_new(r->tls_files[0], r->tls_files[1], r->tls_files[2], r->tls_files[3],
                                 err, size))) {
        r->refused = 1; /* a file that cannot be read stays so */
        return -1;
    }
    return 0;
}

/* A connection to host:port with the handle's timeouts, over TLS for a
 * node with tls = true; NULL with the reason in err. */
lapse_conn *redis_open(lapse_redis *r, const char *host, int port, char *err, size_t size)
{
    if (redis_tls(r, err, size) < 0)
        return NULL;
    return lapse_conn_open(host, port, r->node.tls ? r->tls : NULL, r->connect_timeout_ms,
                           r->command_timeout_ms, &r->refused, err, size);
}

/* One command on a fresh connection whose reply only has to be no error
 * (AUTH, SELECT). 0, or -1 with "WHAT: reason" in err (-2 when the server
 * refused for good: redis_refusal). The password is sent as an argument,
 * never formatted into a message. */
int redis_expect_ok(lapse_conn *c, redisReply *reply, const char *what, char *err, size_t size)
{
    if (!reply) {
        snprintf(err, size, "%s: %s", what, lapse_conn_errstr(c));
        return lapse_conn_refused(c) ? -2 : -1;
    }
    int rc = reply->type != REDIS_REPLY_ERROR ? 0 : redis_refusal(reply->str) ? -2 : -1;
    if (rc)
        snprintf(err, size, "%s: %.200s", what, reply->str);
    freeReplyObject(reply);
    return rc;
}

int redis_auth(lapse_conn *c, const char *user, const char *password, char *err, size_t size)
{
    if (!password)
        return 0;
    redisReply *reply = user ? lapse_conn_command(c, "AUTH %s %s", user, password)
                             : lapse_conn_command(c, "AUTH %s", password);
    return redis_expect_ok(c, reply, "AUTH", err, size);
}

lapse_conn *redis_open_auth(lapse_redis *r, const char *host, int port, char *err, size_t size)
{
    lapse_conn *c = redis_open(r, host, port, err, size);
    int rc = c ? redis_auth(c, r->node.username, r->node.password, err, size) : 0;
    if (rc) {
        r->refused = rc == -2;
        lapse_conn_free(c);
        return NULL;
    }
    return c;
}
