/*
 * console — see console.h. Every answer is built in full before it is
 * queued, and every request's body is bounded (BODY_MAX): a slow or
 * malformed client costs its own connection's thread and memory, and
 * never the snapshot or another page.
 */
#include "console.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "assets.h"
#include "cache.h"
#include "clock.h"
#include "get.h"
#include "inspect.h"
#include "log.h"
#include "offline.h"

#define BODY_MAX 4096      /* a write's JSON: an ID of 512 bytes and a time fit well */
#define CONN_LIMIT 64      /* browsers open a few connections a page */
#define CONN_MEMORY 32768  /* a request's headers must fit (else MHD answers 431) */
#define CONN_IDLE_S 30     /* a connection silent this long is closed */
#define FIRST_WAIT_MS 5000 /* a page waits this long for a view's first read */
#define PAGE_DEFAULT 100   /* offline IDs a page, unless ?limit= */
#define PAGE_MAX 1000      /* ... at most */

/* Sent with every answer: the pages run only their own script and style
 * (the script is a file: no inline script, no eval), are never framed,
 * and send no Referer (an ID in a URL stays here). */
static const char *const security_headers[][2] = {
    {"Content-Security-Policy",
     "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
     "frame-ancestors 'none'"},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"X-Frame-Options", "DENY"},
    {"Cross-Origin-Opener-Policy", "same-origin"},
    {"Cross-Origin-Resource-Policy", "same-origin"},
};

struct lapse_console {
    struct MHD_Daemon *d;
    const struct lapse_config *cfg;
    lapse_cache *cache;   /* the snapshot (its own reader and connections) */
    pthread_mutex_t io;   /* guards the three below */
    lapse_redis **nodes;  /* the requests' connections */
    lapse_producer *prod; /* writes, or NULL */
    char write_err[256];  /* what on_error said of the last write, "" if nothing */
    lapse_tokens *tokens; /* NULL with writes off */
};

/* One request's state across MHD's calls: its body so far. */
struct req {
    char body[BODY_MAX + 1];
    size_t len;
    int too_big; /* more than BODY_MAX bytes came */
};

/* Queues an answer: `body` (len bytes) is copied unless `persistent`. */
static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *type,
                              const char *body, size_t len, int persistent, const char *allow)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)body, persistent ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    for (size_t i = 0; i < sizeof security_headers / sizeof security_headers[0]; i++)
        MHD_add_response_header(r, security_headers[i][0], security_headers[i][1]);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, persistent ? "no-cache" : "no-store");
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Answers with the JSON of o (which it takes). */
static enum MHD_Result answer_json(struct MHD_Connection *conn, unsigned status, json_t *o,
                                   const char *allow)
{
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s)
        return answer(conn, 500, "application/json", "{\"error\":\"out of memory\"}", 25, 1, NULL);
    enum MHD_Result ret = answer(conn, status, "application/json", s, strlen(s), 0, allow);
    free(s);
    return ret;
}

/* {"error": why} with status. */
static enum MHD_Result answer_error(struct MHD_Connection *conn, unsigned status, const char *why,
                                    const char *allow)
{
    return answer_json(conn, status, json_pack("{s:s}", "error", why), allow);
}

/* The rate limits of what requests log: MHD runs each connection in a
 * thread of its own, and a limit's counters are not atomic. */
static pthread_mutex_t limits = PTHREAD_MUTEX_INITIALIZER;

static void req_warn(void *ctx, const char *line)
{
    static struct lapse_log_limit lim;
    (void)ctx;
    pthread_mutex_lock(&limits);
    lapse_log_limited(&lim, 2, LAPSE_LOG_WARN, "%s", line);
    pthread_mutex_unlock(&limits);
}

/* A refused write, a few lines a second at most. */
static void refused(const char *action, const char *why)
{
    static struct lapse_log_limit lim;
    pthread_mutex_lock(&limits);
    lapse_log_limited(&lim, 2, LAPSE_LOG_WARN, "%s refused: %s", action, why);
    pthread_mutex_unlock(&limits);
}

static const char *arg(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
}

/* A view of the shared snapshot. */
static enum MHD_Result api_view(lapse_console *c, struct MHD_Connection *conn,
                                enum lapse_cache_view v)
{
    char *json;
    size_t len;
    int status;
    if (lapse_cache_get(c->cache, v, FIRST_WAIT_MS, &json, &len, &status) < 0)
        return answer_error(conn, 503, "the first snapshot has not been read yet; try again", NULL);
    enum MHD_Result ret = answer(conn, (unsigned)status, "application/json", json, len, 0, NULL);
    free(json);
    return ret;
}

