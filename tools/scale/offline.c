#include "offline.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "status.h"

/* common/lua/offline.lua (embedded, lib/watch.lua pasted in): KEYS z, e;
 * ARGV cursor, records to look at, prefix. */
extern const char lapse_lua_offline[];

#define OFFLINE_SLICE "1000"

/* One page of shard i's offline IDs from cursor (updated; "0" when done),
 * each printed or added to list, until *left reaches 0 (limit given).
 * 0, or -1 with the reason on stderr. */
static int offline_page(const struct lapse_config *cfg, lapse_redis *r, uint32_t i, char *cursor,
                        const char *prefix, long *left, json_t *list)
{
    char z[LAPSE_KEY_MAX], e[LAPSE_KEY_MAX];
    lapse_key(z, sizeof z, cfg, LAPSE_KEY_DUE, i);
    lapse_key(e, sizeof e, cfg, LAPSE_KEY_EPOCH, i);
    const char *argv[] = {"EVAL", lapse_lua_offline, "2", z, e, cursor, OFFLINE_SLICE, prefix};
    size_t lens[8];
    for (int k = 0; k < 8; k++)
        lens[k] = strlen(argv[k]);
    redisReply *rep;
    if (lapse_redis_append_slot(r, lapse_shard_slot(cfg->ns, i), 8, argv, lens) < 0 ||
        lapse_redis_get_reply(r, &rep) < 0) {
        fprintf(stderr, "lapse-scale: offline: shard %u: %s\n", i, lapse_redis_errstr(r));
        return -1;
    }
    int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements % 3 == 1 &&
             rep->element[0]->type == REDIS_REPLY_STRING && rep->element[0]->len < 24;
    for (size_t k = 1; ok && k < rep->elements; k++)
        ok = rep->element[k]->type == REDIS_REPLY_STRING;
    if (!ok) {
        fprintf(stderr, "lapse-scale: offline: shard %u: unexpected reply%s%.200s\n", i,
                rep->type == REDIS_REPLY_ERROR ? ": " : "",
                rep->type == REDIS_REPLY_ERROR ? rep->str : "");
        freeReplyObject(rep);
        return -1;
    }
    memcpy(cursor, rep->element[0]->str, rep->element[0]->len);
    cursor[rep->element[0]->len] = '\0';
    for (size_t k = 1; k + 2 < rep->elements && *left != 0; k += 3) {
        const redisReply *id = rep->element[k], *d = rep->element[k + 1], *f = rep->element[k + 2];
        if (list) {
            json_t *o = json_object();
            json_t *js = json_stringn(id->str, id->len);
            json_object_set_new(o, "id", js ? js : json_stringn_nocheck(id->str, id->len));
            json_object_set_new(o, "shard", json_integer(i));
            json_object_set_new(o, "deadline_ms", json_integer(strtoll(d->str, NULL, 10)));
            json_object_set_new(o, "since_ms", json_integer(strtoll(f->str, NULL, 10)));
            json_array_append_new(list, o);
        } else {
            printf("%.*s\t%u\t%s\t%s\n", (int)id->len, id->str, i, d->str, f->str);
        }
        if (*left > 0)
            (*left)--;
    }
    freeReplyObject(rep);
    return 0;
}

int lapse_scale_offline(const struct lapse_config *cfg, lapse_redis **nodes, int as_json,
                        long limit, const char *prefix)
{
    struct lapse_layout l;
    if (lapse_scale_layout(cfg, nodes, &l) < 0)
        return 1;
    json_t *list = as_json ? json_array() : NULL;
    long left = limit > 0 ? limit : -1;
    int rc = 0;
    for (uint32_t i = 0; i < l.shards && left != 0; i++) {
        lapse_redis *r = nodes[l.node_of[i]];
        char cursor[24] = "0";
        do {
            if (offline_page(cfg, r, i, cursor, prefix, &left, list) < 0) {
                rc = 1;
                break;
            }
        } while (strcmp(cursor, "0") != 0 && left != 0);
    }
    if (list) {
        json_t *out = json_object();
        json_object_set_new(out, "ns", json_string(cfg->ns));
        json_object_set_new(out, "offline", list);
        json_object_set_new(out, "truncated", json_boolean(left == 0));
        char *s = json_dumps(out, JSON_COMPACT);
        if (s)
            puts(s);
        free(s);
        json_decref(out);
    }
    lapse_layout_free(&l);
    return rc;
}
