/*
 * get — see get.h. The reading is tools/scale/inspect.c's; this file prints.
 * In JSON an ID and a payload are strings as in the event (common/event.h):
 * valid UTF-8 as is, else with U+FFFD for each bad byte and the exact bytes
 * in "id_b64" / "payload_b64", so the two never disagree.
 */
#include "get.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "inspect.h"
#include "layout.h"
#include "status.h"

#define PREVIEW_BYTES 64

/* Sets o[key] (and o[b64key] when the bytes are not UTF-8) as the event
 * encoder would: it is asked to encode them and its JSON is read back. */
static int put_bytes(json_t *o, const char *key, const char *b64key, const char *p, size_t len)
{
    struct lapse_event ev = {.ns = "", .id = p, .id_len = len};
    size_t n;
    char *s = lapse_event_encode(&ev, &n);
    json_t *e = s ? json_loadb(s, n, 0, NULL) : NULL;
    free(s);
    if (!e)
        return -1;
    json_object_set(o, key, json_object_get(e, "id"));
    if (json_object_get(e, "id_b64"))
        json_object_set(o, b64key, json_object_get(e, "id_b64"));
    json_decref(e);
    return 0;
}

static json_t *ms_or_null(int64_t ms)
{
    return ms >= 0 ? json_integer(ms) : json_null();
}

static json_t *iso_or_null(int64_t ms)
{
    char iso[40];
    return ms >= 0 ? json_string(lapse_inspect_iso(ms, iso, sizeof iso)) : json_null();
}

static json_t *place_json(lapse_redis **nodes, const struct lapse_inspect_place *p)
{
    char preview[4 * PREVIEW_BYTES + 8];
    json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:b, s:o, s:o, s:b}", "shard", (int)p->shard,
                          "node", lapse_redis_name(nodes[p->node]), "address",
                          lapse_redis_addr(nodes[p->node]), "now_ms", (json_int_t)p->now_ms,
                          "found", p->found, "deadline_ms", ms_or_null(p->deadline_ms), "deadline",
                          iso_or_null(p->deadline_ms), "in_flight", p->in_flight);
    if (!o)
        return NULL;
    json_object_set_new(o, "lease_until_ms", ms_or_null(p->lease_ms));
    json_object_set_new(o, "inflight_deadline_ms",
                        p->in_flight
                            ? ms_or_null(p->dispatching_ms >= 0 ? p->dispatching_ms : p->lease_ms)
                            : json_null());
    json_object_set_new(o, "leased_by",
                        p->in_flight ? json_string(p->taken ? "split move" : "scanner")
                                     : json_null());
    if (p->payload) {
        if (put_bytes(o, "payload", "payload_b64", p->payload, p->payload_len) < 0) {
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, "payload_bytes", json_integer((json_int_t)p->payload_len));
        json_object_set_new(
            o, "payload_preview",
            json_string(lapse_inspect_preview(p->payload, p->payload_len, PREVIEW_BYTES, preview,
                                              sizeof preview)));
    }
    json_object_set_new(o, "repeat",
                        p->period_ms >= 0
                            ? json_pack("{s:I, s:I, s:I}", "period_ms", (json_int_t)p->period_ms,
                                        "fired", (json_int_t)p->fired, "next_seq",
                                        (json_int_t)(p->fired + 1))
                            : json_null());
    json_object_set_new(o, "scanner", p->holder[0] ? json_string(p->holder) : json_null());
    return o;
}

/* "1795...  2026-11-25T10:11:12.345Z  (in 4.2 s)" / "...  (3.1 s ago)" */
static const char *when(int64_t ms, int64_t now, char *out, size_t size)
{
    char iso[40], rel[64];
    snprintf(out, size, "%" PRId64 "  %s  (%s)", ms, lapse_inspect_iso(ms, iso, sizeof iso),
             lapse_scale_from_now(ms, now, rel, sizeof rel));
    return out;
}

static void place_print(lapse_redis **nodes, const struct lapse_inspect_place *p,
                        const char *indent)
{
    char w[128], preview[4 * PREVIEW_BYTES + 8];
    printf("%snode       %s (reached at %s)\n", indent, lapse_redis_name(nodes[p->node]),
           lapse_redis_addr(nodes[p->node]));
    if (p->deadline_ms >= 0)
        printf("%sdeadline   %s\n", indent, when(p->deadline_ms, p->now_ms, w, sizeof w));
    else
        printf("%sdeadline   none%s\n", indent,
               p->in_flight ? " pending: it is being dispatched" : "");
    if (p->in_flight) {
        printf("%sin flight  yes, %s\n", indent,
               p->taken ? "taken by a producer moving it to its new shard"
                        : "claimed by the shard's scanner");
        printf("%s  lease    until %s\n", indent, when(p->lease_ms, p->now_ms, w, sizeof w));
        if (p->dispatching_ms >= 0)
            printf("%s  deadline %s\n", indent, when(p->dispatching_ms, p->now_ms, w, sizeof w));
        else
            printf("%s  deadline unknown (no record for it under its lease)\n", indent);
    } else {
        printf("%sin flight  no\n", indent);
    }
    if (p->payload)
        printf("%spayload    %zu bytes: %s\n", indent, p->payload_len,
               lapse_inspect_preview(p->payload, p->payload_len, PREVIEW_BYTES, preview,
                                     sizeof preview));
    else
        printf("%spayload    none\n", indent);
    if (p->period_ms >= 0)
        printf("%srepeat     every %" PRId64 " ms, fired %" PRId64 " times, next seq %" PRId64 "\n",
               indent, p->period_ms, p->fired, p->fired + 1);
    else
        printf("%srepeat     no\n", indent);
    printf("%sscanner    %s\n", indent, p->holder[0] ? p->holder : "none");
}