/* GET /api/get?id=ID: get --json, read now (a few reads of one shard). */
static enum MHD_Result api_get(lapse_console *c, struct MHD_Connection *conn)
{
    const char *id = arg(conn, "id");
    char err[512];
    if (!id)
        return answer_error(conn, 400, "the ID is missing: /api/get?id=ID", NULL);
    if (lapse_inspect_id_check(id, strlen(id), err, sizeof err) < 0)
        return answer_error(conn, 400, err, NULL);
    pthread_mutex_lock(&c->io);
    json_t *o =
        lapse_scale_get_json(c->cfg, c->nodes, id, strlen(id), req_warn, NULL, err, sizeof err);
    pthread_mutex_unlock(&c->io);
    if (!o)
        return answer_error(conn, 503, err, NULL);
    json_object_set_new(o, "read_ms", json_integer(lapse_clock_ms()));
    return answer_json(conn, 200, o, NULL);
}

/* GET /api/offline: the snapshot's first page, or a page from a cursor,
 * or with a prefix, read now within console.budget_ms. */
static enum MHD_Result api_offline(lapse_console *c, struct MHD_Connection *conn)
{
    const char *cursor = arg(conn, "cursor"), *prefix = arg(conn, "prefix"),
               *lim = arg(conn, "limit");
    if ((!cursor || !*cursor) && (!prefix || !*prefix) && (!lim || !*lim))
        return api_view(c, conn, LAPSE_CACHE_OFFLINE);
    long limit = PAGE_DEFAULT;
    char err[512];
    if (lim && *lim) {
        char *end;
        errno = 0;
        limit = strtol(lim, &end, 10);
        if (errno || *end || limit < 1 || limit > PAGE_MAX)
            return answer_error(conn, 400, "limit is a number from 1 to 1000", NULL);
    }
    if (prefix && *prefix && lapse_inspect_id_check(prefix, strlen(prefix), err, sizeof err) < 0)
        return answer_error(conn, 400, err, NULL);
    pthread_mutex_lock(&c->io);
    json_t *o =
        lapse_scale_offline_page_json(c->cfg, c->nodes, cursor, prefix ? prefix : "", limit,
                                      c->cfg->console_budget_ms, req_warn, NULL, err, sizeof err);
    pthread_mutex_unlock(&c->io);
    if (!o)
        return answer_error(conn, strncmp(err, "offline: a cursor", 17) == 0 ? 400 : 503, err,
                            NULL);
    json_object_set_new(o, "read_ms", json_integer(lapse_clock_ms()));
    return answer_json(conn, 200, o, NULL);
}

/* GET /api/console: what the pages need to know of the console itself. */
static enum MHD_Result api_console(lapse_console *c, struct MHD_Connection *conn)
{
    const struct lapse_config *cfg = c->cfg;
    return answer_json(conn, 200,
                       json_pack("{s:s, s:b, s:i, s:i, s:i, s:i, s:I}", "ns", cfg->ns, "writes",
                                 cfg->console_writes, "refresh_ms", cfg->console_refresh_ms,
                                 "read_pct", cfg->console_read_pct, "idle_ms", cfg->console_idle_ms,
                                 "budget_ms", cfg->console_budget_ms, "snapshot_reads",
                                 (json_int_t)lapse_cache_reads(c->cache)),
                       NULL);
}

/* 1 when the request may be cross-site: the browser says so, or its
 * Origin is not this Host (a request without Origin and Sec-Fetch-Site is
 * not a browser's, and stands on its token alone). */
static int cross_site(struct MHD_Connection *conn)
{
    const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
    if (site && strcasecmp(site, "cross-site") == 0)
        return 1;
    if (!origin)
        return 0;
    const char *p = strstr(origin, "://");
    return !host || !p || strcasecmp(p + 3, host) != 0 ||
           (strncasecmp(origin, "http://", 7) != 0 && strncasecmp(origin, "https://", 8) != 0);
}

/* The name of the request's token, or NULL. */
static const char *token_name(lapse_console *c, struct MHD_Connection *conn)
{
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return NULL;
    const char *t = auth + 7;
    while (*t == ' ')
        t++;
    return lapse_tokens_match(c->tokens, t, strlen(t));
}

