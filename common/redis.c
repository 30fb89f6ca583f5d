/* redis — see redis.h. Connections are conn.h's; this module decides where
 * they go and keeps them up, through the node's backend (redis_priv.h).
 * Here: the public calls, each dispatched through the backend table
 * (r->be), and what every backend shares: making and freeing the handle,
 * the back-off between connects, loading the scripts on a connection and
 * the handle's error. No backend's state is touched here: the plain one's
 * is redis_single.c's, Sentinel's redis_sentinel.c's, a cluster's
 * redis_cluster.c's, the maxmemory-policy check's redis_policy.c's. */
#include "redis.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redis_priv.h"

void redis_set_error(lapse_redis *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->errstr, sizeof r->errstr, fmt, ap);
    va_end(ap);
}

static char *redis_dup(const char *s, int *oom)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *oom = 1;
    return d;
}

lapse_redis *lapse_redis_new(const struct lapse_config *cfg, size_t index, const char *wait_prefix)
{
    const struct lapse_redis_node *node = &cfg->nodes[index];
    lapse_redis *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    int oom = 0;
    r->index = index;
    snprintf(r->wait_prefix, sizeof r->wait_prefix, "%s", wait_prefix);
    struct lapse_redis_node *n = &r->node;
    n->host = redis_dup(node->host, &oom);
    n->port = node->port;
    n->master = redis_dup(node->master, &oom);
    n->sentinel_username = redis_dup(node->sentinel_username, &oom);
    n->sentinel_password = redis_dup(node->sentinel_password, &oom);
    n->username = redis_dup(node->username, &oom);
    n->password = redis_dup(node->password, &oom);
    n->db = node->db;
    n->tls = node->tls;
    if (node->tls) {
        r->tls_files[0] = redis_dup(cfg->redis_tls_ca_file, &oom);
        r->tls_files[1] = redis_dup(cfg->redis_tls_cert_file, &oom);
        r->tls_files[2] = redis_dup(cfg->redis_tls_key_file, &oom);
        r->tls_files[3] = redis_dup(cfg->redis_tls_server_name, &oom);
    }
    if (node->nseeds && (n->seeds = calloc(node->nseeds, sizeof *n->seeds))) {
        n->nseeds = node->nseeds;
        for (size_t i = 0; i < node->nseeds; i++)
            n->seeds[i] = redis_dup(node->seeds[i], &oom);
    } else if (node->nseeds) {
        oom = 1;
    }
    if (node->nsentinels && (n->sentinels = calloc(node->nsentinels, sizeof *n->sentinels))) {
        n->nsentinels = node->nsentinels;
        for (size_t i = 0; i < node->nsentinels; i++)
            n->sentinels[i] = redis_dup(node->sentinels[i], &oom);
    } else if (node->nsentinels) {
        oom = 1;
    }
    if (!(r->policy = redis_policy_new(cfg)))
        oom = 1;
    r->be = n->nseeds       ? &redis_backend_cluster
            : n->nsentinels ? &redis_backend_sentinel
                            : &redis_backend_plain;
    if (oom || (r->be->open && r->be->open(r) < 0)) {
        lapse_redis_free(r);
        return NULL;
    }
    r->connect_timeout_ms = cfg->redis_connect_timeout_ms;
    r->command_timeout_ms = cfg->redis_command_timeout_ms;
    lapse_backoff_init(&r->backoff, BACKOFF_MIN_MS, BACKOFF_MAX_MS);
    lapse_node_name(node, r->name, sizeof r->name);
    if (node->host)
        snprintf(r->addr, sizeof r->addr, "%s:%d", node->host, node->port);
    return r;
}

