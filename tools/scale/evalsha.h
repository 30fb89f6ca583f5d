/*
 * evalsha — lapse-scale's own read-only scripts (health, due, offline of
 * common/lua) called by their SHA1 (EVALSHA), as the programs call theirs
 * (common/script.h), but without loading them first: these are run now and
 * then, on any node, by commands that must not write (SCRIPT LOAD on a
 * Cluster would have to reach every primary).
 *
 * Why: each is ~34 KB with the bucket library pasted in, and an EVAL sends
 * and hashes it whole at every call: the 256 shards of one lapse-console
 * refresh cost Redis ~40 ms that way. A server that does not know the
 * script answers NOSCRIPT; the caller sends that one call again as EVAL,
 * which also leaves the script in the server's cache for the next.
 */
#ifndef LAPSE_SCALE_EVALSHA_H
#define LAPSE_SCALE_EVALSHA_H

#include <hiredis/hiredis.h>

/* The hex SHA1 of script src (one of the embedded lapse_lua_* strings),
 * computed once per script; safe from any thread. */
const char *lapse_scale_script_sha(const char *src);

/* 1 when rep is Redis's NOSCRIPT error (send the call again as EVAL). */
int lapse_scale_noscript(const redisReply *rep);

#endif
