/*
 * redis_cluster — a Redis Cluster as one lapse_redis node (redis.h).
 *
 * The slot map (cluster.h) is read with CLUSTER SLOTS from the primaries
 * known from the last map, then the seeds, in turn. Each primary gets one
 * connection ("route"), opened when a command first goes there:
 * authenticated as the cluster's user, with the scripts loaded (the same
 * SHAs everywhere). Every appended command goes to the route of its key's
 * slot and its route is queued, so get_reply reads each reply from the
 * route it will come from, in the order the commands were appended.
 *
 * Anything short of a reply (a lost connection, a timeout) and every reply
 * that says "not here" (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, READONLY,
 * LOADING, MASTERDOWN) drops every route, because the replies still due on
 * the others belong to a pipeline the caller now sends again; MOVED, ASK
 * and the failover replies also mark the map stale, so the next command
 * reads it again. ASK is not followed with ASKING: the slot is half
 * migrated, which lasts until the migration's SETSLOT, so the call is
 * retried, as after TRYAGAIN (a multi-key script during the same window).
 *
 * Its state is struct redis_cluster (r->cl), which no other file sees; a
 * command comes as a struct redis_cmd (redis_cmd.c), its key already found,
 * and is formatted once, by its route's connection.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "cluster.h"
#include "redis_priv.h"

#define TAG_MAX (LAPSE_NS_MAX + 24)

static void cluster_disconnect(lapse_redis *r);
static int cluster_ensure(lapse_redis *r);

struct route {
    char addr[LAPSE_CLUSTER_ADDR_MAX]; /* the primary's "host:port" */
    lapse_conn *c;                     /* NULL until used, and after a drop */
    int wrote;                         /* writes sent since its last WAIT */
    char tag[TAG_MAX];                 /* hash tag of the last key written there (WAIT's INCR) */
    int wait_short;                    /* its WAIT in the last group read saw too few replicas */
};

struct redis_cluster {
    struct lapse_cluster_map map;
    int map_ok;           /* 0: read the map before the next command */
    struct route *routes; /* by primary address, for the handle's life */
    size_t nroutes, cap_routes;
    size_t *due; /* route of each reply still due, oldest at head */
    size_t head, ndue, cap_due;
    size_t *waits; /* per append_wait not yet read, oldest first: how many
                                    routes it sent an INCR + WAIT (wait_reply reads them) */
    size_t wait_head, nwaits, cap_waits;
};

static int cluster_open(lapse_redis *r)
{
    if (!(r->cl = calloc(1, sizeof *r->cl)))
        return -1;
    memset(r->cl->map.owner, 0xff, sizeof r->cl->map.owner);
    /* the scripts' SHAs are SHA-1 of their source: known before any route */
    for (int s = 0; s < LAPSE_SCRIPT_COUNT; s++) {
        const char *src = lapse_script_source(s);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        if (!EVP_Digest(src, strlen(src), md, &mdlen, EVP_sha1(), NULL) || mdlen != 20)
            return -1;
        for (unsigned i = 0; i < mdlen; i++)
            snprintf(r->sha[s] + 2 * i, 3, "%02x", md[i]);
    }
    return 0;
}

static void cluster_close(lapse_redis *r)
{
    if (!r->cl)
        return;
    cluster_disconnect(r);
    lapse_cluster_map_free(&r->cl->map);
    free(r->cl->routes);
    free(r->cl->due);
    free(r->cl->waits);
    free(r->cl);
    r->cl = NULL;
}

static void cluster_disconnect(lapse_redis *r)
{
    struct redis_cluster *cl = r->cl;
    int had = 0;
    for (size_t i = 0; i < cl->nroutes; i++) {
        had |= cl->routes[i].c != NULL;
        lapse_conn_free(cl->routes[i].c);
        cl->routes[i].c = NULL;
        cl->routes[i].wrote = 0;
    }
    cl->head = cl->ndue = cl->wait_head = cl->nwaits = 0;
    if (had)
        r->reconnects++; /* replies due on the old connections never come */
}

static void cluster_noscript(lapse_redis *r)
{
    cluster_disconnect(r); /* a route reloads the scripts when it reconnects */
}

/* Drops everything after a failure (errstr set); with stale, the map too. */
static int cluster_fail(lapse_redis *r, int stale)
{
    cluster_disconnect(r);
    if (stale)
        r->cl->map_ok = 0;
    return -1;
}

