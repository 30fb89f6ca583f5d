/*
 * decimal — integers written as decimal digits, for the hot paths that
 * format one or more numbers per operation (the producer's arguments, the
 * Redis protocol's lengths, events' JSON): snprintf's format parsing was a
 * few per cent of the Kafka ingress's CPU. Pure: no I/O, no allocation.
 */
#ifndef LAPSE_DECIMAL_H
#define LAPSE_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

#define LAPSE_DECIMAL_MAX 21 /* bytes of the longest: "-9223372036854775808" and a NUL */

/* Writes v at o (no NUL) as "%lld" would; returns the end. */
char *lapse_decimal(char *o, int64_t v);

/* Writes v at o (no NUL) as "%zu" would; returns the end. */
char *lapse_decimal_u(char *o, uint64_t v);

/* Digits of v as lapse_decimal_u writes it. */
size_t lapse_decimal_len(uint64_t v);

#endif