/* Reads the layout and what it says the ID's shard (and twin) hold. 0, or
 * -1 with the reason in errstr ("get: ..." or the layout's); *l and *in
 * are to be freed either way (lapse_layout_free on a zeroed one is safe). */
static int get_read(const struct lapse_config *cfg, lapse_redis **nodes, const char *id, size_t len,
                    lapse_scale_warn_fn *warn, void *ctx, struct lapse_layout *l,
                    struct lapse_inspect *in, char *errstr, size_t size)
{
    char err[512];
    memset(l, 0, sizeof *l);
    memset(in, 0, sizeof *in);
    if (lapse_inspect_id_check(id, len, err, sizeof err) < 0) {
        snprintf(errstr, size, "get: %s", err);
        return -1;
    }
    if (lapse_scale_layout_read(cfg, nodes, l, warn, ctx, errstr, size) < 0)
        return -1;
    if (lapse_inspect_read(nodes, cfg, l, id, len, in, err, sizeof err) < 0) {
        snprintf(errstr, size, "get: %s", err);
        return -1;
    }
    return 0;
}

/* get --json's object for what was read (new reference), NULL when out of memory. */
static json_t *get_json(lapse_redis **nodes, const struct lapse_layout *l,
                        const struct lapse_inspect *in, const char *id, size_t len)
{
    json_t *o = json_object();
    json_t *at = place_json(nodes, &in->at);
    char hash[20];
    snprintf(hash, sizeof hash, "%016" PRIx64, in->hash);
    if (!o || !at || put_bytes(o, "id", "id_b64", id, len) < 0) {
        json_decref(at);
        json_decref(o);
        return NULL;
    }
    json_object_set_new(o, "hash", json_string(hash));
    json_object_set_new(o, "shards", json_integer(l->shards));
    json_object_set_new(o, "state", json_string(lapse_layout_state_name(l->state)));
    json_object_update(o, at);
    json_decref(at);
    json_t *twin = json_null();
    if (in->has_twin) {
        twin = place_json(nodes, &in->twin);
        if (twin) {
            json_object_set_new(twin, "stale", json_boolean(in->at.moved));
            json_object_set_new(o, "moved", json_boolean(in->at.moved));
        }
    }
    json_object_set_new(o, "twin", twin ? twin : json_null());
    return o;
}

json_t *lapse_scale_get_json(const struct lapse_config *cfg, lapse_redis **nodes, const char *id,
                             size_t len, lapse_scale_warn_fn *warn, void *ctx, char *errstr,
                             size_t size)
{
    struct lapse_layout l;
    struct lapse_inspect in;
    json_t *o = NULL;
    if (get_read(cfg, nodes, id, len, warn, ctx, &l, &in, errstr, size) == 0 &&
        !(o = get_json(nodes, &l, &in, id, len)))
        snprintf(errstr, size, "get: out of memory");
    lapse_inspect_free(&in);
    lapse_layout_free(&l);
    return o;
}

int lapse_scale_get(const struct lapse_config *cfg, lapse_redis **nodes, const char *id,
                    int as_json)
{
    char err[512];
    size_t len = strlen(id);
    if (lapse_inspect_id_check(id, len, err, sizeof err) < 0) {
        fprintf(stderr, "lapse-scale: get: %s\n", err);
        return 2;
    }
    if (as_json) {
        json_t *o = lapse_scale_get_json(cfg, nodes, id, len, lapse_scale_warn_stderr, NULL, err,
                                         sizeof err);
        int rc = lapse_scale_print_json(o);
        if (rc < 0)
            fprintf(stderr, "lapse-scale: %s\n", o ? "get: out of memory" : err);
        json_decref(o);
        return rc < 0 ? 1 : 0;
    }
    struct lapse_layout l;
    struct lapse_inspect in;
    if (get_read(cfg, nodes, id, len, lapse_scale_warn_stderr, NULL, &l, &in, err, sizeof err) <
        0) {
        fprintf(stderr, "lapse-scale: %s\n", err);
        lapse_inspect_free(&in);
        lapse_layout_free(&l);
        return 1;
    }
    {
        char idq[4 * PREVIEW_BYTES + 8];
        printf("id         %s\n", lapse_inspect_preview(id, len, PREVIEW_BYTES, idq, sizeof idq));
        printf("shard      %u of %u (hash %016" PRIx64 ")\n", in.at.shard, l.shards, in.hash);
        place_print(nodes, &in.at, "");
        if (!in.at.found && !in.at.payload && !(in.has_twin && in.twin.found))
            printf("(lapse holds nothing for this ID: never set, fired, or cancelled)\n");
        const char *change = l.state == LAPSE_LAYOUT_MERGING ? "merge" : "split";
        if (in.has_twin) {
            printf("%-10s %u -> %u: the ID moves from old shard %u; %s\n", change, l.prev_shards,
                   l.shards, in.twin.shard,
                   in.at.moved ? "written in its new shard since: the old twin is stale "
                                 "(dropped, never fired)"
                               : "not written in its new shard yet: the old twin is live");
            printf("twin       old shard %u\n", in.twin.shard);
            place_print(nodes, &in.twin, "  ");
        } else if (lapse_layout_changing(&l)) {
            printf("%-10s %u -> %u: the ID stays in shard %u\n", change, l.prev_shards, l.shards,
                   in.at.shard);
        }
    }
    lapse_inspect_free(&in);
    lapse_layout_free(&l);
    return 0;
}
