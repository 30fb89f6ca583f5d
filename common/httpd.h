/*
 * httpd — the HTTP endpoint of a long-running program: GET /metrics,
 * /healthz and /readyz on bind:port (scanner.metrics_port,
 * ingress.metrics_port).
 *
 * Why libmicrohttpd: a scrape must never wait for another client. MHD reads
 * every connection without blocking from one epoll thread of its own, drops
 * a connection idle for LAPSE_HTTPD_IDLE_S seconds, and answers a request
 * whose headers do not fit its per-connection memory with an error, so slow,
 * half-open or malformed clients cost a socket each and stall nobody.
 *
 *   /metrics  200, the render callback's Prometheus text
 *             (Content-Type: text/plain; version=0.0.4)
 *   /healthz  200 "ok": the process is alive and its HTTP thread answers
 *   /readyz   200 "ready", or 503 with the ready callback's one-line reason
 *   other     404; a method other than GET or HEAD gets 405
 *
 * Threads: both callbacks run on MHD's thread, concurrently with the
 * program's own; they must only read what the program publishes with
 * atomics or under its own lock, and must not block.
 */
#ifndef LAPSE_HTTPD_H
#define LAPSE_HTTPD_H

#include <stddef.h>

#define LAPSE_HTTPD_IDLE_S 5 /* a connection silent this long is closed */

/* Writes the Prometheus text into buf; returns its length, or -1 when it
 * did not fit (it is called again with a larger buffer). */
typedef int lapse_httpd_render_fn(void *ctx, char *buf, size_t size);

/* Returns 1 when ready, or 0 with a one-line reason in why. */
typedef int lapse_httpd_ready_fn(void *ctx, char *why, size_t size);

struct lapse_httpd_handlers {
    lapse_httpd_render_fn *render; /* /metrics */
    lapse_httpd_ready_fn *ready;   /* /readyz; NULL: always ready */
    void *ctx;                     /* passed to both; must outlive the server */
};

typedef struct lapse_httpd lapse_httpd;

/* Serves on bind:port (an IPv4 or IPv6 address) from MHD's own thread.
 * Returns the server, or NULL with errstr ("metrics: ADDR:PORT: reason"). */
lapse_httpd *lapse_httpd_start(const char *bind, int port, const struct lapse_httpd_handlers *h,
                               char *errstr, size_t size);

/* 1 when `bind` is an IPv4 or IPv6 address lapse_httpd_start takes, else
 * 0: a setting to refuse at start, unlike a port that is taken now. */
int lapse_httpd_addr_ok(const char *bind);

/* Stops serving and joins MHD's thread; accepts NULL. */
void lapse_httpd_stop(lapse_httpd *d);

#endif
