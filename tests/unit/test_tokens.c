/*
 * test_tokens — the console's tokens file (tools/console/tokens.h): what a
 * file may hold, what it is refused for (with the line, never the token),
 * and matching.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"
#include "tokens.h"

static const char good[] = "# operators\n"
                           "\n"
                           "alice  0123456789abcdef-alice\r\n"
                           "  bob\tsecret-token-of-bob-0123   \n"
                           "ci.deploy_1 ci-token-xxxxxxxxxxxxxxxx";

TEST(tokens_parse_and_match)
{
    char err[256];
    lapse_tokens *t = lapse_tokens_parse("f", good, strlen(good), err, sizeof err);
    REQUIRE(t != NULL);
    CHECK(lapse_tokens_count(t) == 3);
    CHECK_STR(lapse_tokens_match(t, "0123456789abcdef-alice", 22), "alice");
    CHECK_STR(lapse_tokens_match(t, "secret-token-of-bob-0123", 24), "bob");
    CHECK_STR(lapse_tokens_match(t, "ci-token-xxxxxxxxxxxxxxxx", 25), "ci.deploy_1");
    CHECK(lapse_tokens_match(t, "0123456789abcdef-alic", 21) == NULL); /* a prefix */
    CHECK(lapse_tokens_match(t, "0123456789abcdef-alicex", 23) == NULL);
    CHECK(lapse_tokens_match(t, "", 0) == NULL);
    CHECK(lapse_tokens_match(NULL, "x", 1) == NULL);
    lapse_tokens_free(t);
    lapse_tokens_free(NULL);
}

TEST(tokens_refused_with_the_line)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"alice short\n", "f:1: a token has 16 to 256 bytes"},
        {"# c\nalice\n", "f:2: not \"NAME TOKEN\""},
        {"al:ice 0123456789abcdef0\n", "f:1: not \"NAME TOKEN\""},
        {"alice 0123456789abcdef0 more\n", "f:1: the token holds a space"},
        {"alice 0123456789abcdef\x01x\n", "f:1: the token holds a space"},
        {"# nothing\n\n", "f: holds no token"},
        {"", "f: holds no token"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        lapse_tokens *t =
            lapse_tokens_parse("f", bad[i].text, strlen(bad[i].text), err, sizeof err);
        CHECK(t == NULL);
        CHECK(strncmp(err, bad[i].want, strlen(bad[i].want)) == 0);
        CHECK(strstr(err, "0123456789abcdef") == NULL); /* never the token */
        lapse_tokens_free(t);
    }
    char err[256];
    char nul[] = "alice 0123456789abcdef0\0x\n";
    CHECK(lapse_tokens_parse("f", nul, sizeof nul - 1, err, sizeof err) == NULL);
}

TEST(tokens_load_refuses_an_open_file)
{
    char path[] = "/tmp/lapse-tokens-XXXXXX", err[256];
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "alice 0123456789abcdef-alice\n", 29) == 29);
    close(fd);
    lapse_tokens *t = lapse_tokens_load(path, err, sizeof err); /* mkstemp: 0600 */
    CHECK(t != NULL && lapse_tokens_count(t) == 1);
    lapse_tokens_free(t);
    chmod(path, 0644);
    CHECK(lapse_tokens_load(path, err, sizeof err) == NULL);
    CHECK(strstr(err, "others may read") != NULL);
    unlink(path);
    CHECK(lapse_tokens_load(path, err, sizeof err) == NULL);
    CHECK(strstr(err, "No such file") != NULL);
}
