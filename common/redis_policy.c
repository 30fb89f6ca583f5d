/*
 * redis_policy — lapse never runs silently on a Redis that evicts.
 *
 * Under any maxmemory-policy but noeviction, a Redis at its maxmemory
 * deletes keys to make room: lapse's sorted sets (acknowledged deadlines
 * that then never fire), its layout record, and under volatile-* the lock
 * and lease keys (they have a TTL), which are what keeps two scanners off
 * one shard. Nothing tells anyone; the deadline is simply gone. Under
 * noeviction a full Redis refuses writes instead (OOM), which the producer
 * reports and retries, and firing frees memory.
 *
 * So every connection the redis module opens to a primary (redis_single.c's plain
 * and Sentinel nodes, at each reconnect and after each failover;
 * redis_cluster.c's every primary) is checked here right after AUTH and
 * SELECT, before it is used:
 *  - noeviction: nothing to say.
 *  - evicting, at the handle's first connect: refused (r->refused, as for a
 *    wrong password), with one line naming the node, the policy and the fix,
 *    unless redis.accept_eviction = true: then a warning, repeated hourly.
 *  - evicting, found at a reconnect (someone changed the policy, or the
 *    failover went to a server configured otherwise): the connection is
 *    kept and an error is repeated hourly. A running scanner that stopped
 *    would fire nothing at all from its shard, which loses more than the
 *    eviction risks; the operator is told loudly instead (and `lapse-scale
 *    check` fails, and the scanner's lapse_redis_evicting gauge alerts).
 *  - unreadable (the ACL denies INFO and CONFIG, as lapse's recommended
 *    `-@dangerous` does): said once per process, unless
 *    redis.policy_checked names the policy the operator saw, which is then
 *    taken as read.
 * Whether maxmemory is 0 does not matter: it can be set at runtime, and a
 * managed service sets it itself.
 *
 * What to say is kept in the handle's struct redis_policy (r->policy, seen
 * by no other file) for the program to log (lapse_redis_policy_news): this
 * module never prints. Invariant: msg and who are what to say while state
 * is not REDIS_POLICY_OK.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redis_priv.h"

#define REPEAT_MS (3600 * 1000) /* how often a standing warning is said again */

enum redis_policy_state {
    REDIS_POLICY_OK = 0,   /* noeviction (or not checked yet): nothing to say */
    REDIS_POLICY_UNREAD,   /* the ACL denies reading it: said once */
    REDIS_POLICY_ACCEPTED, /* evicting, with redis.accept_eviction: warned hourly */
    REDIS_POLICY_EVICTING, /* evicting, found at a reconnect: an error hourly */
};

struct redis_policy {
    int accept_eviction; /* redis.accept_eviction */
    const char *checked; /* redis.policy_checked (the config's), or NULL */
    int state;           /* enum redis_policy_state: what to say */
    int64_t next_ms;     /* monotonic: when to say msg again */
    char msg[512];       /* what lapse_redis_policy_news returns */
    char who[300];       /* the server msg is about (a cluster handle has several primaries) */
};

struct redis_policy *redis_policy_new(const struct lapse_config *cfg)
{
    struct redis_policy *p = calloc(1, sizeof *p);
    if (p) {
        p->accept_eviction = cfg->redis_accept_eviction;
        p->checked = cfg->redis_policy_checked;
    }
    return p;
}

void redis_policy_free(struct redis_policy *p)
{
    free(p);
}

int lapse_redis_policy_evicts(const char *policy)
{
    return policy && policy[0] && strcmp(policy, "noeviction") != 0;
}

/* The value of "name:" in INFO text, as a long long, or -1. */
static long long info_number(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ':')
            return strtoll(p + n + 1, NULL, 10);
    return -1;
}