void lapse_redis_free(lapse_redis *r)
{
    if (!r)
        return;
    if (r->be && r->be->close)
        r->be->close(r);
    redis_policy_free(r->policy);
    lapse_tls_free(r->tls);
    for (size_t i = 0; i < 4; i++)
        free(r->tls_files[i]);
    struct lapse_redis_node *n = &r->node;
    free(n->host);
    free(n->master);
    free(n->sentinel_username);
    free(n->sentinel_password);
    free(n->username);
    free(n->password);
    for (size_t i = 0; i < n->nsentinels; i++)
        free(n->sentinels[i]);
    free(n->sentinels);
    for (size_t i = 0; i < n->nseeds; i++)
        free(n->seeds[i]);
    free(n->seeds);
    free(r);
}

void lapse_redis_disconnect(lapse_redis *r)
{
    r->be->disconnect(r);
}

int redis_load_scripts_on(lapse_redis *r, lapse_conn *c, char *err, size_t size)
{
    for (int s = 0; s < LAPSE_SCRIPT_COUNT; s++) {
        redisReply *reply = lapse_conn_command(c, "SCRIPT LOAD %s", lapse_script_source(s));
        if (!reply) {
            r->refused = lapse_conn_refused(c);
            snprintf(err, size, "SCRIPT LOAD: %s", lapse_conn_errstr(c));
            return -1;
        }
        if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
            snprintf(err, size, "SCRIPT LOAD: %.200s",
                     reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected reply");
            r->refused = reply->type == REDIS_REPLY_ERROR && redis_refusal(reply->str);
            freeReplyObject(reply);
            return -1;
        }
        memcpy(r->sha[s], reply->str, 41);
        freeReplyObject(reply);
    }
    return 0;
}

int redis_retry_after(lapse_redis *r, int64_t attempt_ms)
{
    r->next_attempt_ms = attempt_ms + lapse_backoff_next(&r->backoff);
    return -1;
}

int lapse_redis_ensure(lapse_redis *r)
{
    return r->be->ensure(r);
}

int lapse_redis_ensure_within(lapse_redis *r, int timeout_ms, volatile sig_atomic_t *stop,
                              lapse_redis_wait_cb *on_wait, void *ctx)
{
    int64_t give_up = lapse_clock_mono_ms() + timeout_ms;
    while (lapse_redis_ensure(r) < 0) {
        int64_t left = give_up - lapse_clock_mono_ms();
        if (r->refused || left <= 0 || (stop && *stop))
            return -1;
        /* (the last try falls at give_up, not a back-off step before it) */
        int wait = lapse_redis_backoff_ms(r);
        wait = wait < 1 ? 1 : wait > left ? (int)left : wait;
        if (on_wait)
            on_wait(ctx, r->errstr, wait);
        lapse_clock_sleep_ms(wait);
        if (stop && *stop)
            return -1;
    }
    return 0;
}

int lapse_redis_backoff_ms(const lapse_redis *r)
{
    if (r->be->ready(r))
        return 0;
    int64_t left = r->next_attempt_ms - lapse_clock_mono_ms();
    return left > 0 ? (int)left : 0;
}

/* One command, to the server its cmd says (the backend's append), and its
 * reply. */
static redisReply *redis_round_trip(lapse_redis *r, const struct redis_cmd *cmd)
{
    redisReply *reply = NULL;
    if (r->be->append(r, cmd) < 0 || r->be->get_reply(r, &reply) < 0)
        return NULL;
    return reply;
}

/* A formatted command: its key read off the format (redis_cmd.c), so the
 * backend routes it like any other; formatted once, by the connection. */
static redisReply *redis_vcommand(lapse_redis *r, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    struct redis_cmd cmd;
    int rc = redis_cmd_format(&cmd, fmt, &aq, -1);
    redisReply *reply = NULL;
    if (rc < 0 || cmd.argc < 1)
        redis_set_error(r, "redis %s: %s", r->name,
                        rc == -2 ? "a malformed command format"
                        : rc < 0 ? "out of memory"
                                 : "an empty command");
    else
        reply = redis_round_trip(r, &cmd);
    redis_cmd_done(&cmd);
    va_end(aq);
    return reply;
}

redisReply *lapse_redis_command(lapse_redis *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = redis_vcommand(r, fmt, ap);
    va_end(ap);
    return reply;
}

