/*
 * autoscale_scrape — see autoscale_scrape.h. The parser reads only the two
 * names it needs and skips every other line, so a scanner with more or
 * fewer metrics (another version) still gives what it has.
 */
#include "autoscale_scrape.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"

#define BUSY_NAME "lapse_scanner_busy_seconds_total"
#define BUCKET_NAME "lapse_scanner_lateness_seconds_bucket"
#define LEASE_NAME "lapse_scanner_lease_held"
#define BODY_MAX (4 * 1024 * 1024) /* a scanner's page is ~10 kB */
#define HOST_TIMEOUT_MS 1000       /* connect and read, per host tried */

/* The value of label `name` in the label set starting at `{` (lb) into
 * buf; 0, or -1 when absent. Label values are escaped (\\, \", \n): the
 * ones looked for here (le) never hold an escape, the others are skipped
 * with theirs. */
static int label(const char *lb, const char *name, char *buf, size_t size)
{
    size_t nlen = strlen(name);
    const char *p = lb + 1;
    while (*p && *p != '}') {
        while (*p == ' ' || *p == ',')
            p++;
        const char *key = p;
        while (*p && *p != '=' && *p != '}')
            p++;
        if (*p != '=' || p[1] != '"')
            return -1;
        size_t klen = (size_t)(p - key);
        p += 2;
        const char *val = p;
        while (*p && *p != '"')
            p += (*p == '\\' && p[1]) ? 2 : 1;
        if (*p != '"')
            return -1;
        if (klen == nlen && strncmp(key, name, nlen) == 0) {
            size_t vlen = (size_t)(p - val);
            if (vlen >= size)
                return -1;
            memcpy(buf, val, vlen);
            buf[vlen] = '\0';
            return 0;
        }
        p++;
    }
    return -1;
}

/* Adds `count` to the bucket of upper bound le in p, kept sorted. */
static void add_bucket(struct lapse_scrape_page *p, double le, double count)
{
    size_t i = 0;
    while (i < p->nbuckets && p->le[i] < le)
        i++;
    if (i < p->nbuckets && p->le[i] == le) {
        p->count[i] += count;
        return;
    }
    if (p->nbuckets == LAPSE_SCRAPE_BUCKETS_MAX)
        return;
    memmove(&p->le[i + 1], &p->le[i], (p->nbuckets - i) * sizeof p->le[0]);
    memmove(&p->count[i + 1], &p->count[i], (p->nbuckets - i) * sizeof p->count[0]);
    p->le[i] = le;
    p->count[i] = count;
    p->nbuckets++;
}

int lapse_scrape_parse(const char *text, struct lapse_scrape_page *p)
{
    memset(p, 0, sizeof *p);
    p->busy_s = -1;
    p->lease_held = -1;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        const char *next = end ? end + 1 : NULL;
        if (*line != '#') {
            size_t nlen = strcspn(line, "{ \t\n");
            const char *rest = line + nlen;
            const char *lb = *rest == '{' ? rest : NULL;
            if (lb) { /* the value follows the label set */
                rest = strchr(lb, '}');
                if (!rest || (end && rest > end))
                    rest = NULL;
                else
                    rest++;
            }
            char *vend = NULL;
            double v = rest ? strtod(rest, &vend) : 0;
            int ok = rest && vend != rest && isfinite(v);
            if (ok && nlen == strlen(BUSY_NAME) && strncmp(line, BUSY_NAME, nlen) == 0) {
                p->busy_s = (p->busy_s < 0 ? 0 : p->busy_s) + v;
            } else if (ok && nlen == strlen(LEASE_NAME) && strncmp(line, LEASE_NAME, nlen) == 0) {
                p->lease_held = v > 0 || p->lease_held > 0;
            } else if (ok && lb && nlen == strlen(BUCKET_NAME) &&
                       strncmp(line, BUCKET_NAME, nlen) == 0) {
                char le[32];
                if (label(lb, "le", le, sizeof le) == 0) {
                    char *lend;
                    double bound = strtod(le, &lend); /* "+Inf" too */
                    if (lend != le && *lend == '\0')
                        add_bucket(p, bound, v);
                }
            }
        }
        line = next;
    }
    return p->busy_s >= 0 ? 0 : -1;
}

double lapse_scrape_busy(const struct lapse_scrape_page *prev, const struct lapse_scrape_page *cur,
                         int64_t wall_ms)
{
    if (prev->busy_s < 0 || cur->busy_s < prev->busy_s || wall_ms <= 0)
        return -1;
    double f = (cur->busy_s - prev->busy_s) * 1000.0 / (double)wall_ms;
    return f > 1 ? 1 : f; /* (the two clocks' reads are not at the same instant) */
}

