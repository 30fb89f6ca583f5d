/*
 * console — lapse-console's HTTP server: the pages (assets.h) at "/", and
 * the JSON under "/api/" with the names lapse-scale's --json uses
 * (docs/protocol.md, "The web console"):
 *
 *   GET  /api/status              status --json (the shared snapshot, cache.h)
 *   GET  /api/due                 status --due --json (the snapshot)
 *   GET  /api/offline             offline --json's names, a page at a time:
 *        [?cursor=C&prefix=P&limit=N]   the first page is the snapshot's
 *   GET  /api/get?id=ID           get --json
 *   GET  /api/console             the console's own settings (no secret)
 *   POST /api/cancel              {"id": ID}: cancel it
 *   POST /api/deadline            {"id": ID, "in_ms": N | "at_ms": T}: set it
 *
 * Writes: refused with 405 unless console.writes is on; then with 403
 * unless the request is same-origin (no "Sec-Fetch-Site: cross-site", an
 * Origin, when sent, naming the Host) and carries "Authorization: Bearer
 * TOKEN" of a line of console.tokens_file; each one is applied through the
 * producer library (applied in Redis before the answer) and logged with
 * the token's name. Every answer carries a Content-Security-Policy
 * (default-src 'self': no inline script), X-Content-Type-Options: nosniff,
 * Referrer-Policy: no-referrer, X-Frame-Options: DENY. Nothing from the
 * config but the namespace and the console's own settings is ever sent:
 * no password, token or key.
 *
 * Threads: MHD gives each connection a thread; the requests that read
 * Redis themselves (one ID, an offline page past the first) and the writes
 * take one lock around the console's own connections, and never wait for
 * the snapshot's reader.
 */
#ifndef LAPSE_CONSOLE_H
#define LAPSE_CONSOLE_H

#include <stddef.h>

#include "config.h"
#include "producer.h"
#include "redis.h"
#include "tokens.h"

typedef struct lapse_console lapse_console;

/* What the console serves from. The config outlives the console; the
 * rest it takes, whether it starts or not. */
struct lapse_console_deps {
    const struct lapse_config *cfg; /* the loaded config (console.*) */
    lapse_redis **read_nodes;       /* the snapshot reader's connections (cfg->nnodes) */
    lapse_redis **req_nodes;        /* the requests' own connections (cfg->nnodes) */
    lapse_tokens *tokens;           /* console.tokens_file; NULL with writes off */
};

/* Starts serving on console.bind:console.port; with console.writes it
 * first opens a producer (lapse_producer_new: waits for Redis up to
 * redis.retry_timeout_ms). Returns the console, or NULL with errstr. */
lapse_console *lapse_console_start(const struct lapse_console_deps *d, char *errstr, size_t size);

/* Stops serving and frees what it took; accepts NULL. */
void lapse_console_stop(lapse_console *c);

#endif
