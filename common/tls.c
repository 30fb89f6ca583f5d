/* tls — see tls.h. The only place that talks to OpenSSL. */
#include "tls.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct lapse_tls {
    SSL_CTX *ctx;
    char *server_name; /* NULL: the host connected to */
};

struct lapse_tls_session {
    SSL *ssl;
    int broken; /* a read or write failed with SSL_ERROR_SSL */
    int asked;  /* the server asked for a certificate and we had none */
};

/* OpenSSL's reason for the last failure (its error queue, emptied), or
 * errno's for a failed system call; "what: reason" into err. */
static void tls_error(const char *what, int ret_errno, char *err, size_t size)
{
    unsigned long e = ERR_get_error();
    char reason[256];
    if (e)
        ERR_error_string_n(e, reason, sizeof reason);
    else if (ret_errno == EAGAIN || ret_errno == EWOULDBLOCK)
        snprintf(reason, sizeof reason, "timed out");
    else if (ret_errno)
        snprintf(reason, sizeof reason, "%s", strerror(ret_errno));
    else
        snprintf(reason, sizeof reason, "connection closed");
    ERR_clear_error();
    snprintf(err, size, "%s: %s", what, reason);
}

#define ALERT_WAIT_MS 200 /* tls_rejected: how long a refusal may take to come */

/* Called by OpenSSL when the server asks for our certificate and none is
 * configured: note it (tls_rejected) and go on without one. */
static int tls_no_cert(SSL *ssl, X509 **x509, EVP_PKEY **pkey)
{
    (void)x509;
    (void)pkey;
    lapse_tls_session *s = SSL_get_app_data(ssl);
    if (s)
        s->asked = 1;
    return 0;
}

/* In TLS 1.3 a server that requires a client certificate says no only
 * after the handshake, with an alert our first command would meet (or
 * miss, when the server has already hung up: a reset, taken for a broken
 * connection). So when it asked and we had none, wait briefly for that
 * alert: 1 (err set) if it came. A server for which the certificate is
 * optional sends nothing, which costs ALERT_WAIT_MS per connect. */
static int tls_rejected(lapse_tls_session *s, int fd, char *err, size_t size)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    if (!s->asked || poll(&p, 1, ALERT_WAIT_MS) != 1)
        return 0;
    ERR_clear_error();
    int n = SSL_peek(s->ssl, &c, 1);
    if (n > 0 || SSL_get_error(s->ssl, n) != SSL_ERROR_SSL)
        return 0;
    tls_error("TLS handshake", 0, err, size);
    return 1;
}

lapse_tls *lapse_tls_new(const char *ca_file, const char *cert_file, const char *key_file,
                         const char *server_name, char *err, size_t size)
{
    lapse_tls *t = calloc(1, sizeof *t);
    if (!t || (server_name && !(t->server_name = strdup(server_name)))) {
        free(t);
        snprintf(err, size, "out of memory");
        return NULL;
    }
    ERR_clear_error();
    t->ctx = SSL_CTX_new(TLS_client_method());
    const char *what = "TLS";
    int ok = t->ctx != NULL;
    if (ok) {
        SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
        SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_mode(t->ctx, SSL_MODE_AUTO_RETRY);
        if (!cert_file)
            SSL_CTX_set_client_cert_cb(t->ctx, tls_no_cert);
    }
    if (ok && ca_file)
        ok = SSL_CTX_load_verify_locations(t->ctx, ca_file, NULL) == 1, what = "ca_file";
    else if (ok)
        ok = SSL_CTX_set_default_verify_paths(t->ctx) == 1, what = "the system's CAs";
    if (ok && cert_file)
        ok = SSL_CTX_use_certificate_chain_file(t->ctx, cert_file) == 1, what = "cert_file";
    if (ok && key_file)
        ok = SSL_CTX_use_PrivateKey_file(t->ctx, key_file, SSL_FILETYPE_PEM) == 1 &&
             SSL_CTX_check_private_key(t->ctx) == 1,
        what = "key_file";
    if (!ok) {
        char why[300];
        tls_error(what, 0, why, sizeof why);
        snprintf(err, size, "%s %s", why,
                 !strcmp(what, "ca_file")     ? ca_file
                 : !strcmp(what, "cert_file") ? cert_file
                 : !strcmp(what, "key_file")  ? key_file
                                              : "");
        lapse_tls_free(t);
        return NULL;
    }
    return t;
}

