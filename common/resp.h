/*
 * resp — a command in the Redis protocol (RESP: "*<argc>\r\n" then
 * "$<len>\r\n<bytes>\r\n" per argument), written where the caller says:
 * conn.c writes it straight into hiredis's output buffer, which
 * redisAppendCommandArgv fills through a formatted string per argument and
 * a copy (a few per cent of a producer's CPU). The same bytes as
 * redisFormatCommandArgv (tests/unit/test_resp.c). Pure: no I/O.
 */
#ifndef LAPSE_RESP_H
#define LAPSE_RESP_H

#include <stddef.h>

/* Bytes of the command. */
size_t lapse_resp_len(int argc, const size_t *argvlen);

/* Writes the command at o (lapse_resp_len bytes, no NUL); returns the end. */
char *lapse_resp_write(char *o, int argc, const char **argv, const size_t *argvlen);

#endif