/* CLUSTER SLOTS from addr into the map. 0, or -1 with why in err. */
static int cluster_read_map(lapse_redis *r, const char *addr, char *err, size_t size)
{
    char host[256];
    int port;
    if (redis_split_addr(addr, host, sizeof host, &port) < 0) {
        snprintf(err, size, "not host:port");
        return -1;
    }
    lapse_conn *c = redis_open_auth(r, host, port, err, size);
    if (!c)
        return -1;
    redisReply *reply = lapse_conn_command(c, "CLUSTER SLOTS");
    int rc = -1;
    if (!reply) {
        snprintf(err, size, "%s", lapse_conn_errstr(c));
    } else {
        rc = lapse_cluster_map_parse(&r->cl->map, reply, host, err, size);
        if (rc < 0 && reply->type == REDIS_REPLY_ERROR)
            r->refused =
                redis_refusal(reply->str) || strstr(reply->str, "cluster support disabled");
        freeReplyObject(reply);
    }
    lapse_conn_free(c);
    return rc;
}

static struct route *cluster_route(struct redis_cluster *cl, const char *addr);
static int cluster_connect(lapse_redis *r, struct route *rt);

/* At the handle's first map: connects to every primary, so each one's
 * maxmemory-policy is checked at start (redis_policy.c) rather than when a
 * command first goes there. -1 only when one refused (r->refused): a
 * primary down now is connected, and checked, when it is used. */
static int cluster_check_all(lapse_redis *r)
{
    struct redis_cluster *cl = r->cl;
    char addr[sizeof r->addr]; /* r->addr names where commands went: a check is none */
    memcpy(addr, r->addr, sizeof addr);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < cl->map.nprimaries; i++) {
        struct route *rt = cluster_route(cl, cl->map.primaries[i]);
        r->refused = 0;
        if (rt && !rt->c && cluster_connect(r, rt) < 0 && r->refused)
            rc = -1;
    }
    if (rc == 0) {
        r->refused = 0;
        memcpy(r->addr, addr, sizeof addr);
    }
    return rc;
}

/* Reads the map from the known primaries, then the seeds. */
static int cluster_refresh(lapse_redis *r)
{
    struct redis_cluster *cl = r->cl;
    char why[400] = "", one[300];
    size_t wl = 0;
    int refused = 1;
    size_t n = cl->nroutes + r->node.nseeds;
    for (size_t k = 0; k < n; k++) {
        const char *addr = k < cl->nroutes ? cl->routes[k].addr : r->node.seeds[k - cl->nroutes];
        r->refused = 0;
        one[0] = '\0';
        if (cluster_read_map(r, addr, one, sizeof one) == 0) {
            cl->map_ok = 1;
            r->refused = 0;
            return 0;
        }
        refused &= r->refused;
        int w = snprintf(why + wl, sizeof why - wl, "%s%s: %s", wl ? "; " : "", addr, one);
        if (w > 0)
            wl = wl + (size_t)w < sizeof why ? wl + (size_t)w : sizeof why - 1;
    }
    redis_set_error(r, "redis cluster: no node gave the slot map (%s)", why);
    r->refused = refused;
    return -1;
}

static int cluster_ensure(lapse_redis *r)
{
    if (r->cl->map_ok)
        return 0;
    int64_t now = lapse_clock_mono_ms();
    if (now < r->next_attempt_ms)
        return -1; /* errstr still says why the last attempt failed */
    if (cluster_refresh(r) < 0)
        return redis_retry_after(r, now);
    if (!r->connected_once && cluster_check_all(r) < 0)
        return redis_retry_after(r, now);
    r->connected_once = 1;
    lapse_backoff_reset(&r->backoff);
    return 0;
}

static int cluster_ready(const lapse_redis *r)
{
    return r->cl->map_ok;
}

/* The route to addr, added if new; NULL if out of memory. */
static struct route *cluster_route(struct redis_cluster *cl, const char *addr)
{
    for (size_t i = 0; i < cl->nroutes; i++)
        if (strcmp(cl->routes[i].addr, addr) == 0)
            return &cl->routes[i];
    if (cl->nroutes == cl->cap_routes) {
        size_t cap = cl->cap_routes ? 2 * cl->cap_routes : 8;
        struct route *a = realloc(cl->routes, cap * sizeof *a);
        if (!a)
            return NULL;
        cl->routes = a;
        cl->cap_routes = cap;
    }
    struct route *rt = &cl->routes[cl->nroutes++];
    memset(rt, 0, sizeof *rt);
    snprintf(rt->addr, sizeof rt->addr, "%s", addr);
    return rt;
}

