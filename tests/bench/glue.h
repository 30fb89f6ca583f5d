/*
 * glue — what the benchmark helpers (gen.c, scanner_feed.c, scanner_redis.c,
 * scanner_stats.c) each needed: strict number arguments, the wall clock,
 * qsort's comparison of int64s, and the start of main (--help, a block
 * buffer on stdout so a pipe gets whole writes). Header-only: each helper
 * is one program, and these are too small to be a library.
 */
#ifndef LAPSE_BENCH_GLUE_H
#define LAPSE_BENCH_GLUE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GLUE_UNUSED __attribute__((unused))

/* s as a whole decimal number within lo..hi: 0 and *out, or -1. */
static GLUE_UNUSED int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static GLUE_UNUSED int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static GLUE_UNUSED int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The start of every helper's main: 1 when it was asked for --help (usage
 * printed: return 0), else 0, with stdout buffered in 64 KiB blocks. */
static GLUE_UNUSED int glue_start(int argc, char **argv, void (*usage)(FILE *))
{
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 1;
    }
    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    return 0;
}

#endif
