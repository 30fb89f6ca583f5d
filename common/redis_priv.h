/*
 * redis_priv — the redis module's own: the handle's fields, its backends
 * and what its files share. Included by these files only:
 *   redis.c           the public calls, each dispatched through the node's
 *                     backend, and what every backend shares (the handle's
 *                     making, back-off, scripts, errors)
 *   redis_cmd.c       a command as the backends take it (argv or a format)
 *                     and the key a cluster routes it by
 *   redis_single.c    the plain backend: one server's connection
 *                     (struct redis_single), the Sentinel backend's too
 *   redis_sentinel.c  the Sentinel backend's own: finding and confirming
 *                     the primary (struct redis_sentinel)
 *   redis_cluster.c   the Cluster backend: a connection per primary, each
 *                     command routed by its key's slot (struct redis_cluster)
 *   redis_policy.c    the maxmemory-policy check of each new connection to
 *                     a primary (struct redis_policy)
 *   redis_open.c      one authenticated connection; its error replies told
 *                     apart
 * Each backend's and the check's state is a struct of its own file, opaque
 * to the others, reached through the handle (r->one, r->sn, r->cl,
 * r->policy); what the handle itself holds is what every backend uses.
 */
#ifndef LAPSE_REDIS_PRIV_H
#define LAPSE_REDIS_PRIV_H

#include <stdarg.h>
#include <stdint.h>

#include "backoff.h"
#include "cluster.h"
#include "config.h"
#include "conn.h"
#include "redis.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 1000

struct redis_single;
struct redis_cluster;
struct redis_sentinel;
struct redis_policy;

/* How many of a format's first words redis_cmd_format composes: enough
 * for EVAL's first key (EVAL script nkeys key). */
#define REDIS_CMD_WORDS 4

/*
 * A command as the backends take it (redis_cmd.c): its words as argv, or
 * a hiredis format with its arguments, formatted only when appended to a
 * connection; with its name and its key read off either, for routing.
 */
struct redis_cmd {
    int argc;              /* its words */
    const char **argv;     /* the words (with argvlen), or NULL: fmt and ap */
    const size_t *argvlen; /* (argv's) */
    const char *fmt;       /* a hiredis format ... */
    va_list *ap;           /* ... and its arguments (not consumed: each use copies) */
    const char *name;      /* word 0 (namelen bytes) */
    size_t namelen;        /* (name's) */
    const char *key;       /* the key it is routed by (keylen bytes), or NULL: keyless */
    size_t keylen;         /* (key's) */
    int slot;              /* >= 0: to that slot's server, whatever its key */
    char *own;             /* a format's first words (redis_cmd_done frees it) */
};

/* Which word of argv a cluster routes by: the first key of EVAL/EVALSHA,
 * argv[1] of anything else; -1 for keyless commands. */
int redis_cmd_key_arg(int argc, const char **argv, const size_t *argvlen);

/* cmd for argv, routed by argv[key] (-1: keyless) or, with slot >= 0, to
 * that slot's server. cmd points into argv: it lives no longer. */
void redis_cmd_argv(struct redis_cmd *cmd, int argc, const char **argv, const size_t *argvlen,
                    int key, int slot);

/* cmd for a format and its arguments (*ap is only copied, never consumed:
 * it must outlive cmd), its key found as redis_cmd_key_arg finds it, or
 * with slot >= 0 routed to that slot's server. 0; -1 out of memory, -2 a
 * format hiredis does not take. redis_cmd_done frees what it made, also
 * after a failure. */
int redis_cmd_format(struct redis_cmd *cmd, const char *fmt, va_list *ap, int slot);
void redis_cmd_done(struct redis_cmd *cmd);

/* Appends cmd to c's output (lapse_conn_append_argv or _vappend): 0, or -1
 * (out of memory). */
int redis_cmd_append(lapse_conn *c, const struct redis_cmd *cmd);

/*
 * A backend: how a handle reaches its servers, one table of operations per
 * kind of node (OpenSMTPD's scheduler backends are the model). lapse_redis_new
 * picks the node's, and redis.c's public calls go through it, so no caller
 * asks which kind it has:
 *   redis_backend_plain     one server, at the configured address (redis_single.c)
 *   redis_backend_sentinel  one server, the primary the sentinels name
 *                           (redis_sentinel.c; the connection is redis_single.c's)
 *   redis_backend_cluster   a connection per primary, each command routed by
 *                           its key's slot (redis_cluster.c)
 * Each operation has the contract of the lapse_redis_ call of its name
 * (redis.h); the others are said here.
 */
