/* redis_single — the plain backend (redis_backend_plain): one server's
 * connection, as the redis_single_ operations of redis_priv.h, which the
 * Sentinel backend shares (redis_sentinel.c finds its primary and confirms
 * it). It connects (authenticated, checked as a primary where it must be
 * one, its eviction policy checked), loads the scripts, pipelines commands
 * and WAITs, and drops the connection on any error that says the server is
 * gone or no longer the primary, to be found again by the next ensure. Its
 * state is struct redis_single (r->one), which no other file sees.
 * Invariants: pending counts the replies owed on c, and is 0 while c is
 * NULL; scripts_loaded is 1 only while c is up, with every script loaded
 * on it and no NOSCRIPT since. */
#include "redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redis_priv.h"

struct redis_single {
    lapse_conn *c;                    /* the server's connection; NULL while disconnected */
    int pending;                      /* replies owed on c (appended, not yet read) */
    int scripts_loaded;               /* 0: load them on c before the next call */
    char wait_key[LAPSE_NS_MAX + 32]; /* wait_prefix:index, INCRed before each WAIT */
};

int redis_single_open(lapse_redis *r)
{
    if (!(r->one = calloc(1, sizeof *r->one)))
        return -1;
    snprintf(r->one->wait_key, sizeof r->one->wait_key, "%s:%zu", r->wait_prefix, r->index);
    return 0;
}

void redis_single_close(lapse_redis *r)
{
    if (!r->one)
        return;
    lapse_conn_free(r->one->c);
    free(r->one);
    r->one = NULL;
}

void redis_single_disconnect(lapse_redis *r)
{
    lapse_conn_free(r->one->c);
    r->one->c = NULL;
    r->one->scripts_loaded = 0;
    r->one->pending = 0;
}

void redis_single_noscript(lapse_redis *r)
{
    r->one->scripts_loaded = 0; /* (the connection stays: the next ensure loads them) */
}

/* An append ran out of memory: whatever it queued (a part of a command, or
 * the INCR before a WAIT) would leave the replies out of step, so the
 * connection goes, and with it what earlier appends queued. */
static void redis_append_failed(lapse_redis *r)
{
    redis_set_error(r, "redis %s: out of memory", r->name);
    lapse_redis_disconnect(r);
}

/* Drops the connection after an I/O error, keeping its reason. */
static void redis_fail(lapse_redis *r, const char *what)
{
    if (r->one->c)
        redis_set_error(r, "redis %s: %s: %s", r->name, what, lapse_conn_errstr(r->one->c));
    lapse_redis_disconnect(r);
}

/*
 * Error replies that say "not here, not now" rather than "never": a replica
 * (READONLY: our primary was demoted), a server loading its data (LOADING),
 * a replica cut off from its primary (MASTERDOWN). Nothing was applied, so
 * they are handled like a lost connection: dropped, found again (through
 * the sentinels for a Sentinel node) and retried by the caller. Returns 1
 * (reply freed, connection dropped, errstr set) or 0.
 */
static int redis_failover_reply(lapse_redis *r, redisReply *reply)
{
    if (!reply || reply->type != REDIS_REPLY_ERROR || !redis_gone(reply->str))
        return 0;
    redis_set_error(r, "redis %s: %.200s", r->name, reply->str);
    freeReplyObject(reply);
    lapse_redis_disconnect(r);
    return 1;
}

static int redis_load_scripts(lapse_redis *r)
{
    char err[300];
    if (redis_load_scripts_on(r, r->one->c, err, sizeof err) < 0) {
        redis_set_error(r, "redis %s: %s", r->name, err);
        lapse_redis_disconnect(r);
        return -1;
    }
    r->one->scripts_loaded = 1;
    return 0;
}

static int redis_connect(lapse_redis *r)
{
    r->refused = 0;
    char host[256], err[300];
    int port = r->node.port;
    if (r->be->locate) {
        if (r->be->locate(r, host, sizeof host, &port) < 0)
            return -1;
        snprintf(r->addr, sizeof r->addr, "%s:%d", host, port);
    } else {
        snprintf(host, sizeof host, "%s", r->node.host);
    }
    /* messages name the node, and where it was found when it moves */
    char who[LAPSE_NODE_NAME_MAX + 320];
    if (r->be->locate)
        snprintf(who, sizeof who, "%s (primary at %s)", r->name, r->addr);
    else
        snprintf(who, sizeof who, "%s", r->name);
    lapse_conn *c = redis_open(r, host, port, err, sizeof err);
    int primary = 1, rc = 0;
    if (c &&
        ((rc = redis_auth(c, r->node.username, r->node.password, err, sizeof err)) ||
         (r->be->must_be_primary && (primary = redis_is_primary(c, err, sizeof err)) < 0) ||
         (r->node.db && (rc = redis_expect_ok(c, lapse_conn_command(c, "SELECT %d", r->node.db),
                                              "SELECT", err, sizeof err))) ||
         (primary && (rc = redis_policy_check(r, c, who, err, sizeof err))))) {
        lapse_conn_free(c);
        c = NULL;
        r->refused = rc == -2;
    }
    if (c && !primary) {
        snprintf(err, sizeof err, "the sentinels name a replica (a failover in progress?)");
        lapse_conn_free(c);
        c = NULL;
    }
    if (!c) {
        redis_set_error(r, "redis %s: %s", who, err);
        return -1;
    }
    r->one->c = c;
    return 0;
}

