/*
 * tls — TLS to Redis and its sentinels, on OpenSSL.
 *
 * hiredis 0.14 has no TLS. conn.c keeps hiredis for what it is good at
 * (formatting commands into its output buffer, parsing replies with its
 * redisReader) and moves the bytes through a session of this module instead
 * of the bare socket: the TCP connection is hiredis's, the handshake and
 * every read and write after it are OpenSSL's. No RESP is parsed here.
 *
 * A lapse_tls is the client side of redis.tls: the CA that must have signed
 * the server's certificate (ca_file; the system's CAs when omitted), our
 * certificate and key for mutual TLS (cert_file + key_file), and the name
 * the server's certificate must carry (server_name; else the host we
 * connect to, an IP address checked as one). Peers are always verified.
 * Sessions run on a blocking socket whose timeouts the caller set.
 *
 * Errors: -1 / NULL with one line in the caller's err. Never prints.
 */
#ifndef LAPSE_TLS_H
#define LAPSE_TLS_H

#include <stddef.h>
#include <sys/types.h>

typedef struct lapse_tls lapse_tls;                 /* an SSL_CTX and the name to check */
typedef struct lapse_tls_session lapse_tls_session; /* one connection's SSL */

/* Loads the files (any may be NULL; cert_file and key_file go together).
 * NULL with err naming the file that failed. */
lapse_tls *lapse_tls_new(const char *ca_file, const char *cert_file, const char *key_file,
                         const char *server_name, char *err, size_t size);
void lapse_tls_free(lapse_tls *t); /* accepts NULL */

/* The handshake on connected socket fd, checking the certificate against
 * server_name or `host`. NULL with err ("TLS handshake: reason") and
 * *refused set when trying again cannot help (a certificate that does not
 * verify, a peer that speaks no TLS), not when the connection broke. The
 * session does not own fd. */
lapse_tls_session *lapse_tls_start(lapse_tls *t, int fd, const char *host, int *refused, char *err,
                                   size_t size);
void lapse_tls_end(lapse_tls_session *s); /* sends close_notify if it can; accepts NULL */

/* 1 once a read or write failed on a TLS protocol error (an alert from the
 * peer, such as "certificate required" after a TLS 1.3 handshake), which
 * trying again will not mend; 0 for I/O failures. */
int lapse_tls_broken(const lapse_tls_session *s);

/* Reads at most len bytes: > 0, or -1 with err (closed, timeout, error). */
ssize_t lapse_tls_read(lapse_tls_session *s, void *buf, size_t len, char *err, size_t size);

/* Writes all len bytes: 0, or -1 with err. */
int lapse_tls_write(lapse_tls_session *s, const void *buf, size_t len, char *err, size_t size);

#endif
