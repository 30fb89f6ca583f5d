/*
 * test_redis_cmd — common/redis_cmd.c: a command's name and key read off a
 * hiredis format without formatting it must be what hiredis's own
 * formatting of the same call says (its RESP read back here, in the test
 * only), and argv's key the one a cluster routes by.
 */
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "redis_priv.h"
#include "t.h"

enum { MAX_WORDS = 16 };

/* hiredis's words of the call: the count, -2 for a format it refuses. */
static int hiredis_words(const char **argv, size_t *argvlen, char **cmd, const char *fmt,
                         va_list ap)
{
    int len = redisvFormatCommand(cmd, fmt, ap);
    if (len < 0)
        return len;
    const char *p = *cmd + 1;
    int n = (int)strtol(p, (char **)&p, 10);
    p += 2;
    for (int i = 0; i < n && i < MAX_WORDS; i++) {
        argvlen[i] = (size_t)strtoul(p + 1, (char **)&p, 10);
        argv[i] = p + 2;
        p += 2 + argvlen[i] + 2;
    }
    return n;
}

/* Whether redis_cmd_format reads the call as hiredis formats it. */
static int same_as_hiredis(const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    struct redis_cmd cmd;
    int rc = redis_cmd_format(&cmd, fmt, &aq, -1);
    const char *argv[MAX_WORDS];
    size_t argvlen[MAX_WORDS];
    char *resp = NULL;
    int n = hiredis_words(argv, argvlen, &resp, fmt, ap);
    int same;
    if (n < 0) {
        same = rc == n;
    } else {
        int key = n > 0 ? redis_cmd_key_arg(n, argv, argvlen) : -1;
        same =
            rc == 0 && cmd.argc == n &&
            (n == 0 || (cmd.namelen == argvlen[0] && memcmp(cmd.name, argv[0], argvlen[0]) == 0));
        if (key < 0)
            same = same && !cmd.key;
        else
            same = same && cmd.key && cmd.keylen == argvlen[key] &&
                   memcmp(cmd.key, argv[key], argvlen[key]) == 0;
        /* (the name and key are the caller's words: they end in a NUL) */
        same = same && (!cmd.key || cmd.key[cmd.keylen] == '\0');
    }
    if (resp)
        redisFreeCommand(resp);
    redis_cmd_done(&cmd);
    va_end(aq);
    va_end(ap);
    return same;
}

TEST(cmd_format_keys_as_hiredis_words)
{
    CHECK(same_as_hiredis("GET %s", "ns:k"));
    CHECK(same_as_hiredis("get %s", "ns:k"));
    CHECK(same_as_hiredis("HMGET %s shards prev_shards epoch state nodes keys", "ns:layout"));
    CHECK(same_as_hiredis("ZSCAN %s %s COUNT %d", "ns:{3}z", "0", 100));
    CHECK(same_as_hiredis("  DEL   %s  ", "k"));                 /* (spaces around and between) */
    CHECK(same_as_hiredis("GET pre:%s:%d:%u:suf", "x", -5, 7u)); /* a word of several parts */
    CHECK(same_as_hiredis("GET %s", ""));                        /* an empty key is a word */
    CHECK(same_as_hiredis("SET %b %b", "a\0b", (size_t)3, "v", (size_t)1));
    CHECK(same_as_hiredis("SET %lld%%x %hhd %5.2f %ld %lu %hu %x %#o %+d %-3d|", 7LL, 3, 1.5, -9L,
                          9UL, 4, 255u, 8u, 2, 1));
    CHECK(same_as_hiredis("SET %0000000000000000d x", 5)); /* too long: not printed */
}

TEST(cmd_format_eval_routes_by_its_first_key)
{
    CHECK(same_as_hiredis("EVAL %s 1 %s %u %s %s", "return 1", "ns:{1}a", 3u, "b", "c"));
    CHECK(same_as_hiredis("EVAL %s 6 %s %s %s %s %s %s", "s", "k1", "k2", "k3", "k4", "k5", "k6"));
    CHECK(same_as_hiredis("EVAL %s 3 %s %s %s %d", "s", "k1", "k2", "k3", 42));
    CHECK(same_as_hiredis("EVAL %s 2 %s %s %lld", "s", "k1", "k2", 1234567890123LL));
    CHECK(same_as_hiredis("EVALSHA %s %d %s", "0123", 2, "{t}k"));
    CHECK(same_as_hiredis("eval %s 0 %s", "s", "not-a-key")); /* no keys: keyless */
    CHECK(same_as_hiredis("EVAL %s 1", "s"));                 /* a key promised, none given */
}

TEST(cmd_format_keyless_and_malformed)
{
    CHECK(same_as_hiredis("PING"));
    CHECK(same_as_hiredis("INFO replication"));
    CHECK(same_as_hiredis("WAIT 1000 1100"));
    CHECK(same_as_hiredis("CLUSTER SLOTS"));
    CHECK(same_as_hiredis("%s", ""));
    CHECK(same_as_hiredis(""));
    CHECK(same_as_hiredis("GET %q", "k"));
    CHECK(same_as_hiredis("GET %hhz", 1));
    CHECK(same_as_hiredis("GET %llz", 1LL));
}

TEST(cmd_argv_key)
{
    const char *get[] = {"GET", "k"}, *ping[] = {"PING"}, *time_[] = {"TIME", "x"};
    size_t getl[] = {3, 1}, pingl[] = {4}, timel[] = {4, 1};
    CHECK(redis_cmd_key_arg(2, get, getl) == 1);
    CHECK(redis_cmd_key_arg(1, ping, pingl) == -1);
    CHECK(redis_cmd_key_arg(2, time_, timel) == -1);
    /* EVALSHA's nkeys need not end in a NUL */
    const char *ev[] = {"EVALSHA", "sha", "1x", "key"};
    size_t evl[] = {7, 3, 1, 3};
    CHECK(redis_cmd_key_arg(4, ev, evl) == 3);
    const char *ev0[] = {"EVALSHA", "sha", "0", "arg"};
    size_t ev0l[] = {7, 3, 1, 3};
    CHECK(redis_cmd_key_arg(4, ev0, ev0l) == -1);
    struct redis_cmd cmd;
    redis_cmd_argv(&cmd, 2, get, getl, 1, -1);
    CHECK(cmd.key == get[1] && cmd.keylen == 1 && cmd.slot == -1 && !cmd.fmt);
    redis_cmd_argv(&cmd, 2, get, getl, -1, 77);
    CHECK(!cmd.key && cmd.slot == 77);
}