redisReply *lapse_redis_command_argv(lapse_redis *r, int argc, const char **argv,
                                     const size_t *argvlen)
{
    struct redis_cmd cmd;
    redis_cmd_argv(&cmd, argc, argv, argvlen, redis_cmd_key_arg(argc, argv, argvlen), -1);
    return redis_round_trip(r, &cmd);
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
    struct redis_cmd cmd;
    redis_cmd_argv(&cmd, argc + 3, v, l, nkeys > 0 ? 3 : -1, -1);
    int rc = r->be->append(r, &cmd);
    if (v != sv) {
        free(v);
        free(l);
    }
    return rc;
}

int lapse_redis_append_argv(lapse_redis *r, int argc, const char **argv, const size_t *argvlen)
{
    struct redis_cmd cmd;
    redis_cmd_argv(&cmd, argc, argv, argvlen, redis_cmd_key_arg(argc, argv, argvlen), -1);
    return r->be->append(r, &cmd);
}

int lapse_redis_send(lapse_redis *r)
{
    return r->be->send(r);
}

int lapse_redis_reply_fd(lapse_redis *r)
{
    return r->be->reply_fd(r);
}

int lapse_redis_get_reply(lapse_redis *r, redisReply **reply)
{
    *reply = NULL;
    return r->be->get_reply(r, reply);
}

int lapse_redis_noscript(lapse_redis *r, const redisReply *reply)
{
    if (reply && reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "NOSCRIPT", 8) == 0) {
        r->be->noscript(r);
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

int lapse_redis_append_wait(lapse_redis *r, int replicas, int timeout_ms)
{
    return r->be->append_wait(r, replicas, timeout_ms);
}

int lapse_redis_wait_reply(lapse_redis *r, int replicas, int timeout_ms)
{
    return r->be->wait_reply(r, replicas, timeout_ms);
}

int lapse_redis_wait(lapse_redis *r, int replicas, int timeout_ms)
{
    if (replicas <= 0)
        return 0;
    if (lapse_redis_append_wait(r, replicas, timeout_ms) < 0)
        return -1;
    return lapse_redis_wait_reply(r, replicas, timeout_ms);
}

const char *lapse_redis_moved(lapse_redis *r)
{
    return r->be->moved ? r->be->moved(r) : NULL;
}

const char *lapse_redis_errstr(const lapse_redis *r)
{
    return r->errstr;
}
int lapse_redis_refused(const lapse_redis *r)
{
    return r->refused;
}
const char *lapse_redis_name(const lapse_redis *r)
{
    return r->name;
}
const char *lapse_redis_addr(const lapse_redis *r)
{
    return r->addr;
}
uint64_t lapse_redis_reconnects(const lapse_redis *r)
{
    return r->reconnects;
}
int lapse_redis_one_server(const lapse_redis *r)
{
    return r->be->servers;
}

const struct lapse_cluster_map *lapse_redis_cluster_map(lapse_redis *r)
{
    return r->be->map ? r->be->map(r) : NULL;
}

int lapse_redis_append_slot(lapse_redis *r, uint16_t slot, int argc, const char **argv,
                            const size_t *argvlen)
{
    struct redis_cmd cmd;
    redis_cmd_argv(&cmd, argc, argv, argvlen, -1, slot);
    return r->be->append(r, &cmd);
}

redisReply *lapse_redis_command_slot(lapse_redis *r, uint16_t slot, int argc, const char **argv,
                                     const size_t *argvlen)
{
    struct redis_cmd cmd;
    redis_cmd_argv(&cmd, argc, argv, argvlen, -1, slot);
    return redis_round_trip(r, &cmd);
}

int lapse_redis_wait_short(const lapse_redis *r, const char *addr)
{
    return r->be->wait_short(r, addr);
}

const char *lapse_redis_slot_owner(lapse_redis *r, uint16_t slot)
{
    return r->be->slot_owner(r, slot);
}