struct redis_backend {
    int (*open)(lapse_redis *r);        /* makes its state: 0, or -1 (out of memory) */
    void (*close)(lapse_redis *r);      /* frees what open made (even a half-made state) */
    int (*ensure)(lapse_redis *r);      /* lapse_redis_ensure */
    int (*ready)(const lapse_redis *r); /* 1: a call now needs no connect first */
    /* queues cmd for the server of its key's slot (keyless: any) or, with
     * cmd->slot >= 0, of that slot's */
    int (*append)(lapse_redis *r, const struct redis_cmd *cmd);
    int (*send)(lapse_redis *r);
    int (*reply_fd)(lapse_redis *r);
    int (*get_reply)(lapse_redis *r, redisReply **reply);
    void (*disconnect)(lapse_redis *r); /* drops every connection and the replies owed */
    void (*noscript)(lapse_redis *r);   /* a NOSCRIPT reply: make every server load them again */
    int (*append_wait)(lapse_redis *r, int replicas, int timeout_ms);
    int (*wait_reply)(lapse_redis *r, int replicas, int timeout_ms);
    int (*wait_short)(const lapse_redis *r, const char *addr);
    const char *(*slot_owner)(lapse_redis *r, uint16_t slot);
    const struct lapse_cluster_map *(*map)(lapse_redis *r); /* NULL: no slot map */
    /* one server: where it is now (host, port; NULL: the configured
     * address), and a look at it before each call (NULL: none) */
    int (*locate)(lapse_redis *r, char *host, size_t hsize, int *port);
    int (*check)(lapse_redis *r);         /* called only while no reply is owed */
    const char *(*moved)(lapse_redis *r); /* lapse_redis_moved (NULL: it never moves) */
    int must_be_primary; /* the server located may be a replica: make sure it is not */
    int servers;         /* 1: one server holds every key; 0: several (one per primary) */
};

extern const struct redis_backend redis_backend_plain, redis_backend_sentinel,
    redis_backend_cluster;

/* redis_single.c: the one connection of a plain or Sentinel node, as the backend
 * operations of that name (redis_sentinel.c's table uses them too). */
int redis_single_open(lapse_redis *r);
void redis_single_close(lapse_redis *r);
int redis_single_ensure(lapse_redis *r);
int redis_single_ready(const lapse_redis *r);
int redis_single_append(lapse_redis *r, const struct redis_cmd *cmd);
int redis_single_send(lapse_redis *r);
int redis_single_reply_fd(lapse_redis *r);
int redis_single_get_reply(lapse_redis *r, redisReply **reply);
void redis_single_disconnect(lapse_redis *r);
void redis_single_noscript(lapse_redis *r);
int redis_single_append_wait(lapse_redis *r, int replicas, int timeout_ms);
int redis_single_wait_reply(lapse_redis *r, int replicas, int timeout_ms);
int redis_single_wait_short(const lapse_redis *r, const char *addr);
const char *redis_single_slot_owner(lapse_redis *r, uint16_t slot);

/* The operations of a backend of one server (plain, Sentinel's too). */
#define REDIS_SINGLE_OPS                                                                       \
    .ensure = redis_single_ensure, .ready = redis_single_ready, .append = redis_single_append, \
    .send = redis_single_send, .reply_fd = redis_single_reply_fd,                              \
    .get_reply = redis_single_get_reply, .disconnect = redis_single_disconnect,                \
    .noscript = redis_single_noscript, .append_wait = redis_single_append_wait,                \
    .wait_reply = redis_single_wait_reply, .wait_short = redis_single_wait_short,              \
    .slot_owner = redis_single_slot_owner, .servers = 1

