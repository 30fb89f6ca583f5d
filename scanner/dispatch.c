/*
 * dispatch — the send path: turns claim.lua's reply into flights (the IDs
 * and their deadlines, parsed in place: the flights point into the reply)
 * and one claimed ID into its event, handed to the sink. Calls nothing
 * else of the scanner; claim.c decides what is sent and when.
 *
 * Keeps the hot path's cost per ID low (scanner.c): no allocation per ID,
 * the event is encoded into the scanner's one reused buffer, and an event
 * that was not handed over leaves its ID leased (sent again later), never
 * lost.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "event.h"
#include "hash.h"
#include "log.h"
#include "metrics.h"
#include "sink.h"
#include "scanner_priv.h"

/* Sends the event of one claimed ID; the flight record rides along as the
 * message's opaque and comes back in scanner_delivered. Its lateness counts
 * from `since` (the deadline, or later: claim.c, scanner_seen). Returns 0,
 * or -1 if it was not sent (its lease runs out and the ID is claimed
 * again). */
/* A number of a recovered event's record ("D F R", lib/watch.lua) at *p,
 * moving *p past it and one space; -1 when there is none. */
static long long scanner_record_num(const char **p, const char *end)
{
    long long v = 0;
    const char *q = *p;
    if (q == end || *q < '0' || *q > '9')
        return -1;
    for (; q < end && *q >= '0' && *q <= '9' && v < LLONG_MAX / 10 - 9; q++)
        v = v * 10 + (*q - '0');
    *p = q < end && *q == ' ' ? q + 1 : q;
    return v;
}

/* The event of a claimed member that is a queued "recovered" event: its ID
 * follows the mark, its record (the member's payload) says when the timeout
 * fell due and fired and when the ID came back. A record that is not
 * readable (not lapse's) gives 0s, counted and logged: the event still goes. */
static void scanner_recovered(lapse_scanner *s, struct lapse_event *ev, long long queued,
                              const redisReply *payload)
{
    ev->id++, ev->id_len--;
    ev->payload = NULL, ev->payload_len = 0, ev->seq = 0;
    long long d = -1, f = -1, r = -1;
    if (payload && payload->type == REDIS_REPLY_STRING) {
        const char *p = payload->str, *end = payload->str + payload->len;
        d = scanner_record_num(&p, end);
        f = scanner_record_num(&p, end);
        r = scanner_record_num(&p, end);
    }
    if (d < 0 || f < 0 || r <= 0) {
        lapse_log_limited(&s->lim_kafka, 2, LAPSE_LOG_WARN,
                          "shard %u: a recovered event without its record (not lapse's?)",
                          s->shard);
        METRIC_INC(s, bad_records);
        d = f = 0, r = queued > 0 ? queued : 1;
    }
    ev->deadline_ms = d, ev->fired_ms = f, ev->recovered_ms = r;
    METRIC_INC(s, recovered_sent);
}

int scanner_dispatch(lapse_scanner *s, struct flight *f, long long deadline, long long since,
                     const redisReply *payload /* NULL: none */, long long seq)
{
    struct lapse_event ev = {
        .ns = s->cfg->ns,
        .id = f->id,
        .id_len = f->id_len,
        .deadline_ms = deadline,
        .fired_ms = lapse_clock_ms(),
        .shard = s->shard,
        .payload = payload && payload->type == REDIS_REPLY_STRING ? payload->str : NULL,
        .payload_len = payload && payload->type == REDIS_REPLY_STRING ? payload->len : 0,
        .seq = seq,
    };
    if (f->id_len > 1 && (unsigned char)f->id[0] == LAPSE_RECOVERED_MARK)
        scanner_recovered(s, &ev, deadline, payload);
    size_t need = lapse_event_size(&ev);
    if (need > s->event_size) {
        char *e = realloc(s->event, need);
        if (!e) {
            lapse_log_limited(&s->lim_kafka, 2, LAPSE_LOG_WARN, "shard %u: out of memory",
                              s->shard);
            return -1;
        }
        s->event = e;
        s->event_size = need;
    }
    size_t len = lapse_event_write(&ev, s->event);
    char err[256];
    if (lapse_sink_send(s->sink, ev.id, ev.id_len, s->event, len, f, err, sizeof err) < 0) {
        lapse_log_limited(&s->lim_kafka, 2, LAPSE_LOG_WARN, "shard %u: %s", s->shard, err);
        return -1;
    }
    lapse_metrics_lateness(&s->metrics, ev.fired_ms - since);
    s->inflight++;
    METRIC_INC(s, sent);
    METRIC_SET(s, inflight, (int64_t)s->inflight);
    return 0;
}

/* A claimed ID's deadline from its decimal string (claim.lua passes Redis's
 * own formatting of the score through: an integer). */
static long long scanner_deadline(const char *p, size_t len)
{
    long long v = 0;
    size_t i = len > 0 && p[0] == '-';
    if (i == len || len > 18) /* more digits could overflow */
        goto other;
    for (; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            goto other;
        v = v * 10 + (p[i] - '0');
    }
    return p[0] == '-' ? -v : v;
other:; /* not an integer (never written by lapse): what strtod makes of it,
           * within what a long long holds (-inf, nan: 0) */
    char buf[64];
    if (len >= sizeof buf)
        return 0;
    memcpy(buf, p, len);
    buf[len] = 0;
    double d = strtod(buf, NULL);
    return d > -9e18 && d < 9e18 ? (long long)d : d >= 9e18 ? LLONG_MAX : 0;
}

