/*
 * redis_sentinel — where a Sentinel node's primary is: the sentinels are
 * asked in turn, from the one that answered last, and the server found is
 * checked to be a primary before it is used (a failover may be under way).
 * While connected, the primary is confirmed with a sentinel at most once a
 * second, at the handle's first call that owes no reply (the backend's
 * check): a primary the sentinels replaced
 * without it dying (a false failover, a partition that healed) keeps
 * answering as a primary until Sentinel demotes it, 8 s or more later, and
 * what is written there meanwhile is lost.
 *
 * The Sentinel backend (redis_priv.h) is the plain one's connection
 * (redis_single.c's redis_single_ operations) with operations of its own
 * here: open and close (its state), locate, check and moved. It calls into
 * redis.c and redis_single.c for nothing else but the helpers redis_priv.h
 * declares for every part of the module (open, AUTH, split an address,
 * read a refusal, set the handle's error: the ones redis_cluster.c uses
 * too). Its state is struct redis_sentinel (r->sn), which no other file
 * sees: where to start asking, the connection kept for confirming, when to
 * confirm next and why it last moved. Invariant: sn->conn, when set, is a
 * connection to sentinel sn->conn_at.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redis_priv.h"

/* How often a connected node's primary is confirmed (ms). */
#define CONFIRM_EVERY_MS 1000

struct redis_sentinel {
    size_t first;          /* the sentinel to ask first: the last that answered */
    lapse_conn *conn;      /* kept to confirm the primary (sentinel_check), or NULL */
    size_t conn_at;        /* the sentinel conn is connected to */
    char moved[1024];      /* why it left a primary the sentinels replaced */
    int moved_unread;      /* moved is news for lapse_redis_moved */
    int64_t confirm_at_ms; /* monotonic: when to confirm the primary next */
    int confirm_failed;    /* confirmations in a row no sentinel answered */
};

/* The backend's open and close: the connection's state (redis_single.c's)
 * and its own. */
static int sentinel_be_open(lapse_redis *r)
{
    if (redis_single_open(r) < 0)
        return -1;
    return (r->sn = calloc(1, sizeof *r->sn)) ? 0 : -1;
}

static void sentinel_be_close(lapse_redis *r)
{
    redis_single_close(r);
    if (!r->sn)
        return;
    lapse_conn_free(r->sn->conn);
    free(r->sn);
    r->sn = NULL;
}

/* Asks the sentinel on c where the node's primary is: 0 with host and port,
 * or -1 with the reason in `one` (*refused set for a refusal for good). */
static int sentinel_ask(lapse_redis *r, lapse_conn *c, char *host, size_t hsize, int *port,
                        char *one, size_t osize, int *refused)
{
    redisReply *reply =
        lapse_conn_command(c, "SENTINEL get-master-addr-by-name %s", r->node.master);
    if (!reply)
        snprintf(one, osize, "%s", lapse_conn_errstr(c));
    else if (reply->type == REDIS_REPLY_ERROR)
        snprintf(one, osize, "%s", reply->str), *refused |= redis_refusal(reply->str);
    else if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
             reply->element[0]->type != REDIS_REPLY_STRING ||
             reply->element[1]->type != REDIS_REPLY_STRING)
        snprintf(one, osize, "does not monitor a master named %s", r->node.master);
    else if (snprintf(host, hsize, "%s", reply->element[0]->str) >= (int)hsize ||
             (*port = atoi(reply->element[1]->str)) <= 0)
        snprintf(one, osize, "unusable address");
    else
        one[0] = '\0';
    if (reply)
        freeReplyObject(reply);
    return one[0] ? -1 : 0;
}

/* A connection to sentinel i, authenticated; NULL with the reason in `one`.
 * connect_ms and reply_ms bound the connect and each reply. */
