/*
 * redis — one configured node (an entry of redis.nodes), kept connected to
 * its primary.
 *
 * A lapse_redis owns a hiredis context that it (re)connects on demand with
 * exponential back-off (100 ms doubling to 1 s, jittered: backoff.h). A plain
 * node is one address; a Sentinel node's primary is asked of its sentinels
 * at every (re)connect, in turn from the last that answered, and confirmed
 * with HELLO's role, so a failover is followed by reconnecting. Then it
 * authenticates (AUTH [user] password), selects the db, checks the
 * server's maxmemory-policy (redis_policy.c: an evicting one is refused at
 * the first connect) and loads every script of script.h so they can be
 * called by SHA.
 *
 * After any I/O error, a timeout, or a reply that says the server is no
 * primary now (READONLY, LOADING, MASTERDOWN: nothing was applied) the
 * context is dropped and the call fails as for a lost connection; the next
 * call reconnects (once the back-off allows) and reloads the scripts, so a
 * restarted Redis or a promoted replica is picked up without the caller
 * knowing. A NOSCRIPT reply (e.g. SCRIPT FLUSH) marks the scripts for
 * reloading too. Passwords are sent as arguments and never formatted into
 * a message.
 *
 * Errors: functions return -1 / NULL and leave a one-line reason, naming
 * the node, in lapse_redis_errstr(). Other Redis error replies are returned
 * as replies (type REDIS_REPLY_ERROR), not as failures. Not thread-safe: one
 * thread per lapse_redis.
 */
#ifndef LAPSE_REDIS_H
#define LAPSE_REDIS_H

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "config.h"
#include "script.h"

typedef struct lapse_redis lapse_redis;

/* Creates a disconnected handle for cfg->nodes[index]; copies what it
 * needs from cfg (timeouts, redis.tls). wait_prefix names the key a WAIT's
 * INCR writes (redis.h, lapse_redis_append_wait), to which the handle adds
 * ":<index>", or on a cluster ":{tag}" with the tag of the keys last sent
 * to that primary; the namespace's key names are layout.h's, so programs
 * open a node with lapse_node_open. NULL on allocation failure. */
lapse_redis *lapse_redis_new(const struct lapse_config *cfg, size_t index, const char *wait_prefix);
void lapse_redis_free(lapse_redis *r); /* accepts NULL */

/* Makes sure the connection is up and the scripts loaded. Returns 0, or -1 if
 * it is down and (re)connecting failed or the back-off forbids trying yet. */
int lapse_redis_ensure(lapse_redis *r);

/* What lapse_redis_ensure_within calls before each wait: why the last
 * attempt failed (errstr) and how long it waits now (ms). */
typedef void lapse_redis_wait_cb(void *ctx, const char *why, int wait_ms);

/* lapse_redis_ensure, waiting out an outage: a node not up yet, or the dead
 * primary its sentinels still name until they fail over. It tries again
 * when the back-off allows, for up to timeout_ms (redis.retry_timeout_ms),
 * which is how every program starts: an unreachable node is waited for at
 * start as once running, so a program started during a failover follows
 * it. Returns 0 once connected; -1 with errstr at once when the server
 * refused us (lapse_redis_refused: no wait helps), when *stop is set (stop
 * may be NULL), or when timeout_ms passed. on_wait (may be NULL) is called
 * before each wait, for the caller to say why it waits. */
int lapse_redis_ensure_within(lapse_redis *r, int timeout_ms, volatile sig_atomic_t *stop,
                              lapse_redis_wait_cb *on_wait, void *ctx);

/* A Sentinel node's handle confirms its primary with a sentinel at most
 * once a second (at a call that owes no reply) and, when the sentinels name
 * another server, reconnects there by itself: a primary replaced without
 * dying goes on answering until Sentinel demotes it, and writes taken
 * there meanwhile are lost. Why it moved, once per move for the caller to
 * log; NULL when it has not moved since the last call. */
const char *lapse_redis_moved(lapse_redis *r);

/* Milliseconds until the back-off allows the next connect attempt (0 = now). */
int lapse_redis_backoff_ms(const lapse_redis *r);

/* One command, waiting for the reply. The caller frees it with
 * freeReplyObject. NULL on connection failure (the context is dropped). */