/* The count of bucket le in p (cumulative), or -1 when p has no such bucket. */
static double count_at(const struct lapse_scrape_page *p, double le)
{
    for (size_t i = 0; i < p->nbuckets; i++)
        if (p->le[i] == le)
            return p->count[i];
    return -1;
}

int64_t lapse_scrape_p99(const struct lapse_scrape_page *prev, const struct lapse_scrape_page *cur)
{
    if (cur->nbuckets == 0)
        return -1;
    /* a restart (any count gone back) counts from zero */
    int reset = 0;
    for (size_t i = 0; i < cur->nbuckets; i++) {
        double was = count_at(prev, cur->le[i]);
        if (was > cur->count[i])
            reset = 1;
    }
    double d[LAPSE_SCRAPE_BUCKETS_MAX];
    for (size_t i = 0; i < cur->nbuckets; i++) {
        double was = reset ? 0 : count_at(prev, cur->le[i]);
        d[i] = cur->count[i] - (was > 0 ? was : 0);
    }
    double total = d[cur->nbuckets - 1]; /* the largest bound: +Inf */
    if (total <= 0)
        return -1;
    double want = ceil(total * 0.99);
    for (size_t i = 0; i < cur->nbuckets; i++) {
        if (d[i] >= want) {
            if (isinf(cur->le[i]))
                return INT64_MAX;
            return (int64_t)llround(cur->le[i] * 1000.0);
        }
    }
    return INT64_MAX;
}

/* Waits until fd is ready for `events` or the deadline (monotonic ms).
 * 1 ready, 0 timed out, -1 failed. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - lapse_clock_mono_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {fd, events, 0};
        int rc = poll(&pfd, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        return rc < 0 ? -1 : rc > 0;
    }
}

/* A socket connected to one of host:port's addresses before the deadline,
 * or -1 with err. */