struct lapse_redis {
    const struct redis_backend *be; /* how it reaches its servers */
    struct redis_single *one;  /* a plain or Sentinel node's connection (redis_single.c), or NULL */
    struct redis_cluster *cl;  /* a Redis Cluster node's state (redis_cluster.c), or NULL */
    struct redis_sentinel *sn; /* a Sentinel node's state (redis_sentinel.c), or NULL */
    lapse_tls *tls;            /* node.tls: made at the first connect */
    char *tls_files[4];        /* redis.tls: ca, cert, key, server_name */
    char name[LAPSE_NODE_NAME_MAX]; /* the node's name: host:port, master name or "cluster" */
    char addr[300];                 /* host:port connected to (or last tried) */
    struct lapse_redis_node node;   /* deep copy of the config's entry */
    int connect_timeout_ms, command_timeout_ms; /* redis.connect_timeout_ms, command_timeout_ms */
    char sha[LAPSE_SCRIPT_COUNT][41];           /* each script's SHA-1 (EVALSHA), in hex */
    int64_t next_attempt_ms;                    /* monotonic: earliest reconnect */
    struct lapse_backoff backoff;               /* between failed connects */
    int connected_once;  /* 0 until the first connect (the policy check refuses then) */
    int refused;         /* the last connect failed for good (redis.h) */
    uint64_t reconnects; /* lapse_redis_reconnects */
    size_t index;        /* the node's place in redis.nodes */
    char wait_prefix[LAPSE_NS_MAX + 8]; /* "NS:w" (lapse_redis_new): WAIT's keys start so */
    struct redis_policy *policy;        /* the maxmemory-policy check's state (redis_policy.c) */
    char errstr[512];                   /* lapse_redis_errstr */
};

/* redis_policy.c: the check's state for a handle made from cfg
 * (redis.accept_eviction, redis.policy_checked: cfg must outlive it), or
 * NULL (out of memory); freed by redis_policy_free (accepts NULL). */
struct redis_policy *redis_policy_new(const struct lapse_config *cfg);
void redis_policy_free(struct redis_policy *p);

/* redis_policy.c: checks maxmemory-policy on a fresh connection to a
 * primary (after AUTH and SELECT); who names it in messages. 0 (what to
 * log kept for lapse_redis_policy_news), -1 with err on a connection
 * failure, -2 with err when the handle must refuse: an evicting policy at
 * its first connect, without redis.accept_eviction. */
int redis_policy_check(lapse_redis *r, lapse_conn *c, const char *who, char *err, size_t size);

void redis_set_error(lapse_redis *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An attempt to connect (or read a cluster's map) begun at attempt_ms
 * failed: the next one waits for the back-off's next step from then.
 * Returns -1. */
int redis_retry_after(lapse_redis *r, int64_t attempt_ms);

/* Makes r->tls for a node with tls = true (once; its files are read then).
 * 0, or -1 with the reason in err (r->refused set). */
int redis_tls(lapse_redis *r, char *err, size_t size);

/* A connection to host:port with the handle's timeouts, over TLS for a node
 * with tls = true (not authenticated); NULL with the reason in err, and
 * r->refused set when trying again cannot help. */
lapse_conn *redis_open(lapse_redis *r, const char *host, int port, char *err, size_t size);

/* One command's reply on a fresh connection that only has to be no error
 * (AUTH, SELECT; frees it). 0, or -1 with "WHAT: reason" in err (-2 when
 * the server refused for good: redis_refusal). */
int redis_expect_ok(lapse_conn *c, redisReply *reply, const char *what, char *err, size_t size);

/* AUTH as user (NULL: the default user) on a fresh connection; nothing is
 * sent without a password. 0, or -1 with "AUTH: reason" in err (-2 when the
 * server refused for good: redis_refusal). */
int redis_auth(lapse_conn *c, const char *user, const char *password, char *err, size_t size);

/* A connection to host:port, authenticated as the node's user (AUTH), over
 * TLS for a node with tls = true; NULL with the reason in err, and
 * r->refused set when trying again cannot help. */
lapse_conn *redis_open_auth(lapse_redis *r, const char *host, int port, char *err, size_t size);

/* SCRIPT LOADs every script on c (their SHAs into r->sha). 0, or -1 with
 * "SCRIPT LOAD: reason" in err (r->refused set for an ACL denial). */
int redis_load_scripts_on(lapse_redis *r, lapse_conn *c, char *err, size_t size);

/* 1 for an error reply that retrying will not change (a wrong password, an
 * unknown user, a command or key the ACL denies). */
int redis_refusal(const char *msg);

/* 1 for READONLY, LOADING, MASTERDOWN: not applied, try again elsewhere. */
int redis_gone(const char *msg);

/* "host:port" ("[v6]:port" too) into host and port; 0, or -1 if malformed. */
int redis_split_addr(const char *a, char *host, size_t hsize, int *port);

/* redis_sentinel.c: 1 if the server on c is a primary, 0 if not, -1 with
 * err on failure (HELLO's role field: ROLE and INFO are @dangerous). */
int redis_is_primary(lapse_conn *c, char *err, size_t size);

#endif