void lapse_tls_free(lapse_tls *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free(t->server_name);
    free(t);
}

/* After a handshake that timed out: is the peer a Redis without TLS? Our
 * ClientHello sits in its buffer as the start of an inline command that it
 * cannot end (it looks for the line end with strchr, which stops at the
 * hello's first zero byte), so nothing comes back. Past 64 KiB of inline
 * command a plain Redis gives up with an error reply ("-ERR Protocol
 * error: too big inline request"); a TLS server never answers RESP. Only
 * ever run on this failure path. */
static int tls_plain(int fd)
{
    static const char fill[4096] = {'\r', '\n'};
    for (int i = 0; i < 17; i++) /* 68 KiB */
        if (write(fd, fill, sizeof fill) != (ssize_t)sizeof fill)
            return 0;
    char c;
    return read(fd, &c, 1) == 1 && c == '-';
}

lapse_tls_session *lapse_tls_start(lapse_tls *t, int fd, const char *host, int *refused, char *err,
                                   size_t size)
{
    *refused = 0;
    lapse_tls_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, size, "out of memory");
        return NULL;
    }
    ERR_clear_error();
    const char *name = t->server_name ? t->server_name : host;
    s->ssl = SSL_new(t->ctx);
    int ok = s->ssl && SSL_set_fd(s->ssl, fd) == 1 && SSL_set_app_data(s->ssl, s) == 1;
    if (ok) {
        /* an IP address is checked as one (and sent as no SNI) */
        X509_VERIFY_PARAM *vp = SSL_get0_param(s->ssl);
        if (X509_VERIFY_PARAM_set1_ip_asc(vp, name) != 1) {
            SSL_set_tlsext_host_name(s->ssl, name);
            ok = X509_VERIFY_PARAM_set1_host(vp, name, 0) == 1;
        }
    }
    errno = 0;
    int rc = ok ? SSL_connect(s->ssl) : -1;
    if (rc != 1) {
        int e0 = errno;
        long v = s->ssl ? SSL_get_verify_result(s->ssl) : X509_V_OK;
        int e = ok ? SSL_get_error(s->ssl, rc) : SSL_ERROR_SSL;
        *refused = e == SSL_ERROR_SSL; /* a protocol or certificate failure, not I/O */
        if (ok && v != X509_V_OK)
            snprintf(err, size, "TLS handshake: certificate of %s: %s", name,
                     X509_verify_cert_error_string(v));
        else if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ||
                  (e == SSL_ERROR_SYSCALL && (e0 == EAGAIN || e0 == EWOULDBLOCK))) &&
                 tls_plain(fd)) /* timed out: the socket's timeout ran out */
            *refused = 1, snprintf(err, size,
                                   "TLS handshake: the server answers plain Redis "
                                   "protocol: no TLS on this port");
        else
            tls_error("TLS handshake", e == SSL_ERROR_WANT_READ ? EAGAIN : e0, err, size);
        SSL_free(s->ssl);
        free(s);
        return NULL;
    }
    if (tls_rejected(s, fd, err, size)) {
        *refused = 1;
        SSL_free(s->ssl);
        free(s);
        return NULL;
    }
    return s;
}

int lapse_tls_broken(const lapse_tls_session *s)
{
    return s->broken;
}

void lapse_tls_end(lapse_tls_session *s)
{
    if (!s)
        return;
    SSL_shutdown(s->ssl); /* one try; the peer's answer is not awaited */
    SSL_free(s->ssl);
    ERR_clear_error();
    free(s);
}

ssize_t lapse_tls_read(lapse_tls_session *s, void *buf, size_t len, char *err, size_t size)
{
    ERR_clear_error();
    errno = 0;
    int n = SSL_read(s->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    if (n > 0)
        return n;
    s->broken = SSL_get_error(s->ssl, n) == SSL_ERROR_SSL;
    tls_error("TLS read", SSL_get_error(s->ssl, n) == SSL_ERROR_ZERO_RETURN ? 0 : errno, err, size);
    return -1;
}

int lapse_tls_write(lapse_tls_session *s, const void *buf, size_t len, char *err, size_t size)
{
    const char *p = buf;
    while (len > 0) {
        ERR_clear_error();
        errno = 0;
        int n = SSL_write(s->ssl, p, len > INT32_MAX ? INT32_MAX : (int)len);
        if (n <= 0) {
            s->broken = SSL_get_error(s->ssl, n) == SSL_ERROR_SSL;
            tls_error("TLS write", errno, err, size);
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
