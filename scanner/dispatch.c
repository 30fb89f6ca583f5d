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
#include "log.h"
#include "metrics.h"
#include "sink.h"
#include "shard.h"

/* Sends the event of one claimed ID; the flight record rides along as the
 * message's opaque and comes back in scanner_delivered. Its lateness counts
 * from `since` (the deadline, or later: claim.c, scanner_seen). Returns 0,
 * or -1 if it was not sent (its lease runs out and the ID is claimed
 * again). */
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
    if (lapse_sink_send(s->sink, f->id, f->id_len, s->event, len, f, err, sizeof err) < 0) {
        lapse_log_limited(&s->lim_kafka, 2, LAPSE_LOG_WARN, "shard %u: %s", s->shard, err);
        return -1;
    }
    lapse_metrics_lateness(&s->metrics, ev.fired_ms - since);
    s->inflight++;
    INC(sent);
    SET(inflight, (int64_t)s->inflight);
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

/*
 * The IDs and deadlines of claim.lua's `claimed` element: MessagePack of an
 * array { id, deadline, id, deadline, ... } of strings in one bulk string
 * ("" when none), or a Redis array of them. With fl == NULL, returns how
 * many there are (-1: malformed); else fills fl[i].id/id_len and
 * deadlines[i] and returns the count.
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
    size_t count;
    if ((*p & 0xf0) == 0x90)
        count = *p & 0x0f, p += 1;
    else if (*p == 0xdc && end - p >= 3)
        count = (size_t)p[1] << 8 | p[2], p += 3;
    else if (*p == 0xdd && end - p >= 5)
        count = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4], p += 5;
    else
        return -1;
    if (count % 2 || count / 2 > (size_t)(end - p) / 2 || count / 2 > LONG_MAX)
        return -1;
    for (size_t i = 0; i < count / 2; i++) {
        const char *id, *d;
        size_t id_len, d_len;
        if (scanner_mp_str(&p, end, &id, &id_len) < 0 || scanner_mp_str(&p, end, &d, &d_len) < 0)
            return -1;
        if (fl) {
            fl[i].id = id, fl[i].id_len = id_len;
            deadlines[i] = scanner_deadline(d, d_len);
        }
    }
    return p == end ? (long)(count / 2) : -1;
}
