/* metrics — see metrics.h. */
#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const int64_t lapse_lateness_bounds[LAPSE_LATENESS_BUCKETS] = {1,   2,   5,    10,   20,    50,
                                                               100, 250, 1000, 5000, 30000, 300000};

void lapse_metrics_lateness(struct lapse_metrics *m, int64_t late_ms)
{
    if (late_ms < 0)
        late_ms = 0;
    int b = 0;
    while (b < LAPSE_LATENESS_BUCKETS && late_ms > lapse_lateness_bounds[b])
        b++;
    atomic_fetch_add_explicit(&m->lateness[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->lateness_sum_ms, (uint64_t)late_ms, memory_order_relaxed);
}

struct out {
    char *buf;
    size_t size, len;
    int overflow;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
    if (o->overflow)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->size - o->len)
        o->overflow = 1;
    else
        o->len += (size_t)n;
}

#define LOAD(x) ((unsigned long long)atomic_load_explicit(&(x), memory_order_relaxed))
#define LOADS(x) ((long long)atomic_load_explicit(&(x), memory_order_relaxed))

static void counter(struct out *o, const struct lapse_metrics *m, const char *name,
                    const char *help, const char *type, long long v)
{
    put(o, "# HELP lapse_scanner_%s %s\n# TYPE lapse_scanner_%s %s\n", name, help, name, type);
    put(o, "lapse_scanner_%s{ns=\"%s\",shard=\"%u\"} %lld\n", name, m->ns, m->shard, v);
}

int lapse_metrics_render(struct lapse_metrics *m, char *buf, size_t size)
{
    struct out o = {buf, size, 0, 0};
    counter(&o, m, "claimed_total", "IDs claimed for dispatch.", "counter", (long long)LOAD(m->claimed));
    counter(&o, m, "events_produced_total", "Events handed to Kafka.", "counter", (long long)LOAD(m->sent));
    counter(&o, m, "events_acked_total", "Events Kafka acknowledged.", "counter", (long long)LOAD(m->acked));
    counter(&o, m, "events_failed_total", "Events Kafka gave up on; claimed again later.",
            "counter", (long long)LOAD(m->failed));
    counter(&o, m, "settled_total", "Acknowledged IDs removed or re-armed in Redis.", "counter",
            (long long)LOAD(m->settled));
    counter(&o, m, "inflight", "Events sent and not yet answered by Kafka.", "gauge",
            LOADS(m->inflight));
    counter(&o, m, "due", "Due IDs left in the shard after the last claim (backlog).", "gauge",
            LOADS(m->due));
    counter(&o, m, "oldest_overdue_ms", "Age of the oldest due ID.", "gauge",
            LOADS(m->oldest_overdue_ms));
    counter(&o, m, "lease_held", "1 while this scanner is the shard's active scanner.", "gauge",
            LOADS(m->lease_held));
    counter(&o, m, "takeovers_total", "Times this scanner became the active one.", "counter",
            (long long)LOAD(m->takeovers));
    counter(&o, m, "recovered_total", "In-flight IDs taken back from a previous holder.",
            "counter", (long long)LOAD(m->recovered));
    counter(&o, m, "fenced_total", "Times this scanner found its lease lost.", "counter",
            (long long)LOAD(m->fenced));
    counter(&o, m, "redis_errors_total", "Failed Redis calls.", "counter",
            (long long)LOAD(m->redis_errors));
    counter(&o, m, "redis_reconnects_total", "Redis reconnections.", "counter",
            (long long)LOAD(m->redis_reconnects));
    counter(&o, m, "kafka_errors_total", "Kafka client errors (brokers down, timeouts).",
            "counter", (long long)LOAD(m->kafka_errors));
    put(&o, "# HELP lapse_scanner_lateness_ms fired_ms - deadline_ms of events sent.\n"
            "# TYPE lapse_scanner_lateness_ms histogram\n");
    unsigned long long cum = 0;
    for (int b = 0; b <= LAPSE_LATENESS_BUCKETS; b++) {
        cum += LOAD(m->lateness[b]);
        if (b < LAPSE_LATENESS_BUCKETS)
            put(&o, "lapse_scanner_lateness_ms_bucket{ns=\"%s\",shard=\"%u\",le=\"%lld\"} %llu\n",
                m->ns, m->shard, (long long)lapse_lateness_bounds[b], cum);
        else
            put(&o, "lapse_scanner_lateness_ms_bucket{ns=\"%s\",shard=\"%u\",le=\"+Inf\"} %llu\n",
                m->ns, m->shard, cum);
    }
    put(&o, "lapse_scanner_lateness_ms_sum{ns=\"%s\",shard=\"%u\"} %llu\n", m->ns, m->shard,
        LOAD(m->lateness_sum_ms));
    put(&o, "lapse_scanner_lateness_ms_count{ns=\"%s\",shard=\"%u\"} %llu\n", m->ns, m->shard, cum);
    return o.overflow ? -1 : (int)o.len;
}

