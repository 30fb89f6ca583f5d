/*
 * test_claimed — the scanner's reading of claim.lua's `claimed` element
 * (scanner_claimed, scanner/dispatch.c): MessagePack of the groups
 * { deadline, { id, ... }, ... } then of the pairs { id, deadline, ... },
 * parsed in place. A reply that is cut short or whose counts lie is
 * refused (-1), never read past its end.
 */
#include "scanner_priv.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

/* a bulk string reply over buf[0..len) */
static redisReply str_reply(const char *buf, size_t len)
{
    redisReply r = {0};
    r.type = REDIS_REPLY_STRING;
    r.str = (char *)buf;
    r.len = len;
    return r;
}

/* groups ["100", ["a", "bb"]], then pairs ["c", "200"] */
static const char GOOD[] = "\x92\xa3"
                           "100"
                           "\x92\xa1"
                           "a"
                           "\xa2"
                           "bb"
                           "\x92\xa1"
                           "c"
                           "\xa3"
                           "200";

TEST(claimed_groups_and_pairs)
{
    redisReply r = str_reply(GOOD, sizeof GOOD - 1);
    CHECK(scanner_claimed(&r, NULL, NULL) == 3);
    struct flight fl[3];
    long long d[3];
    memset(fl, 0, sizeof fl);
    CHECK(scanner_claimed(&r, fl, d) == 3);
    CHECK(fl[0].id_len == 1 && memcmp(fl[0].id, "a", 1) == 0 && d[0] == 100);
    CHECK(fl[1].id_len == 2 && memcmp(fl[1].id, "bb", 2) == 0 && d[1] == 100);
    CHECK(fl[2].id_len == 1 && memcmp(fl[2].id, "c", 1) == 0 && d[2] == 200);
    redisReply empty = str_reply("", 0);
    CHECK(scanner_claimed(&empty, NULL, NULL) == 0);
}

/* a str 8 ID (32 bytes and more) and an array 16 header */
TEST(claimed_long_forms)
{
    char buf[128];
    size_t n = 0;
    buf[n++] = (char)0x90; /* no groups */
    buf[n++] = (char)0xdc, buf[n++] = 0, buf[n++] = 2;
    buf[n++] = (char)0xd9, buf[n++] = 40;
    memset(buf + n, 'x', 40);
    n += 40;
    buf[n++] = (char)0xa2, buf[n++] = '-', buf[n++] = '7';
    redisReply r = str_reply(buf, n);
    struct flight fl[1];
    long long d[1];
    memset(fl, 0, sizeof fl);
    CHECK(scanner_claimed(&r, fl, d) == 1);
    CHECK(fl[0].id_len == 40 && d[0] == -7);
}

/* every cut of a good reply is refused, and none is read past its end
 * (each cut is copied to a buffer of its own size: ASan sees an overread) */
TEST(claimed_cut_short)
{
    for (size_t len = 1; len < sizeof GOOD - 1; len++) {
        char *cut = malloc(len);
        CHECK(cut != NULL);
        if (!cut)
            return;
        memcpy(cut, GOOD, len);
        redisReply r = str_reply(cut, len);
        CHECK(scanner_claimed(&r, NULL, NULL) == -1);
        free(cut);
    }
}

/* counts that promise more than there is, odd pair counts, stray bytes */
TEST(claimed_lying_counts)
{
    static const struct {
        const char *buf;
        size_t len;
    } bad[] = {
        {"\xdd\xff\xff\xff\xff\x90", 6},     /* 4 G groups */
        {"\x90\xdc\xff\xff", 4},             /* 65535 pairs in 0 bytes */
        {"\x90\x91\xa1x", 4},                /* one element: not a pair */
        {"\x91\xa1x\x90", 4},                /* a group without its IDs */
        {"\x90\x92\xdb\xff\xff\xff\xff", 7}, /* a 4 GB string */
        {"\x90\x90\x00", 3},                 /* a stray byte after the pairs */
        {"\x90\x92\x01\x02", 4},             /* integers, not strings */
        {"x", 1},                            /* not MessagePack */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        redisReply r = str_reply(bad[i].buf, bad[i].len);
        CHECK(scanner_claimed(&r, NULL, NULL) == -1);
    }
}