redisReply *lapse_redis_command(lapse_redis *r, const char *fmt, ...);
redisReply *lapse_redis_command_argv(lapse_redis *r, int argc, const char **argv,
                                     const size_t *argvlen);

/* Calls script `s` (EVALSHA) with nkeys keys followed by args: argv holds the
 * keys then the args, argc of them in all. Reloads the scripts and retries
 * once on NOSCRIPT. Same ownership and errors as lapse_redis_command. */
redisReply *lapse_redis_eval(lapse_redis *r, enum lapse_script s, int nkeys, int argc,
                             const char **argv, const size_t *argvlen);

/* Pipelining: append any number of calls, then read one reply per call with
 * lapse_redis_get_reply in the same order. Append returns 0 or -1 (not
 * connected / out of memory). get_reply returns 0 with *reply set, or -1 on a
 * connection failure, after which every pending reply is lost and the calls
 * must be re-sent. */
int lapse_redis_append_eval(lapse_redis *r, enum lapse_script s, int nkeys, int argc,
                            const char **argv, const size_t *argvlen);
int lapse_redis_append_argv(lapse_redis *r, int argc, const char **argv, const size_t *argvlen);
int lapse_redis_get_reply(lapse_redis *r, redisReply **reply);

/* The socket the oldest reply owed arrives on (on a cluster node, its
 * primary's), for a caller that polls it before lapse_redis_get_reply, as
 * for a blocking command; -1 when no reply is owed or it is not connected. */
int lapse_redis_reply_fd(lapse_redis *r);

/* Writes the appended calls out now (get_reply would write them first
 * anyway): Redis runs them while the caller does other work and reads the
 * replies later. 0, or -1 on a connection failure (as get_reply). */
int lapse_redis_send(lapse_redis *r);

/*
 * Durable acknowledgement (redis.wait_replicas): WAIT until `replicas`
 * replicas took every write the server applied before it, or timeout_ms
 * passed. WAIT alone covers only the writes of its own connection, and a
 * write sent again that changes nothing (it was applied before its reply
 * was lost) propagates nothing, so a WAIT after it would answer at once.
 * So an INCR of NS:w:N (N the node's index) goes first: a write of this
 * connection made after everything the server applied before it.
 * append_wait queues both in the pipeline (0 or -1 as append); wait_reply
 * reads their replies: 0 when enough replicas answered; -2 with errstr when
 * every reply came and fewer replicas answered (the writes may be lost with
 * the primary: send them again or report them; the connection stays up);
 * -1 with errstr on a connection failure or an error reply (as get_reply).
 * lapse_redis_wait does both; replicas <= 0 returns 0 at once. WAIT is not strong
 * consistency: a write it confirmed survives the loss of the primary only
 * if a replica that has it is the one promoted.
 */
int lapse_redis_append_wait(lapse_redis *r, int replicas, int timeout_ms);
int lapse_redis_wait_reply(lapse_redis *r, int replicas, int timeout_ms);
int lapse_redis_wait(lapse_redis *r, int replicas, int timeout_ms);

/* After lapse_redis_wait_reply returned -2: 1 if the primary at addr (a
 * cluster's, as lapse_redis_slot_owner names it) was one whose WAIT fell
 * short or is not known, 0 if its WAIT saw enough replicas or it had none
 * in that group.
 * Any other node has one primary: 1. */
int lapse_redis_wait_short(const lapse_redis *r, const char *addr);

/* 1 if `reply` is Redis's NOSCRIPT error; also marks the scripts for reload. */
int lapse_redis_noscript(lapse_redis *r, const redisReply *reply);

/* Drops the connection; the next call reconnects. */
void lapse_redis_disconnect(lapse_redis *r);

const char *lapse_redis_errstr(const lapse_redis *r);

/* 1 when the last connect failed because the server refused us (a wrong
 * password, an unknown user, a command the ACL denies, an evicting
 * maxmemory-policy at the first connect): retrying will not help, so a
 * program starting up stops instead of waiting. */
int lapse_redis_refused(const lapse_redis *r);

/*
 * maxmemory-policy (redis_policy.c): every connection to a primary is
 * checked when it is made. An evicting policy refuses the handle's first
 * connect (lapse_redis_refused, the reason in errstr) unless
 * redis.accept_eviction; what the program should log about it (the
 * accepted risk, an evicting policy found at a reconnect, a policy the ACL
 * does not let it read) comes from lapse_redis_policy_news: a line when it
 * is due (at once, then hourly; the unreadable policy once), with *error
 * set to 1 when it is to be logged as an error; NULL when there is nothing
 * to say now. Call it often (it is cheap).
 */
