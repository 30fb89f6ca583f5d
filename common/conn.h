/*
 * conn — one connection to one Redis (or Sentinel) address, plain or TLS.
 *
 * hiredis formats every command into its context's output buffer and parses
 * every reply with its redisReader, in both cases; only the bytes travel
 * differently: through hiredis's own socket I/O, or through a TLS session
 * (tls.h) on the socket hiredis connected. Callers see one interface and
 * pipeline as with hiredis: append any number of commands, then read one
 * reply per command in order.
 *
 * The socket has the command timeout as its send and receive timeout: a
 * reply that does not come in time is a failure like a lost connection.
 * After any failure the connection is unusable (the caller frees it);
 * errors are one line in lapse_conn_errstr. Never prints. Not thread-safe.
 */
#ifndef LAPSE_CONN_H
#define LAPSE_CONN_H

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stddef.h>

#include "tls.h"

typedef struct lapse_conn lapse_conn;

/* Connects to host:port (a TLS handshake on top when tls is not NULL; tls
 * stays the caller's and must outlive the connection). NULL with err
 * ("connect: reason", "TLS handshake: reason"), and *refused set when
 * trying again cannot help (lapse_tls_start). */
lapse_conn *lapse_conn_open(const char *host, int port, lapse_tls *tls, int connect_timeout_ms,
                            int command_timeout_ms, int *refused, char *err, size_t size);
void lapse_conn_free(lapse_conn *k); /* accepts NULL */

/* Queue a command (0, or -1 out of memory). */
int lapse_conn_append(lapse_conn *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int lapse_conn_vappend(lapse_conn *k, const char *fmt, va_list ap);
int lapse_conn_append_argv(lapse_conn *k, int argc, const char **argv, const size_t *argvlen);

/* Writes everything queued. 0, or -1 (connection failed). */
int lapse_conn_flush(lapse_conn *k);

/* The next reply, after writing what is queued: 0 with *reply (the caller
 * frees it with freeReplyObject; Redis errors are replies), or -1. */
int lapse_conn_reply(lapse_conn *k, redisReply **reply);

/* append + reply: the reply, or NULL on failure. */
redisReply *lapse_conn_command(lapse_conn *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
redisReply *lapse_conn_vcommand(lapse_conn *k, const char *fmt, va_list ap);
redisReply *lapse_conn_command_argv(lapse_conn *k, int argc, const char **argv,
                                    const size_t *argvlen);

/* The socket, for a caller that waits for a reply with poll(2) before
 * reading it (a blocking command's); -1 after a failure. */
int lapse_conn_fd(const lapse_conn *k);

/* 1 when the last failure was a TLS protocol error (lapse_tls_broken):
 * the server refused us, trying again will not help. */
int lapse_conn_refused(const lapse_conn *k);

/* Why the last call failed ("connection lost" if nobody said). */
const char *lapse_conn_errstr(const lapse_conn *k);

#endif