static void on_write_error(void *ctx, uint64_t tag, const char *reason)
{
    lapse_console *c = ctx;
    (void)tag;
    snprintf(c->write_err, sizeof c->write_err, "%s", reason);
}

/* POST /api/cancel, /api/deadline: checks, then the write, applied. */
static enum MHD_Result api_write(lapse_console *c, struct MHD_Connection *conn, const char *url,
                                 struct req *r)
{
    int cancel = strcmp(url, "/api/cancel") == 0;
    const char *action = cancel ? "cancel" : "deadline";
    if (!c->cfg->console_writes)
        return answer_error(conn, 405, "writes are off (console.writes = false)", "GET, HEAD");
    if (cross_site(conn)) {
        refused(action, "cross-site request");
        return answer_error(conn, 403, "cross-site request refused", NULL);
    }
    const char *who = token_name(c, conn);
    if (!who) {
        refused(action, "no valid token");
        return answer_error(conn, 403, "a valid token is required: Authorization: Bearer TOKEN",
                            NULL);
    }
    if (r->too_big)
        return answer_error(conn, 413, "the request's body is larger than 4096 bytes", NULL);
    json_error_t je;
    json_t *in = json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, &je);
    const char *id = in ? json_string_value(json_object_get(in, "id")) : NULL;
    size_t idlen = id ? json_string_length(json_object_get(in, "id")) : 0;
    char err[512];
    if (!json_is_object(in) || !id) {
        json_decref(in);
        return answer_error(conn, 400, "the body is a JSON object with \"id\" (a string)", NULL);
    }
    /* (a NUL byte first: the check would stop at it) */
    if (strlen(id) != idlen || lapse_inspect_id_check(id, idlen, err, sizeof err) < 0) {
        if (strlen(id) != idlen)
            snprintf(err, sizeof err, "the ID holds a NUL byte");
        json_decref(in); /* (id is in it: not used past here) */
        return answer_error(conn, 400, err, NULL);
    }
    json_t *at = json_object_get(in, "at_ms"), *rel = json_object_get(in, "in_ms");
    json_int_t when = 0;
    if (!cancel) {
        json_t *w = at ? at : rel;
        if ((at && rel) || !json_is_integer(w) || json_integer_value(w) < 0 ||
            json_integer_value(w) > LAPSE_WHEN_MAX) {
            json_decref(in);
            return answer_error(conn, 400,
                                "a deadline is \"at_ms\" (unix ms) or \"in_ms\" (from now), one of "
                                "them, a whole number from 0 to 8640000000000000",
                                NULL);
        }
        when = json_integer_value(w);
    }
    char idq[4 * 64 + 8];
    lapse_inspect_preview(id, idlen, 64, idq, sizeof idq);
    pthread_mutex_lock(&c->io);
    c->write_err[0] = '\0';
    int rc = cancel ? lapse_producer_cancel(c->prod, id, idlen, 1, err, sizeof err)
                    : lapse_producer_touch(c->prod, id, idlen, at ? LAPSE_WHEN_ABS : LAPSE_WHEN_REL,
                                           (int64_t)when, NULL, 0, 1, err, sizeof err);
    if (rc == 0)
        rc = lapse_producer_flush(c->prod, err, sizeof err);
    if (rc == 0 && c->write_err[0]) {
        snprintf(err, sizeof err, "%s", c->write_err);
        rc = -1;
    }
    pthread_mutex_unlock(&c->io);
    if (rc != 0) {
        log_warn("%s by %s: %s failed: %s", action, who, idq, err);
        json_decref(in);
        return answer_error(conn, 503, err, NULL);
    }
    if (cancel)
        log_info("cancel by %s: %s", who, idq);
    else
        log_info("deadline by %s: %s %s%lld", who, idq, at ? "@" : "+", (long long)when);
    json_t *o = json_pack("{s:b, s:s, s:O, s:s}", "ok", 1, "action", action, "id",
                          json_object_get(in, "id"), "by", who);
    if (o && !cancel)
        json_object_set_new(o, at ? "at_ms" : "in_ms", json_integer(when));
    json_decref(in);
    return answer_json(conn, 200, o, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls)
{
    lapse_console *c = cls;
    (void)version;
    if (!*req_cls) { /* the headers alone: keep a place for the body */
        struct req *r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        *req_cls = r;
        return MHD_YES;
    }
    struct req *r = *req_cls;
    if (*upload_size) {
        if (r->len + *upload_size > BODY_MAX)
            r->too_big = 1;
        else
            memcpy(r->body + r->len, upload, *upload_size), r->len += *upload_size;
        *upload_size = 0;
        return MHD_YES;
    }
    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    int post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    if (strcmp(url, "/api/cancel") == 0 || strcmp(url, "/api/deadline") == 0) {
        if (!post)
            return answer_error(conn, 405, "POST only", "POST");
        return api_write(c, conn, url, r);
    }
    if (!get)
        return answer_error(conn, 405, "GET or HEAD only", "GET, HEAD");
    if (strcmp(url, "/api/status") == 0)
        return api_view(c, conn, LAPSE_CACHE_STATUS);
    if (strcmp(url, "/api/due") == 0)
        return api_view(c, conn, LAPSE_CACHE_DUE);
    if (strcmp(url, "/api/offline") == 0)
        return api_offline(c, conn);
    if (strcmp(url, "/api/get") == 0)
        return api_get(c, conn);
    if (strcmp(url, "/api/console") == 0)
        return api_console(c, conn);
    if (strncmp(url, "/api/", 5) == 0)
        return answer_error(conn, 404, "no such endpoint", NULL);
    if (strcmp(url, "/healthz") == 0)
        return answer(conn, 200, "text/plain", "ok\n", 3, 1, NULL);
    const struct lapse_asset *a = lapse_assets_find(url);
    if (!a)
        return answer(conn, 404, "text/plain", "not found\n", 10, 1, NULL);
    return answer(conn, 200, a->type, a->data, a->len, 1, NULL);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    free(*req_cls);
    *req_cls = NULL;
}

