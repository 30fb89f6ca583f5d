/*
 * cluster — a Redis Cluster's slot map and redirections, as a client that
 * routes by slot reads them. Pure: it parses replies (CLUSTER SLOTS) and
 * error strings (MOVED, ASK); connecting and retrying are the caller's.
 *
 * A shard's keys share the hash tag {NS:I} (layout.h: lapse_key_tagged), so
 * they all live in one slot, the shard's, and every script that takes them
 * runs on the one primary that owns that slot. The map says which primary
 * that is; it changes when the cluster reshards or fails over, which a
 * command learns from a MOVED reply (the slot has a new owner for good:
 * read the map again) or an ASK reply (the slot is being migrated and this
 * key is already on the target). lapse follows neither by hand: its scripts
 * name keys of both sides of a migration, so it reads the map again and
 * retries (common/redis_cluster.c says why).
 *
 * Invariant of a parsed map: every owner[] entry is UNOWNED or an index
 * below nprimaries, and primaries[] are distinct "host:port" strings.
 */
#ifndef LAPSE_CLUSTER_H
#define LAPSE_CLUSTER_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "slot.h"

#define LAPSE_CLUSTER_PRIMARIES_MAX 256 /* primaries a map holds at most */
#define LAPSE_CLUSTER_ADDR_MAX 300      /* "host:port" with its NUL */
#define LAPSE_CLUSTER_UNOWNED 0xffff    /* owner[] of a slot no primary serves */

struct lapse_cluster_map {
    uint16_t owner[LAPSE_SLOTS];               /* slot -> index into primaries, or UNOWNED */
    char (*primaries)[LAPSE_CLUSTER_ADDR_MAX]; /* "host:port" of each primary */
    size_t nprimaries;
    size_t uncovered; /* slots no primary serves (cluster not ok) */
};

/*
 * Reads a CLUSTER SLOTS reply into `m` (which it resets; free it with
 * lapse_cluster_map_free). An empty host in the reply (a node that does not
 * know its own address) is taken as `seed_host`, the host the reply came
 * from, as Redis's own clients do. Returns 0, or -1 with the reason in
 * errstr (an error reply, a malformed one, too many primaries); `m` is then
 * left empty.
 */
int lapse_cluster_map_parse(struct lapse_cluster_map *m, const redisReply *reply,
                            const char *seed_host, char *errstr, size_t size);

void lapse_cluster_map_free(struct lapse_cluster_map *m); /* accepts a zeroed map */

/* The "host:port" of the primary that owns `slot`, or NULL if none does. */
const char *lapse_cluster_owner(const struct lapse_cluster_map *m, uint16_t slot);

enum lapse_redirect {
    LAPSE_REDIRECT_NONE = 0, /* not a redirection */
    LAPSE_REDIRECT_MOVED,    /* the slot has a new owner: update the map */
    LAPSE_REDIRECT_ASK,      /* migrating: the key is at addr for now (lapse retries) */
    LAPSE_REDIRECT_RETRY,    /* TRYAGAIN, CLUSTERDOWN: back off and retry */
};

/*
 * Classifies an error reply's text. For MOVED and ASK, sets *slot and the
 * target "host:port" in addr (at most size - 1 bytes; a target given as
 * ":port", with no host, is that port on `seed_host`).
 */
enum lapse_redirect lapse_cluster_redirect(const char *err, const char *seed_host, uint16_t *slot,
                                           char *addr, size_t size);

#endif
