/*
 * scanner — serves one shard: claims due IDs, sends their events, forgets
 * them once Kafka acknowledged.
 *
 * The loop (beanstalkd's shape: tick -> wait(timeout) -> callbacks):
 *   1. serve Kafka delivery reports; acknowledged IDs are queued for removal
 *   2. remove acknowledged IDs (ack.lua: compare-and-delete, a reset wins)
 *   3. claim due IDs (claim.lua), up to scanner.batch and while fewer than
 *      scanner.max_inflight events are unanswered, and send one event each
 *   4. wait for delivery reports until the next deadline, at most
 *      scanner.poll_ms (0 when the claim was full: more are due); with
 *      nothing in flight and nothing due within poll_ms, nap instead until
 *      the next deadline or a write that lands earlier (wake.c)
 *
 * At-least-once: an ID stays in Redis, leased, until its event is
 * acknowledged; if the scanner dies or Kafka gives up, the lease runs out and
 * the ID is claimed again (see common/lua/claim.lua). Never early: "due" is
 * judged by the Redis server's clock inside claim.lua.
 */
#ifndef LAPSE_SCANNER_H
#define LAPSE_SCANNER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct lapse_scanner lapse_scanner;

/* Exit codes of lapse_scanner_serve, also the program's exit status. */
enum {
    LAPSE_SCANNER_OK = 0,       /* stopped on request, or its shard retired by a merge */
    LAPSE_SCANNER_FAIL = 1,     /* could not start */
    LAPSE_SCANNER_FATAL = 3,    /* Kafka fatal error: restarting will not help */
    LAPSE_SCANNER_REFUSED = 78, /* Redis refused us (EX_CONFIG): nor will it */
};

/* Prepares to serve `shard` (nothing connects yet). `cfg` must outlive it.
 * NULL with errstr on bad settings. */
lapse_scanner *lapse_scanner_new(const struct lapse_config *cfg, uint32_t shard, char *errstr,
                                 size_t size);
void lapse_scanner_free(lapse_scanner *s); /* accepts NULL */

/* Runs until *stop becomes non-zero, then stops claiming, waits (bounded)
 * for in-flight events, removes the acknowledged ones and returns. */
int lapse_scanner_serve(lapse_scanner *s, volatile sig_atomic_t *stop);

#endif
