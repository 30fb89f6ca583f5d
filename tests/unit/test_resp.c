/*
 * test_resp — a command written by resp.c is byte for byte what hiredis's
 * redisFormatCommandArgv writes, for every shape of argument.
 */
#include "resp.h"
#include "t.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

static int same_as_hiredis(int argc, const char **argv, const size_t *argvlen)
{
    char *want = NULL;
    int wlen = redisFormatCommandArgv(&want, argc, argv, argvlen);
    size_t len = lapse_resp_len(argc, argvlen);
    char *got = malloc(len + 1);
    int same = got && wlen >= 0 && (size_t)wlen == len &&
               lapse_resp_write(got, argc, argv, argvlen) == got + len &&
               memcmp(got, want, len) == 0;
    free(got);
    free(want);
    return same;
}

TEST(resp_as_hiredis)
{
    const char *a[] = {"EVALSHA", "0123456789abcdef0123456789abcdef01234567", "7", "", "a\0b\r\n"};
    size_t l[] = {7, 40, 1, 0, 5};
    CHECK(same_as_hiredis(5, a, l));
    CHECK(same_as_hiredis(1, a, l));
    CHECK(same_as_hiredis(0, a, l));
    /* lengths and counts of every digit count up to 5 */
    static char big[123456];
    memset(big, 'x', sizeof big);
    const char *v[12];
    size_t vl[12];
    size_t lens[] = {9, 10, 99, 100, 999, 1000, 9999, 10000, 99999, 100000, 123456, 1};
    for (int i = 0; i < 12; i++)
        v[i] = big, vl[i] = lens[i];
    CHECK(same_as_hiredis(12, v, vl));
    const char **many = malloc(1000 * sizeof *many);
    size_t *ml = malloc(1000 * sizeof *ml);
    REQUIRE(many && ml);
    for (int i = 0; i < 1000; i++)
        many[i] = big, ml[i] = (size_t)(i % 17);
    CHECK(same_as_hiredis(10, many, ml));
    CHECK(same_as_hiredis(100, many, ml));
    CHECK(same_as_hiredis(1000, many, ml));
    free(many);
    free(ml);
}
