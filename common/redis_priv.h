/*
 * redis_priv — the redis module's own: the handle's fields and what its
 * files share: redis.c (a node, kept connected), redis_sentinel.c (finding
 * a Sentinel node's primary), redis_cluster.c (a Redis Cluster as one node,
 * each command routed by its key's slot), redis_open.c (one authenticated
 * connection; its error replies told apart). Included by those files only.
 */
#ifndef LAPSE_REDIS_PRIV_H
#define LAPSE_REDIS_PRIV_H

#include <stdint.h>

#include "backoff.h"
#include "cluster.h"
#include "config.h"
#include "conn.h"
#include "layout.h"
#include "redis.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 1000

struct redis_cluster;

struct lapse_redis {
    lapse_conn *c;                  /* NULL while disconnected (not used for a cluster) */
    struct redis_cluster *cl;       /* a Redis Cluster node (redis_cluster.c), or NULL */
    lapse_tls *tls;                 /* node.tls: made at the first connect */
    char *tls_files[4];             /* redis.tls: ca, cert, key, server_name */
    char name[LAPSE_NODE_NAME_MAX]; /* the node's name: host:port, master name or "cluster" */
    char addr[300];                 /* host:port connected to (or last tried) */
    struct lapse_redis_node node;   /* deep copy of the config's entry */
    const char *ns;                 /* the namespace (the config's) */
    size_t sentinel_first;          /* the sentinel to ask first: the last that answered */
    lapse_conn *sentinel_conn;      /* kept to confirm the primary (redis_sentinel_check) */
    size_t sentinel_conn_at;        /* the sentinel it is connected to */
    char moved[1024];               /* why it left a primary the sentinels replaced */
    int moved_unread;               /* moved is news for lapse_redis_moved */
    int64_t confirm_at_ms;          /* monotonic: when to confirm the primary next */
    int confirm_failed;             /* confirmations in a row no sentinel answered */
    int pending;                    /* replies owed on c (appended, not yet read) */
    int connect_timeout_ms, command_timeout_ms;
    char sha[LAPSE_SCRIPT_COUNT][41];
    int scripts_loaded;           /* 0: load before the next call */
    int64_t next_attempt_ms;      /* monotonic: earliest reconnect */
    struct lapse_backoff backoff; /* between failed connects */
    int connected_once;
    int refused; /* the last connect failed for good (redis.h) */
    uint64_t reconnects;
    char wait_key[LAPSE_NS_MAX + 32]; /* NS:w:N, INCRed before each WAIT */
    int accept_eviction;              /* redis.accept_eviction */
    const char *policy_checked;       /* redis.policy_checked (the config's), or NULL */
    int policy_state;                 /* enum redis_policy_state: what to say */
    int64_t policy_next_ms;           /* monotonic: when to say policy_msg again */
    char policy_msg[512];             /* what lapse_redis_policy_news returns */
    char policy_who[300];             /* the server policy_msg is about (a cluster
                                      * handle has several primaries) */
    char errstr[512];
};

enum redis_policy_state {
    REDIS_POLICY_OK = 0,   /* noeviction (or not checked yet): nothing to say */
    REDIS_POLICY_UNREAD,   /* the ACL denies reading it: said once */
    REDIS_POLICY_ACCEPTED, /* evicting, with redis.accept_eviction: warned hourly */
    REDIS_POLICY_EVICTING, /* evicting, found at a reconnect: an error hourly */
};

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

/* redis_sentinel.c: asks the node's sentinels, in turn from the one that
 * answered last (r->sentinel_first, updated), where its primary is. 0 with
 * host and port, or -1 with r->errstr naming every sentinel's failure and
 * r->refused set if one refused for good. */
int redis_discover(lapse_redis *r, char *host, size_t hsize, int *port);

/* How often a connected Sentinel node's primary is confirmed (ms). */
#define REDIS_CONFIRM_EVERY_MS 1000

/* redis_sentinel.c: confirms a connected Sentinel node's primary with a
 * sentinel, once every REDIS_CONFIRM_EVERY_MS and only while no reply is
 * owed (replies still owed would be lost with the connection). When the
 * sentinels name another server it drops the connection, for
 * lapse_redis_ensure to connect where they say at once (r->moved says
 * why). When no sentinel answers, the primary in use is kept (an outage of
 * the sentinels alone is no reason to leave it) and the next try waits
 * twice as long. Returns -1 when it dropped the connection, else 0. */
int redis_sentinel_check(lapse_redis *r);

/* redis_sentinel.c: 1 if the server on c is a primary, 0 if not, -1 with
 * err on failure (HELLO's role field: ROLE and INFO are @dangerous). */
int redis_is_primary(lapse_conn *c, char *err, size_t size);

/* redis_cluster.c: the same calls as redis.h's, for a cluster node. */
int redis_cluster_new(lapse_redis *r);
int redis_cluster_reply_fd(lapse_redis *r);
void redis_cluster_free(lapse_redis *r);
int redis_cluster_ensure(lapse_redis *r);
int redis_cluster_ready(const lapse_redis *r); /* 1 while the slot map is known */
int redis_cluster_append(lapse_redis *r, int argc, const char **argv, const size_t *argvlen,
                         int key);
/* ... with the slot given: to its owner (key: the key's index, or -1) */
int redis_cluster_append_slot(lapse_redis *r, int argc, const char **argv, const size_t *argvlen,
                              int key, uint16_t slot);
int redis_cluster_get_reply(lapse_redis *r, redisReply **reply);
const struct lapse_cluster_map *redis_cluster_map(lapse_redis *r);
int redis_cluster_send(lapse_redis *r);
void redis_cluster_disconnect(lapse_redis *r);
void redis_cluster_noscript(lapse_redis *r);
int redis_cluster_append_wait(lapse_redis *r, int replicas, int timeout_ms);
int redis_cluster_wait_reply(lapse_redis *r, int replicas, int timeout_ms);
int redis_cluster_wait_short(const lapse_redis *r, const char *addr);
const char *redis_cluster_owner(lapse_redis *r, uint16_t slot);

#endif
