/*
 * httpd — see httpd.h. Every answer is built in full before it is queued
 * (MHD copies or frees it), so a client that reads slowly holds only its
 * own connection's memory.
 */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define RENDER_FIRST 16384 /* first /metrics buffer; doubled until it fits */
#define RENDER_MAX (8 * 1024 * 1024)
#define CONN_LIMIT 128          /* more clients than any scraper setup needs */
#define CONN_MEMORY (32 * 1024) /* a request's headers must fit here (else 431) */

struct lapse_httpd {
    struct MHD_Daemon *d;
    struct lapse_httpd_handlers h;
};

/* Queues `body` (copied) with `status` and the content type. */
static enum MHD_Result answer_copy(struct MHD_Connection *c, unsigned status, const char *body,
                                   const char *type)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result answer_metrics(struct lapse_httpd *srv, struct MHD_Connection *c)
{
    for (size_t size = RENDER_FIRST; size <= RENDER_MAX; size *= 2) {
        char *buf = malloc(size);
        if (!buf)
            break;
        int n = srv->h.render(srv->h.ctx, buf, size);
        if (n < 0) {
            free(buf);
            continue;
        }
        /* MHD frees buf with the response */
        struct MHD_Response *r =
            MHD_create_response_from_buffer((size_t)n, buf, MHD_RESPMEM_MUST_FREE);
        if (!r) {
            free(buf);
            return MHD_NO;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4");
        enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ret;
    }
    return answer_copy(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "metrics do not fit\n", "text/plain");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    struct lapse_httpd *srv = cls;
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)req_cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return answer_copy(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n", "text/plain");
    if (strcmp(url, "/metrics") == 0)
        return answer_metrics(srv, c);
    if (strcmp(url, "/healthz") == 0)
        return answer_copy(c, MHD_HTTP_OK, "ok\n", "text/plain");
    if (strcmp(url, "/readyz") == 0) {
        char why[256] = "not ready", line[300];
        if (!srv->h.ready || srv->h.ready(srv->h.ctx, why, sizeof why))
            return answer_copy(c, MHD_HTTP_OK, "ready\n", "text/plain");
        why[strcspn(why, "\r\n")] = '\0'; /* one line */
        snprintf(line, sizeof line, "%s\n", why);
        return answer_copy(c, MHD_HTTP_SERVICE_UNAVAILABLE, line, "text/plain");
    }
    return answer_copy(c, MHD_HTTP_NOT_FOUND, "not found\n", "text/plain");
}

int lapse_httpd_addr_ok(const char *bind_addr)
{
    struct in6_addr a;
    return inet_pton(AF_INET, bind_addr, &a) == 1 || inet_pton(AF_INET6, bind_addr, &a) == 1;
}

lapse_httpd *lapse_httpd_start(const char *bind_addr, int port,
                               const struct lapse_httpd_handlers *h, char *errstr, size_t size)
{
    struct sockaddr_in sa4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    struct sockaddr *sa;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
    if (inet_pton(AF_INET, bind_addr, &sa4.sin_addr) == 1) {
        sa = (struct sockaddr *)&sa4;
    } else if (inet_pton(AF_INET6, bind_addr, &sa6.sin6_addr) == 1) {
        sa = (struct sockaddr *)&sa6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(errstr, size, "metrics: \"%s\" is not an IPv4 or IPv6 address", bind_addr);
        return NULL;
    }
    struct lapse_httpd *srv = calloc(1, sizeof *srv);
    if (!srv) {
        snprintf(errstr, size, "out of memory");
        return NULL;
    }
    srv->h = *h;
    errno = 0;
    srv->d =
        MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR,
                         sa, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)LAPSE_HTTPD_IDLE_S,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONN_LIMIT,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY, MHD_OPTION_END);
    if (!srv->d) {
        int e = errno;
        snprintf(errstr, size, "metrics: %s:%d: cannot listen%s%s", bind_addr, port, e ? ": " : "",
                 e ? strerror(e) : "");
        free(srv);
        return NULL;
    }
    return srv;
}

void lapse_httpd_stop(lapse_httpd *srv)
{
    if (!srv)
        return;
    MHD_stop_daemon(srv->d);
    free(srv);
}