static int dial(const char *host, int port, int64_t deadline, char *err, size_t size)
{
    char svc[8];
    snprintf(svc, sizeof svc, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, svc, &hints, &res);
    if (rc != 0) {
        snprintf(err, size, "%s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    snprintf(err, size, "%s:%d: no address", host, port);
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        int e = 0;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            e = errno;
            if (e == EINPROGRESS) {
                int w = wait_fd(fd, POLLOUT, deadline);
                socklen_t len = sizeof e;
                if (w <= 0)
                    e = w == 0 ? ETIMEDOUT : errno;
                else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
                    e = errno;
            }
        }
        if (e != 0) {
            snprintf(err, size, "%s:%d: %s", host, port, strerror(e));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

char *lapse_scrape_get(const char *host, int port, int timeout_ms, char *err, size_t size)
{
    int64_t deadline = lapse_clock_mono_ms() + timeout_ms;
    int fd = dial(host, port, deadline, err, size);
    if (fd < 0)
        return NULL;
    char req[512];
    int v6 = strchr(host, ':') != NULL;
    int rlen = snprintf(req, sizeof req, "GET /metrics HTTP/1.0\r\nHost: %s%s%s:%d\r\n\r\n",
                        v6 ? "[" : "", host, v6 ? "]" : "", port);
    if (rlen < 0 || (size_t)rlen >= sizeof req ||
        send(fd, req, (size_t)rlen, MSG_NOSIGNAL) != rlen) {
        snprintf(err, size, "%s:%d: could not send the request", host, port);
        close(fd);
        return NULL;
    }
    size_t cap = 16384, len = 0;
    char *buf = malloc(cap);
    const char *why = NULL;
    while (buf) {
        if (len + 1 >= cap) {
            char *more = cap < BODY_MAX ? realloc(buf, cap * 2) : NULL;
            if (!more) {
                why = "the page is too large";
                break;
            }
            buf = more;
            cap *= 2;
        }
        int w = wait_fd(fd, POLLIN, deadline);
        if (w <= 0) {
            why = w == 0 ? "timed out reading" : strerror(errno);
            break;
        }
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            why = strerror(errno);
            break;
        }
        if (n == 0)
            break; /* HTTP/1.0: the body ends with the connection */
        len += (size_t)n;
    }
    close(fd);
    if (!buf || why) {
        snprintf(err, size, "%s:%d: %s", host, port, buf ? why : "out of memory");
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    char *body = strstr(buf, "\r\n\r\n");
    if (strncmp(buf, "HTTP/1.", 7) != 0 || strlen(buf) < 12 || strncmp(buf + 9, "200", 3) != 0 ||
        !body) {
        snprintf(err, size, "%s:%d: not an HTTP 200 answer (%.40s)", host, port, buf);
        free(buf);
        return NULL;
    }
    body += 4;
    memmove(buf, body, strlen(body) + 1);
    return buf;
}

void lapse_autoscale_scanners_free(struct lapse_autoscale_scanners *s)
{
    free(s->host);
    free(s->prev);
    free(s->prev_at);
    free(s->said);
    memset(s, 0, sizeof *s);
}

/* Makes s fit `shards` shards, forgetting what it knew (a split or merge
 * moved every shard's load). 0, or -1 out of memory. */
static int scanners_reset(struct lapse_autoscale_scanners *s, uint32_t shards)
{
    lapse_autoscale_scanners_free(s);
    s->host = malloc(shards * sizeof *s->host);
    s->prev = calloc(shards, sizeof *s->prev);
    s->prev_at = calloc(shards, sizeof *s->prev_at);
    s->said = malloc(shards * sizeof *s->said);
    if (!s->host || !s->prev || !s->prev_at || !s->said) {
        lapse_autoscale_scanners_free(s);
        return -1;
    }
    for (uint32_t i = 0; i < shards; i++)
        s->host[i] = s->said[i] = -1;
    s->shards = shards;
    return 0;
}

/*
 * Shard i's page: from the host kept for it, else from each host in turn.
 * A page whose scanner stands by (lease_held 0: another host's scanner is
 * the active one, a split's standby pair) is kept only when no host has the
 * active one: a standby's busy counter does not move. The host taken is
 * kept; *moved says it is not the one of the last page (whose counters
 * were another process's). 0, or -1 with err (the last host's).
 */
static int shard_page(const struct lapse_config *cfg, struct lapse_autoscale_scanners *s,
                      uint32_t i, struct lapse_scrape_page *page, int *moved, char *err,
                      size_t size)
{
    size_t nh = cfg->nscale_scanner_hosts;
    int first = s->host[i] >= 0 ? s->host[i] : 0, got = -1;
    int port = cfg->scanner_metrics_port + (int)i;
    struct lapse_scrape_page p;
    for (size_t k = 0; k < nh; k++) {
        int h = (int)(((size_t)first + k) % nh);
        const char *host = cfg->scale_scanner_hosts[h];
        char *body = lapse_scrape_get(host, port, HOST_TIMEOUT_MS, err, size);
        if (!body)
            continue;
        int rc = lapse_scrape_parse(body, &p);
        free(body);
        if (rc != 0) {
            snprintf(err, size, "%s:%d: no " BUSY_NAME " on its /metrics", host, port);
            continue;
        }
        if (got < 0 || p.lease_held != 0) {
            *page = p;
            got = h;
        }
        if (p.lease_held != 0)
            break;
    }
    if (got < 0)
        return -1;
    *moved = got != s->host[i];
    s->host[i] = got;
    return 0;
}

/* Appends to buf (size bytes, NUL-terminated), cutting what does not fit. */
static void append(char *buf, size_t size, const char *text)
{
    size_t len = strlen(buf);
    if (len + 1 < size)
        snprintf(buf + len, size - len, "%s", text);
}

void lapse_autoscale_scanners_read(const struct lapse_config *cfg,
                                   struct lapse_autoscale_scanners *s, int64_t now_ms,
                                   struct lapse_autoscale_reading *r, char *unread, size_t size)
{
    unread[0] = '\0';
    if (!cfg->nscale_scanner_hosts || !cfg->scanner_metrics_port || r->shards == 0)
        return;
    if (s->shards != r->shards && scanners_reset(s, r->shards) < 0) {
        snprintf(unread, size, "out of memory");
        r->scanners_unread = r->shards;
        return;
    }
    for (uint32_t i = 0; i < r->shards && cfg->scanner_metrics_port + (int64_t)i <= 65535; i++) {
        struct lapse_scrape_page page;
        char err[256];
        int moved = 0;
        if (shard_page(cfg, s, i, &page, &moved, err, sizeof err) != 0) {
            char line[320];
            snprintf(line, sizeof line, "%sshard %u (%s)", unread[0] ? "; " : "", i, err);
            append(unread, size, line);
            r->scanners_unread++;
            /* its last page is kept: the next answer counts from it (a
             * restart in between shows as counters gone back) */
            continue;
        }
        r->scanners_read++;
        if (s->prev_at[i] && !moved) {
            double busy = lapse_scrape_busy(&s->prev[i], &page, now_ms - s->prev_at[i]);
            int64_t p99 = lapse_scrape_p99(&s->prev[i], &page);
            if (busy > r->busy)
                r->busy = busy;
            if (p99 > r->lateness_p99_ms)
                r->lateness_p99_ms = p99;
        }
        s->prev[i] = page;
        s->prev_at[i] = now_ms;
    }
}