static lapse_conn *sentinel_open(lapse_redis *r, size_t i, int connect_ms, int reply_ms, char *one,
                                 size_t osize, int *refused)
{
    const struct lapse_redis_node *n = &r->node;
    char sh[256];
    int sp, rc, gone = 0;
    lapse_conn *c = NULL;
    one[0] = '\0';
    if (redis_split_addr(n->sentinels[i], sh, sizeof sh, &sp) < 0)
        snprintf(one, osize, "not host:port");
    else if (!(c = lapse_conn_open(sh, sp, n->tls ? r->tls : NULL, connect_ms, reply_ms, &gone, one,
                                   osize)))
        *refused |= gone;
    else if ((rc = redis_auth(c, n->sentinel_username, n->sentinel_password, one, osize))) {
        *refused |= rc == -2;
        lapse_conn_free(c);
        c = NULL;
    }
    return c;
}

/* Asks the node's sentinels, in turn from the one that answered last
 * (sn->first, updated), where its primary is (the backend's locate). 0
 * with host and port, the next confirmation a second away (they were just
 * asked), or -1 with r->errstr naming
 * every sentinel's failure and r->refused set if one refused for good. */
static int sentinel_locate(lapse_redis *r, char *host, size_t hsize, int *port)
{
    const struct lapse_redis_node *n = &r->node;
    struct redis_sentinel *sn = r->sn;
    char why[400] = "", one[200];
    size_t wl = 0;
    int refused = 0;
    if (redis_tls(r, one, sizeof one) < 0) {
        redis_set_error(r, "redis %s: %s", r->name, one);
        return -1;
    }
    for (size_t k = 0; k < n->nsentinels; k++) {
        size_t i = (sn->first + k) % n->nsentinels;
        lapse_conn *c = sentinel_open(r, i, r->connect_timeout_ms, r->command_timeout_ms, one,
                                      sizeof one, &refused);
        if (c)
            sentinel_ask(r, c, host, hsize, port, one, sizeof one, &refused);
        lapse_conn_free(c);
        if (c && !one[0]) {
            sn->first = i;
            if (sn->conn && sn->conn_at != i) { /* confirm with this one too */
                lapse_conn_free(sn->conn);
                sn->conn = NULL;
            }
            sn->confirm_at_ms = lapse_clock_mono_ms() + CONFIRM_EVERY_MS;
            return 0;
        }
        int w =
            snprintf(why + wl, sizeof why - wl, "%s%s: %s", wl ? "; " : "", n->sentinels[i], one);
        if (w > 0)
            wl = wl + (size_t)w < sizeof why ? wl + (size_t)w : sizeof why - 1;
    }
    redis_set_error(r, "redis %s: no sentinel named its primary (%s)", r->name, why);
    r->refused = refused;
    return -1;
}

/* How long a confirmation may wait for a sentinel, each step (ms, or less
 * when redis.connect_timeout_ms is): it runs between a scanner's batches,
 * and sentinels answer within a millisecond or two. */
#define CONFIRM_TIMEOUT_MS 200

/* Whether the sentinels still name r->addr as the node's primary: 1 yes,
 * 0 no (named says which server they name), -1 when none could be asked.
 * Keeps one sentinel's connection open between calls (sn->conn,
 * to the sentinel the connection was found through), so a call costs one
 * round trip; a sentinel that does not answer costs one wait of
 * CONFIRM_TIMEOUT_MS (on a new link a TLS handshake or AUTH, one more
 * each), and the next call asks the next sentinel. */
static int sentinel_confirm(lapse_redis *r, char *named, size_t size)
{
    struct redis_sentinel *sn = r->sn;
    char host[256], one[200];
    int port, refused = 0;
    int ms =
        r->connect_timeout_ms < CONFIRM_TIMEOUT_MS ? r->connect_timeout_ms : CONFIRM_TIMEOUT_MS;
    if (!sn->conn) {
        sn->conn = sentinel_open(r, sn->first, ms, ms, one, sizeof one, &refused);
        sn->conn_at = sn->first;
    }
    if (sn->conn &&
        sentinel_ask(r, sn->conn, host, sizeof host, &port, one, sizeof one, &refused) == 0) {
        snprintf(named, size, "%s:%d", host, port);
        return strcmp(named, r->addr) == 0;
    }
    /* (not asked again now, on a new link or the next sentinel: a sentinel
     * that hangs costs one wait per confirmation) */
    lapse_conn_free(sn->conn);
    sn->conn = NULL;
    sn->first = (sn->first + 1) % r->node.nsentinels; /* the next one next time */
    return -1;
}