struct lapse_metrics_server {
    struct lapse_metrics *m;
    int fd;
    atomic_int stop;
    pthread_t thread;
};

/* Answers one connection: any request gets the metrics (HTTP/1.0, close).
 * Reads up to the end of the request's headers first (a client may send
 * them in pieces), and half-closes before closing so the answer is not cut
 * off by a reset. */
static void metrics_answer(struct lapse_metrics_server *srv, int c)
{
    char req[4096];
    size_t have = 0;
    while (have < sizeof req - 1) {
        struct pollfd pfd = {.fd = c, .events = POLLIN};
        if (poll(&pfd, 1, 1000) <= 0)
            return;
        ssize_t n = read(c, req + have, sizeof req - 1 - have);
        if (n <= 0)
            return;
        have += (size_t)n;
        req[have] = '\0';
        if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
            break;
    }
    char body[16384], head[256];
    int n = lapse_metrics_render(srv->m, body, sizeof body);
    if (n < 0)
        n = 0;
    int h = snprintf(head, sizeof head,
                     "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                     "Content-Length: %d\r\nConnection: close\r\n\r\n",
                     n);
    if (write(c, head, (size_t)h) == h)
        (void)!write(c, body, (size_t)n);
    shutdown(c, SHUT_WR);
    struct pollfd pfd = {.fd = c, .events = POLLIN};
    while (poll(&pfd, 1, 200) > 0 && read(c, req, sizeof req) > 0)
        ; /* drain what the client still sends until it closes */
}

static void *metrics_thread(void *arg)
{
    struct lapse_metrics_server *srv = arg;
    while (!atomic_load(&srv->stop)) {
        struct pollfd pfd = {.fd = srv->fd, .events = POLLIN};
        if (poll(&pfd, 1, 200) <= 0)
            continue;
        int c = accept(srv->fd, NULL, NULL);
        if (c < 0)
            continue;
        metrics_answer(srv, c);
        close(c);
    }
    return NULL;
}

lapse_metrics_server *lapse_metrics_serve(struct lapse_metrics *m, const char *bind_addr, int port,
                                          char *errstr, size_t size)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) {
        snprintf(errstr, size, "metrics: \"%s\" is not an IPv4 address", bind_addr);
        return NULL;
    }
    struct lapse_metrics_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        snprintf(errstr, size, "out of memory");
        return NULL;
    }
    srv->m = m;
    int one = 1;
    srv->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (srv->fd < 0 || setsockopt(srv->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(srv->fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(srv->fd, 16) < 0) {
        snprintf(errstr, size, "metrics: %s:%d: %s", bind_addr, port, strerror(errno));
        if (srv->fd >= 0)
            close(srv->fd);
        free(srv);
        return NULL;
    }
    if (pthread_create(&srv->thread, NULL, metrics_thread, srv) != 0) {
        snprintf(errstr, size, "metrics: cannot start its thread");
        close(srv->fd);
        free(srv);
        return NULL;
    }
    return srv;
}

void lapse_metrics_stop(lapse_metrics_server *srv)
{
    if (!srv)
        return;
    atomic_store(&srv->stop, 1);
    pthread_join(srv->thread, NULL);
    close(srv->fd);
    free(srv);
}