/* Connects a route: AUTH, then the scripts. */
static int cluster_connect(lapse_redis *r, struct route *rt)
{
    char host[256], err[300];
    int port;
    if (redis_split_addr(rt->addr, host, sizeof host, &port) < 0) {
        redis_set_error(r, "redis cluster: primary %s: not host:port", rt->addr);
        return -1;
    }
    snprintf(r->addr, sizeof r->addr, "%s", rt->addr);
    lapse_conn *c = redis_open_auth(r, host, port, err, sizeof err);
    char who[LAPSE_CLUSTER_ADDR_MAX + 32];
    snprintf(who, sizeof who, "cluster: primary %s", rt->addr);
    int rc = 0;
    if (c && ((rc = redis_policy_check(r, c, who, err, sizeof err)) ||
              redis_load_scripts_on(r, c, err, sizeof err) < 0)) {
        r->refused |= rc == -2;
        lapse_conn_free(c);
        c = NULL;
    }
    if (!c) {
        redis_set_error(r, "redis cluster: primary %s: %s", rt->addr, err);
        return -1;
    }
    rt->c = c;
    return 0;
}

/* The hash tag of a key ("" if it has none or it is too long to keep). */
static void cluster_tag(const char *key, size_t len, char *tag)
{
    size_t off = 0, tl = 0;
    if (!lapse_slot_tag(key, len, &off, &tl) || tl >= TAG_MAX)
        tl = 0;
    memcpy(tag, key + off, tl);
    tag[tl] = '\0';
}

/* 1 for a command that never writes (the reads the programs send): it
 * makes no WAIT due on its primary. A read there would otherwise cost a
 * WAIT, which on a primary short of replicas waits out its whole timeout
 * (a producer rereads its layout every second, and the layout's primary
 * may be the short one). A keyed command not named here counts as a
 * write. */
static int cluster_read_only(const char *cmd, size_t len)
{
    static const char *const reads[] = {"GET",    "HGET",  "HMGET", "HGETALL", "EXISTS",
                                        "ZRANGE", "ZSCAN", "ZCARD", "ZSCORE",  "TYPE"};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
        if (len == strlen(reads[i]) && strncasecmp(cmd, reads[i], len) == 0)
            return 1;
    return 0;
}

/* Room for one more entry at the end of the queue of replies due. */
static int cluster_due_room(struct redis_cluster *cl)
{
    if (cl->head + cl->ndue < cl->cap_due)
        return 0;
    if (cl->head > 0) { /* slide the queue to the front */
        memmove(cl->due, cl->due + cl->head, cl->ndue * sizeof *cl->due);
        cl->head = 0;
        return 0;
    }
    size_t cap = cl->cap_due ? 2 * cl->cap_due : 64;
    size_t *d = realloc(cl->due, cap * sizeof *d);
    if (!d)
        return -1;
    cl->due = d;
    cl->cap_due = cap;
    return 0;
}

static int cluster_append_slot(lapse_redis *r, const struct redis_cmd *cmd, uint16_t slot)
{
    struct redis_cluster *cl = r->cl;
    if (cluster_ensure(r) < 0)
        return -1;
    const char *owner = lapse_cluster_owner(&cl->map, slot);
    if (!owner) {
        redis_set_error(r, "redis cluster: no primary serves slot %u (is the cluster ok?)", slot);
        return cluster_fail(r, 1);
    }
    struct route *rt = cluster_route(cl, owner);
    if (!rt || cluster_due_room(cl) < 0) {
        redis_set_error(r, "redis cluster: out of memory");
        return cluster_fail(r, 0);
    }
    if (!rt->c && cluster_connect(r, rt) < 0)
        return cluster_fail(r, 1);
    if (strcmp(r->addr, rt->addr) != 0) /* (a route may have been connected by a check) */
        snprintf(r->addr, sizeof r->addr, "%s", rt->addr);
    if (redis_cmd_append(rt->c, cmd) < 0) {
        redis_set_error(r, "redis cluster: out of memory");
        return cluster_fail(r, 0);
    }
    /* keyless commands (INFO, PING) write nothing, nor do reads */
    if (cmd->key && !cluster_read_only(cmd->name, cmd->namelen)) {
        cluster_tag(cmd->key, cmd->keylen, rt->tag);
        rt->wrote = 1;
    }
    cl->due[cl->head + cl->ndue++] = (size_t)(rt - cl->routes);
    return 0;
}