/*
 * One MessagePack string at *p (before end): sets *str, *len and moves *p
 * past it. Returns 0, or -1 when it is not a string or runs past end.
 * (claim.lua's cmsgpack writes fixstr, str 8/16/32; raw 16/32 are the same
 * headers.)
 */
static int scanner_mp_str(const unsigned char **p, const unsigned char *end, const char **str,
                          size_t *len)
{
    const unsigned char *q = *p;
    if (q >= end)
        return -1;
    size_t n, head = 1;
    if ((*q & 0xe0) == 0xa0)
        n = *q & 0x1f;
    else if (*q == 0xd9 && end - q >= 2)
        n = q[1], head = 2;
    else if (*q == 0xda && end - q >= 3)
        n = (size_t)q[1] << 8 | q[2], head = 3;
    else if (*q == 0xdb && end - q >= 5)
        n = (size_t)q[1] << 24 | (size_t)q[2] << 16 | (size_t)q[3] << 8 | q[4], head = 5;
    else
        return -1;
    if ((size_t)(end - q) - head < n)
        return -1;
    *str = (const char *)q + head;
    *len = n;
    *p = q + head + n;
    return 0;
}

/* One MessagePack array header at *p: sets *count and moves *p past it.
 * Returns 0, or -1 when it is not one. */
static int scanner_mp_array(const unsigned char **p, const unsigned char *end, size_t *count)
{
    const unsigned char *q = *p;
    if (q >= end)
        return -1;
    if ((*q & 0xf0) == 0x90)
        *count = *q & 0x0f, *p = q + 1;
    else if (*q == 0xdc && end - q >= 3)
        *count = (size_t)q[1] << 8 | q[2], *p = q + 3;
    else if (*q == 0xdd && end - q >= 5)
        *count = (size_t)q[1] << 24 | (size_t)q[2] << 16 | (size_t)q[3] << 8 | q[4], *p = q + 5;
    else
        return -1;
    return *count <= (size_t)(end - *p) ? 0 : -1; /* (each element takes a byte at least) */
}

/*
 * The IDs and deadlines of claim.lua's `claimed` element: in one bulk
 * string ("" when none), MessagePack of the groups { deadline, { id, ... },
 * ... } (IDs that share a deadline) and then of the pairs { id, deadline,
 * ... }, all strings; or a Redis array of pairs. With fl == NULL, returns
 * how many IDs there are (-1: malformed); else fills fl[i].id/id_len and
 * deadlines[i] (groups first, as claim.lua counts places) and returns the
 * count.
 */
long scanner_claimed(const redisReply *c, struct flight *fl, long long *deadlines)
{
    if (c->type == REDIS_REPLY_ARRAY) {
        if (c->elements % 2)
            return -1;
        for (size_t i = 0; i < c->elements; i++)
            if (c->element[i]->type != REDIS_REPLY_STRING)
                return -1;
        for (size_t i = 0; fl && i < c->elements / 2; i++) {
            const redisReply *id = c->element[2 * i], *d = c->element[2 * i + 1];
            fl[i].id = id->str, fl[i].id_len = id->len;
            deadlines[i] = scanner_deadline(d->str, d->len);
        }
        return (long)(c->elements / 2);
    }
    if (c->type != REDIS_REPLY_STRING)
        return -1;
    if (c->len == 0)
        return 0;
    const unsigned char *p = (const unsigned char *)c->str, *end = p + c->len;
    size_t groups, pairs, n = 0;
    if (scanner_mp_array(&p, end, &groups) < 0 || groups % 2)
        return -1;
    for (size_t g = 0; g < groups / 2; g++) {
        const char *d;
        size_t d_len, ids;
        if (scanner_mp_str(&p, end, &d, &d_len) < 0 || scanner_mp_array(&p, end, &ids) < 0)
            return -1;
        long long deadline = scanner_deadline(d, d_len);
        for (size_t k = 0; k < ids; k++, n++) {
            const char *id;
            size_t id_len;
            if (scanner_mp_str(&p, end, &id, &id_len) < 0)
                return -1;
            if (fl) {
                fl[n].id = id, fl[n].id_len = id_len;
                deadlines[n] = deadline;
            }
        }
    }
    if (scanner_mp_array(&p, end, &pairs) < 0 || pairs % 2)
        return -1;
    for (size_t i = 0; i < pairs / 2; i++, n++) {
        const char *id, *d;
        size_t id_len, d_len;
        if (scanner_mp_str(&p, end, &id, &id_len) < 0 || scanner_mp_str(&p, end, &d, &d_len) < 0)
            return -1;
        if (fl) {
            fl[n].id = id, fl[n].id_len = id_len;
            deadlines[n] = scanner_deadline(d, d_len);
        }
    }
    return p == end && n <= LONG_MAX ? (long)n : -1;
}