int lapse_redis_memory_parse(const char *text, struct lapse_redis_memory *m)
{
    memset(m, 0, sizeof *m);
    m->used = info_number(text, "used_memory");
    m->max = info_number(text, "maxmemory");
    m->replicas = info_number(text, "connected_slaves"); /* (-1: not in this INFO) */
    const char *p = strstr(text, "maxmemory_policy:");
    if (!p || (p != text && p[-1] != '\n')) {
        snprintf(m->why, sizeof m->why, "INFO memory has no maxmemory_policy");
        return -1;
    }
    p += strlen("maxmemory_policy:");
    size_t len = strcspn(p, "\r\n");
    if (len == 0 || len >= sizeof m->policy) {
        snprintf(m->why, sizeof m->why, "INFO memory: maxmemory_policy unreadable");
        return -1;
    }
    memcpy(m->policy, p, len);
    m->policy[len] = '\0';
    return 0;
}

/* A CONFIG GET reply's value ([name, value]), or NULL. */
static const char *config_value(const redisReply *reply)
{
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[1]->type == REDIS_REPLY_STRING)
        return reply->element[1]->str;
    return NULL;
}

/* The replies of INFO memory and (only when it was refused) CONFIG GET
 * maxmemory-policy and maxmemory, into m; neither is freed. */
static void memory_from(const redisReply *info, const redisReply *policy, const redisReply *max,
                        struct lapse_redis_memory *m)
{
    if (info->type == REDIS_REPLY_STRING) {
        lapse_redis_memory_parse(info->str, m);
        return;
    }
    memset(m, 0, sizeof *m);
    m->used = m->max = m->replicas = -1;
    const char *v = config_value(policy);
    if (v && strlen(v) < sizeof m->policy) {
        snprintf(m->policy, sizeof m->policy, "%s", v);
        if ((v = config_value(max)))
            m->max = strtoll(v, NULL, 10);
        return;
    }
    const redisReply *e = policy && policy->type == REDIS_REPLY_ERROR ? policy : info;
    if (e->type == REDIS_REPLY_ERROR && strncmp(e->str, "NOPERM", 6) == 0)
        snprintf(m->why, sizeof m->why, "INFO and CONFIG denied");
    else
        snprintf(m->why, sizeof m->why, "%s: %.100s", e == info ? "INFO" : "CONFIG GET",
                 e->type == REDIS_REPLY_ERROR ? e->str : "unexpected reply");
}

/* INFO memory on a fresh connection, CONFIG GET where INFO is refused. 0
 * (m filled; m->policy "" with m->why when neither is allowed), or -1 with
 * err on a connection failure. */
static int memory_on(lapse_conn *c, struct lapse_redis_memory *m, char *err, size_t size)
{
    redisReply *info = lapse_conn_command(c, "INFO memory"), *policy = NULL, *max = NULL;
    if (info && info->type == REDIS_REPLY_ERROR) {
        policy = lapse_conn_command(c, "CONFIG GET maxmemory-policy");
        max = policy ? lapse_conn_command(c, "CONFIG GET maxmemory") : NULL;
    }
    int rc = -1;
    if (!info || (info->type == REDIS_REPLY_ERROR && (!policy || !max)))
        snprintf(err, size, "INFO memory: %s", lapse_conn_errstr(c));
    else
        memory_from(info, policy, max, m), rc = 0;
    freeReplyObject(info);
    freeReplyObject(policy);
    freeReplyObject(max);
    return rc;
}

int lapse_redis_memory(lapse_redis *r, uint16_t slot, struct lapse_redis_memory *m)
{
    /* (INFO takes several sections since Redis 7.0) */
    const char *iv[] = {"INFO", "memory", "replication"};
    const char *pv[] = {"CONFIG", "GET", "maxmemory-policy"};
    const char *mv[] = {"CONFIG", "GET", "maxmemory"};
    size_t il[] = {4, 6, 11}, pl[] = {6, 3, 16}, ml[] = {6, 3, 9};
    redisReply *info = lapse_redis_command_slot(r, slot, 3, iv, il), *policy = NULL, *max = NULL;
    if (info && info->type == REDIS_REPLY_ERROR &&
        (policy = lapse_redis_command_slot(r, slot, 3, pv, pl)))
        max = lapse_redis_command_slot(r, slot, 3, mv, ml);
    int rc = -1;
    if (info && (info->type != REDIS_REPLY_ERROR || (policy && max)))
        memory_from(info, policy, max, m), rc = 0;
    freeReplyObject(info);
    freeReplyObject(policy);
    freeReplyObject(max);
    return rc;
}