/* The backend's append: to cmd->slot's owner, or its key's (keyless: slot 0's). */
static int cluster_append(lapse_redis *r, const struct redis_cmd *cmd)
{
    uint16_t at = cmd->slot >= 0 ? (uint16_t)cmd->slot
                  : cmd->key     ? lapse_slot(cmd->key, cmd->keylen)
                                 : 0;
    return cluster_append_slot(r, cmd, at);
}

static int cluster_send(lapse_redis *r)
{
    struct redis_cluster *cl = r->cl;
    for (size_t i = 0; i < cl->nroutes; i++)
        if (cl->routes[i].c && lapse_conn_flush(cl->routes[i].c) < 0) {
            redis_set_error(r, "redis cluster: primary %s: write: %s", cl->routes[i].addr,
                            lapse_conn_errstr(cl->routes[i].c));
            return cluster_fail(r, 1);
        }
    return 0;
}

static int cluster_reply_fd(lapse_redis *r)
{
    struct redis_cluster *cl = r->cl;
    if (cl->ndue == 0)
        return -1;
    struct route *rt = &cl->routes[cl->due[cl->head]];
    return rt->c ? lapse_conn_fd(rt->c) : -1;
}

static int cluster_get_reply(lapse_redis *r, redisReply **reply)
{
    struct redis_cluster *cl = r->cl;
    *reply = NULL;
    if (cl->ndue == 0) {
        redis_set_error(r, "redis cluster: not connected");
        return -1;
    }
    struct route *rt = &cl->routes[cl->due[cl->head]];
    redisReply *rep = NULL;
    if (!rt->c || lapse_conn_reply(rt->c, &rep) < 0) {
        redis_set_error(r, "redis cluster: primary %s: reply: %s", rt->addr,
                        rt->c ? lapse_conn_errstr(rt->c) : "not connected");
        return cluster_fail(r, 1);
    }
    cl->head++;
    cl->ndue--;
    if (rep->type == REDIS_REPLY_ERROR) {
        uint16_t slot;
        char to[LAPSE_CLUSTER_ADDR_MAX];
        enum lapse_redirect how = lapse_cluster_redirect(rep->str, "", &slot, to, sizeof to);
        if (how != LAPSE_REDIRECT_NONE || redis_gone(rep->str)) {
            redis_set_error(r, "redis cluster: primary %s: %.200s", rt->addr, rep->str);
            freeReplyObject(rep);
            return cluster_fail(r, how != LAPSE_REDIRECT_RETRY);
        }
    }
    *reply = rep;
    return 0;
}

static int cluster_append_wait(lapse_redis *r, int replicas, int timeout_ms)
{
    struct redis_cluster *cl = r->cl;
    if (cluster_ensure(r) < 0)
        return -1;
    if (cl->wait_head + cl->nwaits == cl->cap_waits) { /* room for one more group */
        if (cl->wait_head > 0) {
            memmove(cl->waits, cl->waits + cl->wait_head, cl->nwaits * sizeof *cl->waits);
            cl->wait_head = 0;
        } else {
            size_t cap = cl->cap_waits ? 2 * cl->cap_waits : 16;
            size_t *w = realloc(cl->waits, cap * sizeof *w);
            if (!w) {
                redis_set_error(r, "redis cluster: out of memory");
                return cluster_fail(r, 0);
            }
            cl->waits = w;
            cl->cap_waits = cap;
        }
    }
    size_t group = 0;
    for (size_t i = 0; i < cl->nroutes; i++) {
        struct route *rt = &cl->routes[i];
        if (!rt->c || !rt->wrote)
            continue;
        /* the INCR (redis.h) must land on this primary: a key with the tag
         * of the last key sent there */
        char key[LAPSE_NS_MAX + TAG_MAX + 8], nrep[16], nms[16];
        int kl = snprintf(key, sizeof key, "%s:{%s}", r->wait_prefix, rt->tag);
        int rl = snprintf(nrep, sizeof nrep, "%d", replicas);
        int ml = snprintf(nms, sizeof nms, "%d", timeout_ms);
        const char *incr[] = {"INCR", key}, *wait[] = {"WAIT", nrep, nms};
        size_t incrl[] = {4, (size_t)kl}, waitl[] = {4, (size_t)rl, (size_t)ml};
        struct redis_cmd cmd;
        redis_cmd_argv(&cmd, 2, incr, incrl, 1, -1);
        if (cluster_append(r, &cmd) < 0)
            return -1;
        rt = &cl->routes[i]; /* (the append may have grown the routes) */
        /* WAIT is keyless: it goes where the INCR went */
        if (cluster_due_room(cl) < 0 || lapse_conn_append_argv(rt->c, 3, wait, waitl) < 0) {
            redis_set_error(r, "redis cluster: out of memory");
            return cluster_fail(r, 0);
        }
        cl->due[cl->head + cl->ndue++] = i;
        rt->wrote = 0;
        group++;
    }
    cl->waits[cl->wait_head + cl->nwaits++] = group;
    return 0;
}