int redis_single_ensure(lapse_redis *r)
{
    if (r->one->c && !r->one->pending && r->be->check)
        r->be->check(r); /* (may drop it: connected again below) */
    if (r->one->c && r->one->scripts_loaded)
        return 0;
    int fresh = 0;
    if (!r->one->c) {
        int64_t now = lapse_clock_mono_ms();
        if (now < r->next_attempt_ms)
            return -1; /* errstr still says why the last attempt failed */
        if (redis_connect(r) < 0)
            return redis_retry_after(r, now);
        fresh = 1;
    }
    if (redis_load_scripts(r) < 0)
        return redis_retry_after(r, lapse_clock_mono_ms());
    lapse_backoff_reset(&r->backoff);
    if (fresh && r->connected_once)
        r->reconnects++; /* a new connection, not a script reload (NOSCRIPT) */
    r->connected_once = 1;
    return 0;
}

int redis_single_ready(const lapse_redis *r)
{
    return r->one->c != NULL;
}

int redis_single_append(lapse_redis *r, const struct redis_cmd *cmd)
{
    /* (its key and slot do not matter: one server holds every slot) */
    if (redis_single_ensure(r) < 0)
        return -1;
    if (redis_cmd_append(r->one->c, cmd) == 0) {
        r->one->pending++;
        return 0;
    }
    redis_append_failed(r);
    return -1;
}

int redis_single_send(lapse_redis *r)
{
    if (!r->one->c) {
        redis_set_error(r, "redis %s: not connected", r->name);
        return -1;
    }
    if (lapse_conn_flush(r->one->c) == 0)
        return 0;
    redis_fail(r, "write");
    return -1;
}

int redis_single_reply_fd(lapse_redis *r)
{
    return r->one->c && r->one->pending > 0 ? lapse_conn_fd(r->one->c) : -1;
}

int redis_single_get_reply(lapse_redis *r, redisReply **reply)
{
    *reply = NULL;
    if (!r->one->c) {
        redis_set_error(r, "redis %s: not connected", r->name);
        return -1;
    }
    redisReply *rep = NULL;
    if (r->one->pending > 0)
        r->one->pending--;
    if (lapse_conn_reply(r->one->c, &rep) < 0) {
        redis_fail(r, "reply");
        return -1;
    }
    if (redis_failover_reply(r, rep))
        return -1;
    *reply = rep;
    return 0;
}

int redis_single_append_wait(lapse_redis *r, int replicas, int timeout_ms)
{
    if (redis_single_ensure(r) < 0)
        return -1;
    if (lapse_conn_append(r->one->c, "INCR %s", r->one->wait_key) == 0 &&
        lapse_conn_append(r->one->c, "WAIT %d %d", replicas, timeout_ms) == 0) {
        r->one->pending += 2;
        return 0;
    }
    redis_append_failed(r);
    return -1;
}

int redis_single_wait_reply(lapse_redis *r, int replicas, int timeout_ms)
{
    redisReply *incr, *reply;
    if (lapse_redis_get_reply(r, &incr) < 0)
        return -1;
    int counted = incr->type == REDIS_REPLY_INTEGER;
    if (!counted)
        redis_set_error(r, "redis %s: INCR %s: %.200s", r->name, r->one->wait_key,
                        incr->type == REDIS_REPLY_ERROR ? incr->str : "unexpected reply");
    freeReplyObject(incr);
    if (lapse_redis_get_reply(r, &reply) < 0)
        return -1;
    int rc = -1;
    if (!counted)
        ; /* the WAIT would cover only earlier writes of this connection */
    else if (reply->type != REDIS_REPLY_INTEGER)
        redis_set_error(r, "redis %s: WAIT: %.200s", r->name,
                        reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected reply");
    else if (reply->integer < replicas) {
        redis_set_error(r, "redis %s: WAIT: %lld of %d replicas took the write within %d ms",
                        r->name, reply->integer, replicas, timeout_ms);
        rc = -2; /* answered: the connection stays */
    } else
        rc = 0;
    freeReplyObject(reply);
    return rc;
}

int redis_single_wait_short(const lapse_redis *r, const char *addr)
{
    (void)r, (void)addr;
    return 1; /* (asked after its WAIT fell short: the one server is not confirmed) */
}

const char *redis_single_slot_owner(lapse_redis *r, uint16_t slot)
{
    (void)slot;
    return r->addr;
}

const struct redis_backend redis_backend_plain = {
    REDIS_SINGLE_OPS,
    .open = redis_single_open,
    .close = redis_single_close,
};
