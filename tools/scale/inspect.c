/*
 * inspect — see inspect.h. How an ID in flight looks (common/lua): a
 * one-shot ID a scanner claimed (claim.lua) is out of the zset, in its
 * claim's record f["<ms>.25"] (cmsgpack of groups { deadline, { id, ... },
 * ... } and pairs { id, deadline, ... }: found by a read-only script,
 * RECORD_LUA); anything else in flight holds a lease as
 * its score: "<ms>.25" a repeating ID of a claim, "<ms>.75" a producer's
 * take during a split (take.lua), "<ms>.5" a claim of lapse before
 * 2026-11-26 or one come back from an expired lease, and the deadline being
 * dispatched sits in the record f[lease] (".25": cmsgpack as above; else
 * "id deadline ..." or, when an ID of the claim held a space, a space and
 * cmsgpack, which is not decoded here: the lease's ms then stands for the
 * deadline, as lib/inflight.lua's inflight_dispatched does).
 */
#include "inspect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bucket.h"
#include "hash.h"

int lapse_inspect_id_check(const char *id, size_t len, char *errstr, size_t size)
{
    if (len == 0) {
        snprintf(errstr, size, "the ID is empty (1 to %d bytes)", LAPSE_INSPECT_ID_MAX);
        return -1;
    }
    if (len > LAPSE_INSPECT_ID_MAX) {
        snprintf(errstr, size, "the ID is %zu bytes long (at most %d)", len, LAPSE_INSPECT_ID_MAX);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)id[i];
        if (c == ' ') {
            snprintf(errstr, size,
                     "the ID holds a space at offset %zu (no spaces or control bytes)", i);
            return -1;
        }
        if (c < 0x20 || c == 0x7f) {
            snprintf(errstr, size,
                     "the ID holds control byte 0x%02x at offset %zu (no spaces or control bytes)",
                     c, i);
            return -1;
        }
    }
    return 0;
}

char *lapse_inspect_preview(const char *p, size_t len, size_t max, char *out, size_t size)
{
    size_t o = 0;
    if (size == 0)
        return out;
    for (size_t i = 0; i < len && i < max; i++) {
        unsigned char c = (unsigned char)p[i];
        char tmp[8];
        if (c == '\\')
            snprintf(tmp, sizeof tmp, "\\\\");
        else if (c == '\n')
            snprintf(tmp, sizeof tmp, "\\n");
        else if (c == '\r')
            snprintf(tmp, sizeof tmp, "\\r");
        else if (c == '\t')
            snprintf(tmp, sizeof tmp, "\\t");
        else if (c >= 0x20 && c < 0x7f)
            snprintf(tmp, sizeof tmp, "%c", c);
        else
            snprintf(tmp, sizeof tmp, "\\x%02x", c);
        size_t n = strlen(tmp);
        if (o + n >= size)
            break; /* a short buffer cuts the preview, never an escape */
        memcpy(out + o, tmp, n);
        o += n;
    }
    if (len > max && o + 3 < size) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

char *lapse_inspect_iso(int64_t ms, char *out, size_t size)
{
    time_t s = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    if (!gmtime_r(&s, &tm)) {
        snprintf(out, size, "?");
        return out;
    }
    snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms - (int64_t)s * 1000));
    return out;
}

/* The deadline the record `rec` ("id deadline id deadline ...") holds for
 * the ID, or -1. */
static int64_t record_deadline(const char *rec, size_t rlen, const char *id, size_t len)
{
    if (rlen == 0 || rec[0] == ' ')
        return -1; /* cmsgpack (see the top of this file) */
    const char *p = rec, *end = rec + rlen;
    while (p < end) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        if (!sp)
            return -1;
        const char *d = sp + 1, *dend = memchr(d, ' ', (size_t)(end - d));
        if (!dend)
            dend = end;
        if ((size_t)(sp - p) == len && memcmp(p, id, len) == 0)
            return strtoll(d, NULL, 10);
        p = dend + 1;
    }
    return -1;
}