/* Keeps msg, about server `who`, for lapse_redis_policy_news, to be said
 * now. A handle keeps one message: on a cluster handle a primary's news
 * does not hide a graver one of another primary. */
static void policy_say(lapse_redis *r, int state, const char *who, const char *msg)
{
    struct redis_policy *p = r->policy;
    if (!r->be->servers && state < p->state && strcmp(who, p->who) != 0)
        return;
    p->state = state;
    p->next_ms = 0;
    snprintf(p->msg, sizeof p->msg, "%s", msg);
    snprintf(p->who, sizeof p->who, "%s", who);
}

int redis_policy_check(lapse_redis *r, lapse_conn *c, const char *who, char *err, size_t size)
{
    struct redis_policy *p = r->policy;
    struct lapse_redis_memory m;
    if (memory_on(c, &m, err, size) < 0)
        return -1;
    char msg[sizeof p->msg];
    if (!m.policy[0] && p->checked) {
        snprintf(m.policy, sizeof m.policy, "%s", p->checked);
    } else if (!m.policy[0]) {
        /* once per process: several handles to one server say the same */
        static atomic_int said;
        if (!atomic_exchange(&said, 1)) {
            snprintf(msg, sizeof msg,
                     "redis %s: cannot check maxmemory-policy: %s; make sure it is noeviction "
                     "and set redis.policy_checked = \"noeviction\"",
                     who, m.why);
            policy_say(r, REDIS_POLICY_UNREAD, who, msg);
        }
        return 0;
    }
    if (!lapse_redis_policy_evicts(m.policy)) {
        /* (a cluster handle's other primaries keep what they said) */
        if (p->state != REDIS_POLICY_UNREAD && (r->be->servers || strcmp(who, p->who) == 0))
            p->state = REDIS_POLICY_OK;
        return 0;
    }
    const char *fix = "CONFIG SET maxmemory-policy noeviction (on a managed service: its "
                      "maxmemory-policy parameter)";
    if (p->accept_eviction) {
        snprintf(msg, sizeof msg,
                 "redis %s: maxmemory-policy is %s: Redis may evict lapse's keys and lose "
                 "deadlines (redis.accept_eviction = true); fix: %s",
                 who, m.policy, fix);
        if (p->state != REDIS_POLICY_ACCEPTED)
            policy_say(r, REDIS_POLICY_ACCEPTED, who, msg);
        return 0;
    }
    if (!r->connected_once) {
        snprintf(err, size,
                 "maxmemory-policy is %s, which evicts keys and loses deadlines: %s, or set "
                 "redis.accept_eviction = true to run anyway",
                 m.policy, fix);
        return -2;
    }
    snprintf(msg, sizeof msg,
             "redis %s: maxmemory-policy is now %s: Redis may evict lapse's keys and lose "
             "deadlines; serving on (stopping would fire nothing); fix: %s",
             who, m.policy, fix);
    policy_say(r, REDIS_POLICY_EVICTING, who, msg);
    return 0;
}

const char *lapse_redis_policy_news(lapse_redis *r, int *error)
{
    struct redis_policy *p = r->policy;
    if (p->state <= REDIS_POLICY_OK)
        return NULL;
    int64_t now = lapse_clock_mono_ms();
    if (now < p->next_ms)
        return NULL;
    *error = p->state == REDIS_POLICY_EVICTING;
    if (p->state == REDIS_POLICY_UNREAD)
        p->state = REDIS_POLICY_OK; /* said once */
    else
        p->next_ms = now + REPEAT_MS;
    return p->msg;
}
