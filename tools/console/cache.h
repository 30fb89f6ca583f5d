/*
 * cache — the snapshot every open console page polls, read from Redis by
 * one thread of its own: any number of pages cost Redis one reader.
 *
 * The snapshot has views (the namespace's status, the due-time histogram,
 * the first page of the offline list), each the JSON of the lapse-scale
 * command that shows it (tools/scale: lapse_scale_status_json, ...). A
 * view is read again at most once per refresh_ms, and only while some page
 * asked for it within idle_ms: with no page open the console costs Redis
 * nothing. Pages never wait for Redis, except for a view's very first
 * read (up to the wait they pass).
 *
 * Threads: lapse_cache_get may be called from any thread; the reader owns
 * its Redis connections (given at start) alone.
 */
#ifndef LAPSE_CONSOLE_CACHE_H
#define LAPSE_CONSOLE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "redis.h"

enum lapse_cache_view {
    LAPSE_CACHE_STATUS,  /* lapse-scale status --json */
    LAPSE_CACHE_DUE,     /* lapse-scale status --due --json */
    LAPSE_CACHE_OFFLINE, /* the first page of offline (lapse_scale_offline_page_json) */
    LAPSE_CACHE_VIEWS
};

/* How many IDs the offline view's page lists at most (about). */
#define LAPSE_CACHE_OFFLINE_PAGE 100

typedef struct lapse_cache lapse_cache;

/* Starts the reader on `nodes` (connections to cfg->nodes, index for index,
 * which it owns from now on and frees at stop). cfg must outlive it.
 * NULL with errstr when the thread cannot start (nodes are then the
 * caller's still). */
lapse_cache *lapse_cache_start(const struct lapse_config *cfg, lapse_redis **nodes, char *errstr,
                               size_t size);

/* A copy of view v's JSON (malloc'd into *json, *len bytes; the caller
 * frees it) and the HTTP status it goes with (200, or 503 with
 * {"error": ...} when the last read failed), and marks the view asked
 * for. The view has "read_ms", when it was read (unix ms). When it was
 * never read, waits up to wait_ms for its first read. Returns 0, or -1
 * when there is nothing to give yet (or out of memory). */
int lapse_cache_get(lapse_cache *c, enum lapse_cache_view v, int wait_ms, char **json, size_t *len,
                    int *http_status);

/* Reads of Redis the reader made so far, all views together: what the
 * pages cost Redis (GET /api/console shows it). */
uint64_t lapse_cache_reads(lapse_cache *c);

/* Stops the reader, frees its connections; accepts NULL. */
void lapse_cache_stop(lapse_cache *c);

#endif
