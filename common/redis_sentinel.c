/*
 * redis_sentinel — where a Sentinel node's primary is: the sentinels are
 * asked in turn, from the one that answered last, and the server found is
 * checked to be a primary before it is used (a failover may be under way).
 *
 * Why a file of its own: a plain node is connected to where the config says;
 * only a Sentinel node needs this, and only redis.c's connect calls it. It
 * calls back into redis.c for nothing but the helpers redis_priv.h declares
 * for every part of the module (open, AUTH, split an address, read a
 * refusal, set the handle's error: the ones redis_cluster.c uses too), and
 * keeps no state of its own: where to start asking is r->sentinel_first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_priv.h"

/* Asks the sentinels, in turn from the one that answered last, where the
 * node's primary is. 0 with host and port, or -1 with errstr naming every
 * sentinel's failure. */
int redis_discover(lapse_redis *r, char *host, size_t hsize, int *port)
{
    const struct lapse_redis_node *n = &r->node;
    char why[400] = "", one[200];
    size_t wl = 0;
    int refused = 0;
    for (size_t k = 0; k < n->nsentinels; k++) {
        size_t i = (r->sentinel_first + k) % n->nsentinels;
        const char *sa = n->sentinels[i];
        char sh[256];
        int sp, rc;
        lapse_conn *c = NULL;
        redisReply *reply = NULL;
        one[0] = '\0';
        if (redis_split_addr(sa, sh, sizeof sh, &sp) < 0)
            snprintf(one, sizeof one, "not host:port");
        else if (!(c = redis_open(r, sh, sp, one, sizeof one)))
            refused |= r->refused;
        else if ((rc = redis_auth(c, n->sentinel_username, n->sentinel_password, one, sizeof one)))
            refused |= rc == -2;
        else if (!(reply = lapse_conn_command(c, "SENTINEL get-master-addr-by-name %s", n->master)))
            snprintf(one, sizeof one, "%s", lapse_conn_errstr(c));
        else if (reply->type == REDIS_REPLY_ERROR)
            snprintf(one, sizeof one, "%s", reply->str), refused |= redis_refusal(reply->str);
        else if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
                 reply->element[0]->type != REDIS_REPLY_STRING ||
                 reply->element[1]->type != REDIS_REPLY_STRING)
            snprintf(one, sizeof one, "does not monitor a master named %s", n->master);
        else if (snprintf(host, hsize, "%s", reply->element[0]->str) >= (int)hsize ||
                 (*port = atoi(reply->element[1]->str)) <= 0)
            snprintf(one, sizeof one, "unusable address");
        if (reply)
            freeReplyObject(reply);
        lapse_conn_free(c);
        if (!one[0]) {
            r->sentinel_first = i;
            return 0;
        }
        int w = snprintf(why + wl, sizeof why - wl, "%s%s: %s", wl ? "; " : "", sa, one);
        if (w > 0)
            wl = wl + (size_t)w < sizeof why ? wl + (size_t)w : sizeof why - 1;
    }
    redis_set_error(r, "redis %s: no sentinel named its primary (%s)", r->name, why);
    r->refused = refused;
    return -1;
}

/* 1 if the server is a primary, 0 if not, -1 with err on failure. Asks
 * HELLO 2 (its "role" field; RESP2 kept), not ROLE or INFO: those are
 * @dangerous, which the ACL lapse needs (-@dangerous) does not grant. */
int redis_is_primary(lapse_conn *c, char *err, size_t size)
{
    redisReply *reply = lapse_conn_command(c, "HELLO 2");
    if (!reply) {
        snprintf(err, size, "HELLO: %s", lapse_conn_errstr(c));
        return -1;
    }
    int rc = -1;
    if (reply->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i + 1 < reply->elements; i += 2)
            if (reply->element[i]->type == REDIS_REPLY_STRING &&
                strcmp(reply->element[i]->str, "role") == 0 &&
                reply->element[i + 1]->type == REDIS_REPLY_STRING)
                rc = strcmp(reply->element[i + 1]->str, "master") == 0;
    }
    if (rc < 0)
        snprintf(err, size, "HELLO: %.200s",
                 reply->type == REDIS_REPLY_ERROR ? reply->str : "no role in the reply");
    freeReplyObject(reply);
    return rc;
}