const char *lapse_redis_policy_news(lapse_redis *r, int *error);

/* 1 for a maxmemory-policy under which Redis deletes keys to make room:
 * every one but noeviction ("" and NULL, unknown: 0). */
int lapse_redis_policy_evicts(const char *policy);

struct lapse_redis_memory {
    long long used;     /* used_memory, bytes; -1 unknown */
    long long max;      /* maxmemory, bytes; 0 no limit, -1 unknown */
    char policy[32];    /* maxmemory-policy; "" when it could not be read */
    char why[128];      /* with policy "": why ("INFO and CONFIG denied") */
    long long replicas; /* connected_slaves (lapse_redis_memory only); -1 unknown */
};

/* Parses the text of an INFO memory reply. 0, or -1 (m->why says why)
 * when it has no maxmemory_policy. */
int lapse_redis_memory_parse(const char *text, struct lapse_redis_memory *m);

/* Reads the memory of the node (on a cluster node, of the primary that owns
 * `slot`) and its connected replicas: INFO memory replication, else (the
 * ACL denies INFO) CONFIG GET, with replicas unknown. 0 with m
 * filled (m->policy "" and m->why when neither is allowed), or -1 on a
 * connection failure (errstr). */
int lapse_redis_memory(lapse_redis *r, uint16_t slot, struct lapse_redis_memory *m);

/* The node's name (lapse_node_name: "host:port", or the master name of a
 * Sentinel node), and the "host:port" last connected to or tried (a
 * Sentinel node's current primary; "" before the first attempt). */
const char *lapse_redis_name(const lapse_redis *r);
const char *lapse_redis_addr(const lapse_redis *r);
uint64_t lapse_redis_reconnects(const lapse_redis *r); /* successful reconnects after the first */

/*
 * A Redis Cluster node (redis.cluster) is the whole cluster: it reads the
 * slot map from its seeds (cluster.h) and keeps one connection per primary;
 * each command goes to the primary that owns its key's slot (the first key
 * of EVAL/EVALSHA, else argv[1]; keyless ones to the first primary), and
 * pipelined replies are read back in the order the calls were appended,
 * each from its primary, so a pipeline costs one round trip per primary.
 * A MOVED, ASK, TRYAGAIN or CLUSTERDOWN reply, like READONLY, drops every
 * connection and fails the call as a lost connection: the caller retries,
 * after the map is read again. WAIT goes to every primary written since
 * the last one. Every command of a pipeline must keep to one slot.
 */
/* 1 when one server holds every key of the handle's shards (a plain or
 * Sentinel node: a script may take any of its keys, and a WAIT from a second
 * connection confirms what the first wrote); 0 for a cluster node, whose
 * shards live on several primaries (a script keeps to one shard's slot; a
 * WAIT goes in the pipeline of each primary written, redis.h above). */
int lapse_redis_one_server(const lapse_redis *r);
/* The "host:port" of the primary serving `slot` on a cluster node (NULL if
 * none does, or before the map was read); any other node's address. */
const char *lapse_redis_slot_owner(lapse_redis *r, uint16_t slot);
/* A cluster node's slot map (cluster.h; read first if need be), or NULL:
 * not a cluster, or the map could not be read (errstr says why). */
const struct lapse_cluster_map *lapse_redis_cluster_map(lapse_redis *r);
/* Queues a command for the primary that owns `slot` (a cluster node;
 * elsewhere as lapse_redis_append_argv): for keyless ones (TIME, CLIENT)
 * that must go with a shard's keys to its primary. 0, or -1. */
int lapse_redis_append_slot(lapse_redis *r, uint16_t slot, int argc, const char **argv,
                            const size_t *argvlen);
/* One command on the primary that owns `slot` (a cluster node; elsewhere
 * as lapse_redis_command_argv): for keyless ones, like INFO, meant for one
 * primary. */
redisReply *lapse_redis_command_slot(lapse_redis *r, uint16_t slot, int argc, const char **argv,
                                     const size_t *argvlen);

#endif