/* How far apart confirmations no sentinel answers go at most (each one
 * waits up to CONFIRM_TIMEOUT_MS). */
#define CONFIRM_FAILED_MAX_MS 30000

/*
 * The backend's check: confirms a connected node's primary with a sentinel,
 * once every CONFIRM_EVERY_MS (redis_single.c calls it only while no reply
 * is owed: replies still owed would be lost with the connection). When the
 * sentinels name another server it drops the connection, for the next
 * ensure to connect where they say at once (sn->moved says why). When no
 * sentinel answers, the primary in use is kept (an outage of the sentinels
 * alone is no reason to leave it) and the next try waits twice as long.
 * Returns -1 when it dropped the connection, else 0.
 */
static int sentinel_check(lapse_redis *r)
{
    struct redis_sentinel *sn = r->sn;
    int64_t now = lapse_clock_mono_ms();
    if (now < sn->confirm_at_ms)
        return 0;
    char named[sizeof r->addr];
    int rc = sentinel_confirm(r, named, sizeof named);
    int64_t every = CONFIRM_EVERY_MS;
    if (rc < 0) {
        sn->confirm_failed += sn->confirm_failed < 16;
        every <<= sn->confirm_failed;
        if (every > CONFIRM_FAILED_MAX_MS)
            every = CONFIRM_FAILED_MAX_MS;
    } else {
        sn->confirm_failed = 0;
    }
    sn->confirm_at_ms = lapse_clock_mono_ms() + every;
    if (rc != 0)
        return 0;
    snprintf(sn->moved, sizeof sn->moved,
             "redis %s: the sentinels now name %s as the primary, not %s (failed over): "
             "following",
             r->name, named, r->addr);
    sn->moved_unread = 1;
    lapse_redis_disconnect(r);
    r->next_attempt_ms = 0; /* (nothing failed: connect now) */
    return -1;
}

/* 1 if the server is a primary, 0 if not, -1 with err on failure. Asks
 * HELLO 2 (its "role" field; RESP2 kept), not ROLE or INFO: those are
 * @dangerous, which the ACL lapse needs (-@dangerous) does not grant. */
int redis_is_primary(lapse_conn *c, char *err, size_t size)
{
    redisReply *reply = lapse_conn_command(c, "HELLO 2");
    if (!reply) {
        snprintf(err, size, "HELLO: %s", lapse_conn_errstr(c));
        return -1;
    }
    int rc = -1;
    if (reply->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i + 1 < reply->elements; i += 2)
            if (reply->element[i]->type == REDIS_REPLY_STRING &&
                strcmp(reply->element[i]->str, "role") == 0 &&
                reply->element[i + 1]->type == REDIS_REPLY_STRING)
                rc = strcmp(reply->element[i + 1]->str, "master") == 0;
    }
    if (rc < 0)
        snprintf(err, size, "HELLO: %.200s",
                 reply->type == REDIS_REPLY_ERROR ? reply->str : "no role in the reply");
    freeReplyObject(reply);
    return rc;
}

/* The backend's moved: lapse_redis_moved. */
static const char *sentinel_moved(lapse_redis *r)
{
    if (!r->sn->moved_unread)
        return NULL;
    r->sn->moved_unread = 0;
    return r->sn->moved;
}

const struct redis_backend redis_backend_sentinel = {
    REDIS_SINGLE_OPS,          .open = sentinel_be_open, .close = sentinel_be_close,
    .locate = sentinel_locate, .check = sentinel_check,  .moved = sentinel_moved,
    .must_be_primary = 1,
};