static int cluster_wait_reply(lapse_redis *r, int replicas, int timeout_ms)
{
    struct redis_cluster *cl = r->cl;
    if (cl->nwaits == 0) {
        redis_set_error(r, "redis cluster: no WAIT is due");
        return cluster_fail(r, 0);
    }
    size_t group = cl->waits[cl->wait_head++];
    cl->nwaits--;
    int rc = 0, failed = 0; /* failed: a reply other than too few replicas */
    for (size_t i = 0; i < cl->nroutes; i++)
        cl->routes[i].wait_short = 0;
    for (size_t k = 0; k < group; k++) {
        char addr[LAPSE_CLUSTER_ADDR_MAX];
        size_t at = cl->ndue ? cl->due[cl->head] : 0;
        snprintf(addr, sizeof addr, "%s", cl->ndue ? cl->routes[at].addr : "?");
        redisReply *incr, *wait;
        if (cluster_get_reply(r, &incr) < 0)
            return -1;
        int counted = incr->type == REDIS_REPLY_INTEGER;
        if (!counted && rc == 0)
            redis_set_error(r, "redis cluster: primary %s: INCR: %.200s", addr,
                            incr->type == REDIS_REPLY_ERROR ? incr->str : "unexpected reply");
        freeReplyObject(incr);
        if (cluster_get_reply(r, &wait) < 0)
            return -1;
        if (rc == 0 && counted && (wait->type != REDIS_REPLY_INTEGER || wait->integer < replicas))
            redis_set_error(r,
                            "redis cluster: primary %s: WAIT: %lld of %d replicas took the "
                            "write within %d ms",
                            addr, wait->type == REDIS_REPLY_INTEGER ? wait->integer : 0LL, replicas,
                            timeout_ms);
        if (!counted || wait->type != REDIS_REPLY_INTEGER)
            failed = 1;
        else if (wait->integer < replicas)
            cl->routes[at].wait_short = 1;
        if (!counted || wait->type != REDIS_REPLY_INTEGER || wait->integer < replicas)
            rc = -1;
        freeReplyObject(wait);
    }
    /* only too few replicas: the others confirmed (redis.h) */
    return rc < 0 && !failed ? -2 : rc;
}

static int cluster_wait_short(const lapse_redis *r, const char *addr)
{
    const struct redis_cluster *cl = r->cl;
    for (size_t i = 0; addr && i < cl->nroutes; i++)
        if (strcmp(cl->routes[i].addr, addr) == 0)
            return cl->routes[i].wait_short;
    return 1; /* (asked after a WAIT fell short: a primary not known is not confirmed) */
}

static const struct lapse_cluster_map *cluster_map(lapse_redis *r)
{
    return cluster_ensure(r) < 0 ? NULL : &r->cl->map;
}

static const char *cluster_owner(lapse_redis *r, uint16_t slot)
{
    if (cluster_ensure(r) < 0)
        return NULL;
    return lapse_cluster_owner(&r->cl->map, slot);
}

const struct redis_backend redis_backend_cluster = {
    .open = cluster_open,
    .close = cluster_close,
    .ensure = cluster_ensure,
    .ready = cluster_ready,
    .append = cluster_append,
    .send = cluster_send,
    .reply_fd = cluster_reply_fd,
    .get_reply = cluster_get_reply,
    .disconnect = cluster_disconnect,
    .noscript = cluster_noscript,
    .append_wait = cluster_append_wait,
    .wait_reply = cluster_wait_reply,
    .wait_short = cluster_wait_short,
    .slot_owner = cluster_owner,
    .map = cluster_map,
    .servers = 0,
};