/* The claim record (".25") listing ARGV[1]: { lease, deadline }, or nil. */
static const char RECORD_LUA[] =
    "for _, l in ipairs(redis.call('HKEYS', KEYS[1])) do\n"
    "    if string.sub(l, -3) == '.25' then\n"
    "        local groups, flat = cmsgpack.unpack(redis.call('HGET', KEYS[1], l))\n"
    "        for g = 1, #groups, 2 do\n"
    "            for _, id in ipairs(groups[g + 1]) do\n"
    "                if id == ARGV[1] then return { l, groups[g] } end\n"
    "            end\n"
    "        end\n"
    "        for i = 1, #flat, 2 do\n"
    "            if flat[i] == ARGV[1] then return { l, flat[i + 1] } end\n"
    "        end\n"
    "    end\n"
    "end\n"
    "return false\n";

static int reply_fail(lapse_redis *r, redisReply *rep, const char *what, char *errstr, size_t size)
{
    if (!rep)
        snprintf(errstr, size, "%s", lapse_redis_errstr(r));
    else
        snprintf(errstr, size, "%s: %s: %s", lapse_redis_name(r), what,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    if (rep)
        freeReplyObject(rep);
    return -1;
}

/* Reads what shard p->shard holds for the ID (p->shard and p->node set). */
static int place_read(lapse_redis *r, const struct lapse_config *cfg, const char *id, size_t len,
                      int want_moved, struct lapse_inspect_place *p, char *errstr, size_t size)
{
    char z[LAPSE_KEY_MAX], pk[LAPSE_KEY_MAX], rk[LAPSE_KEY_MAX], lk[LAPSE_KEY_MAX],
        mk[LAPSE_KEY_MAX], fk[LAPSE_KEY_MAX];
    char kk[LAPSE_KEY_MAX], state[64] = "";
    lapse_key(lk, sizeof lk, cfg, LAPSE_KEY_LOCK, p->shard);
    lapse_key(fk, sizeof fk, cfg, LAPSE_KEY_INFLIGHT, p->shard);
    lapse_key(kk, sizeof kk, cfg, LAPSE_KEY_BUCKETS, p->shard);
    p->deadline_ms = p->lease_ms = p->dispatching_ms = p->period_ms = -1;
    if (lapse_redis_ensure(r) < 0)
        return reply_fail(r, NULL, NULL, errstr, size);

    /* every argument a C string but the ID, which is `len` bytes */
    const char *argv[8][3] = {
        {"CLIENT", "NO-TOUCH", "ON"},
        {"TIME"},
        {"ZSCORE", z, id},
        {"HGET", pk, id},
        {"HGET", rk, id},
        {"GET", lk},
        {"GET", kk},
        {"SISMEMBER", mk, id},
    };
    static const int argc[8] = {3, 1, 3, 3, 3, 2, 2, 3};
    static const char *what[] = {"CLIENT NO-TOUCH", "TIME",     "ZSCORE",      "HGET payload",
                                 "HGET repeat",     "GET lock", "GET buckets", "SISMEMBER moved"};
    int n = want_moved ? 8 : 7;
    /* (on a cluster the keyless two go to the shard's primary too: TIME is
     * its clock, NO-TOUCH its connection) */
    uint16_t slot = lapse_shard_slot(cfg->ns, p->shard);
    redisReply *rep[8] = {0};
    int rc = 0, old = 0; /* old: reading a converting shard's one-zset keys */
    /* The ID's keys follow the shard's state (bucket.h): read first, then
     * again with the ID's reads, which are taken as they are once the
     * state did not change between (a bucket split moves IDs). */
    for (int tries = 0;; tries++) {
        if (tries == 0) {
            redisReply *st = lapse_redis_command(r, "GET %s", kk);
            if (!st || (st->type != REDIS_REPLY_STRING && st->type != REDIS_REPLY_NIL))
                return reply_fail(r, st, "GET buckets", errstr, size);
            snprintf(state, sizeof state, "%s", st->type == REDIS_REPLY_STRING ? st->str : "");
            freeReplyObject(st);
        }
        struct lapse_buckets bk;
        if (lapse_buckets_parse(state[0] ? state : NULL, &bk) < 0) {
            snprintf(errstr, size, "%s: %s: not a shard state (\"b s\" [flags]): %s",
                     lapse_redis_name(r), kk, state);
            return -1;
        }
        if (old)
            bk.small = 0;
        uint32_t j = lapse_bucket_of(&bk, lapse_bucket_hash(id, len));
        char key[LAPSE_KEY_MAX];
        lapse_key(key, sizeof key, cfg, LAPSE_KEY_DUE, p->shard);
        lapse_bucket_key(z, sizeof z, &bk, key, j);
        lapse_key(key, sizeof key, cfg, LAPSE_KEY_PAYLOAD, p->shard);
        lapse_bucket_key(pk, sizeof pk, &bk, key, j);
        lapse_key(key, sizeof key, cfg, LAPSE_KEY_REPEAT, p->shard);
        lapse_bucket_key(rk, sizeof rk, &bk, key, j);
        lapse_key(key, sizeof key, cfg, LAPSE_KEY_MOVED, p->shard);
        lapse_bucket_key(mk, sizeof mk, &bk, key, j);
        for (int i = 0; i < n; i++) {
            size_t lens[3];
            for (int a = 0; a < argc[i]; a++)
                lens[a] = argv[i][a] == id ? len : strlen(argv[i][a]);
            if (lapse_redis_append_slot(r, slot, argc[i], argv[i], lens) < 0)
                return reply_fail(r, NULL, NULL, errstr, size);
        }
        for (int i = 0; i < n; i++) {
            if (lapse_redis_get_reply(r, &rep[i]) < 0) {
                rc = reply_fail(r, NULL, NULL, errstr, size);
                break;
            }
        }
        /* (reply 0 may be an error: servers before 7.2 do not know NO-TOUCH) */
        for (int i = 1; rc == 0 && i < n; i++) {
            int t = rep[i]->type;
            int ok = i == 1   ? t == REDIS_REPLY_ARRAY && rep[i]->elements == 2
                     : i == 7 ? t == REDIS_REPLY_INTEGER
                              : t == REDIS_REPLY_STRING || t == REDIS_REPLY_NIL;
            if (!ok) {
                rc = reply_fail(r, rep[i], what[i], errstr, size);
                rep[i] = NULL;
            }
        }
        const char *now = rc == 0 && rep[6]->type == REDIS_REPLY_STRING ? rep[6]->str : "";
        /* nothing in its bucket: a shard converted from one zset may still
         * hold the ID in its old keys (bucket.h) */
        int none = rc == 0 && rep[2]->type == REDIS_REPLY_NIL && rep[3]->type == REDIS_REPLY_NIL &&
                   rep[4]->type == REDIS_REPLY_NIL;
        if (none && bk.small && !old) {
            old = 1;
            for (int i = 0; i < n; i++) {
                if (rep[i])
                    freeReplyObject(rep[i]);
                rep[i] = NULL;
            }
            continue;
        }
        if (rc < 0 || strcmp(now, state) == 0 || tries == 3)
            break;
        snprintf(state, sizeof state, "%s", now); /* moved meanwhile: once more */
        for (int i = 0; i < n; i++) {
            if (rep[i])
                freeReplyObject(rep[i]);
            rep[i] = NULL;
        }
    }
    char score[64] = "";
    if (rc == 0) {
        p->now_ms = strtoll(rep[1]->element[0]->str, NULL, 10) * 1000 +
                    strtoll(rep[1]->element[1]->str, NULL, 10) / 1000;
        if (rep[2]->type == REDIS_REPLY_STRING) {
            p->found = 1;
            snprintf(score, sizeof score, "%s", rep[2]->str);
            double s = strtod(score, NULL);
            if (strchr(score, '.')) { /* producers write whole ms only: a lease */
                p->in_flight = 1;
                p->lease_ms = (int64_t)floor(s);
                p->taken = s - floor(s) > 0.6;
            } else {
                p->deadline_ms = (int64_t)s;
            }
        }
        if (rep[3]->type == REDIS_REPLY_STRING) {
            p->payload = malloc(rep[3]->len + 1);
            if (!p->payload) {
                snprintf(errstr, size, "out of memory");
                rc = -1;
            } else {
                memcpy(p->payload, rep[3]->str, rep[3]->len);
                p->payload[rep[3]->len] = '\0';
                p->payload_len = rep[3]->len;
            }
        }
        long long period, fired;
        if (rep[4]->type == REDIS_REPLY_STRING &&
            sscanf(rep[4]->str, "%lld:%lld", &period, &fired) == 2) {
            p->period_ms = period;
            p->fired = fired;
        }
        if (rep[5]->type == REDIS_REPLY_STRING)
            snprintf(p->holder, sizeof p->holder, "%s", rep[5]->str);
        p->moved = want_moved && rep[7]->integer == 1;
    }
    for (int i = 0; i < n; i++)
        if (rep[i])
            freeReplyObject(rep[i]);
    size_t sl = strlen(score);
    if (rc == 0 && (!p->found || (sl > 3 && strcmp(score + sl - 3, ".25") == 0))) {
        /* out of the zset (a claim's record may hold it), or a repeating
         * ID of a claim: the deadline is in a claim's record */
        const char *ev[5] = {"EVAL", RECORD_LUA, "1", fk, id};
        size_t lens[5] = {4, strlen(RECORD_LUA), 1, strlen(fk), len};
        redisReply *c = lapse_redis_command_argv(r, 5, ev, lens);
        if (!c || (c->type != REDIS_REPLY_ARRAY && c->type != REDIS_REPLY_NIL) ||
            (c->type == REDIS_REPLY_ARRAY &&
             (c->elements != 2 || c->element[0]->type != REDIS_REPLY_STRING ||
              c->element[1]->type != REDIS_REPLY_STRING)))
            return reply_fail(r, c, "in-flight records", errstr, size);
        if (c->type == REDIS_REPLY_ARRAY) {
            p->found = p->in_flight = 1;
            p->lease_ms = (int64_t)floor(strtod(c->element[0]->str, NULL));
            p->dispatching_ms = strtoll(c->element[1]->str, NULL, 10);
        }
        freeReplyObject(c);
        return 0;
    }
    if (rc < 0 || !p->in_flight)
        return rc;

    /* the record is filed under the lease as the script formatted it */
    char field[64];
    snprintf(field, sizeof field, "%s", score); /* (Redis formats it as the script did) */
    redisReply *f = lapse_redis_command(r, "HGET %s %s", fk, field);
    if (!f || (f->type != REDIS_REPLY_STRING && f->type != REDIS_REPLY_NIL))
        return reply_fail(r, f, "HGET in-flight record", errstr, size);
    if (f->type == REDIS_REPLY_STRING)
        p->dispatching_ms = record_deadline(f->str, f->len, id, len);
    freeReplyObject(f);
    return 0;
}

int lapse_inspect_read(lapse_redis **nodes, const struct lapse_config *cfg,
                       const struct lapse_layout *l, const char *id, size_t len,
                       struct lapse_inspect *out, char *errstr, size_t size)
{
    memset(out, 0, sizeof *out);
    out->hash = lapse_hash(id, len);
    out->at.shard = lapse_layout_new_home(l, out->hash);
    out->at.node = l->node_of[out->at.shard];
    out->has_twin = lapse_layout_moves(l, out->hash);
    if (place_read(nodes[out->at.node], cfg, id, len, out->has_twin, &out->at, errstr, size) < 0)
        return -1;
    if (!out->has_twin)
        return 0;
    out->twin.shard = lapse_layout_old_home(l, out->hash);
    out->twin.node = l->node_of[out->twin.shard];
    return place_read(nodes[out->twin.node], cfg, id, len, 0, &out->twin, errstr, size);
}

void lapse_inspect_free(struct lapse_inspect *in)
{
    free(in->at.payload);
    free(in->twin.payload);
    in->at.payload = in->twin.payload = NULL;
}