static void free_nodes(const struct lapse_config *cfg, lapse_redis **nodes)
{
    for (size_t i = 0; nodes && i < cfg->nnodes; i++)
        lapse_redis_free(nodes[i]);
    free(nodes);
}

lapse_console *lapse_console_start(const struct lapse_console_deps *d, char *errstr, size_t size)
{
    const struct lapse_config *cfg = d->cfg;
    int port = cfg->console_port;
    struct sockaddr_in sa4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    struct sockaddr *sa = NULL;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION;
    if (inet_pton(AF_INET, cfg->console_bind, &sa4.sin_addr) == 1) {
        sa = (struct sockaddr *)&sa4;
    } else if (inet_pton(AF_INET6, cfg->console_bind, &sa6.sin6_addr) == 1) {
        sa = (struct sockaddr *)&sa6;
        flags |= MHD_USE_IPv6;
    }
    lapse_console *c = calloc(1, sizeof *c);
    if (!c || !sa) {
        if (!sa)
            snprintf(errstr, size, "console.bind: \"%s\" is not an IPv4 or IPv6 address",
                     cfg->console_bind);
        else
            snprintf(errstr, size, "out of memory");
        free(c);
        free_nodes(cfg, d->read_nodes);
        free_nodes(cfg, d->req_nodes);
        lapse_tokens_free(d->tokens);
        return NULL;
    }
    c->cfg = cfg;
    c->nodes = d->req_nodes;
    c->tokens = d->tokens;
    pthread_mutex_init(&c->io, NULL);
    c->cache = lapse_cache_start(cfg, d->read_nodes, errstr, size);
    if (!c->cache) {
        free_nodes(cfg, d->read_nodes);
        lapse_console_stop(c);
        return NULL;
    }
    if (cfg->console_writes) {
        char err[512];
        c->prod = lapse_producer_new(cfg, on_write_error, c, err, sizeof err);
        if (!c->prod) {
            snprintf(errstr, size, "console.writes: cannot open the producer: %s", err);
            lapse_console_stop(c);
            return NULL;
        }
    }
    errno = 0;
    c->d = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, on_request, c, MHD_OPTION_SOCK_ADDR, sa,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, c, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)CONN_IDLE_S, MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONN_LIMIT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY, MHD_OPTION_END);
    if (!c->d) {
        int e = errno;
        snprintf(errstr, size, "console: %s:%d: cannot listen%s%s", cfg->console_bind, port,
                 e ? ": " : "", e ? strerror(e) : "");
        lapse_console_stop(c);
        return NULL;
    }
    return c;
}

void lapse_console_stop(lapse_console *c)
{
    if (!c)
        return;
    if (c->d)
        MHD_stop_daemon(c->d);
    lapse_cache_stop(c->cache);
    free_nodes(c->cfg, c->nodes);
    lapse_producer_free(c->prod);
    lapse_tokens_free(c->tokens);
    pthread_mutex_destroy(&c->io);
    free(c);
}
