/* config_text — see config_text.h. */
#include "config_text.h"

#include <stdlib.h>
#include <unistd.h>

#include "t.h"

char msg[256]; /* last error, temp path replaced by "FILE" */

/* Writes `text` to a temp file, loads it into cfg with an errstr of `size`
 * bytes and returns what lapse_config_load returned; the message lands in
 * `msg`. */
int load_text_n(struct lapse_config *cfg, const char *text, size_t size)
{
    char path[] = "/tmp/lapse-test-config-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    size_t len = strlen(text);
    REQUIRE(write(fd, text, len) == (ssize_t)len);
    close(fd);

    char err[256];
    memset(err, 'x', sizeof err);
    int rc = lapse_config_load(cfg, path, err, size);
    CHECK(size == 0 || memchr(err, '\0', size) != NULL); /* terminated within size */
    CHECK(size == sizeof err || err[size] == 'x');       /* nothing written past it */
    unlink(path);
    size_t plen = strlen(path);
    if (strncmp(err, path, plen) == 0)
        snprintf(msg, sizeof msg, "FILE%s", err + plen);
    else
        snprintf(msg, sizeof msg, "%s", err);
    return rc;
}

int load_text(struct lapse_config *cfg, const char *text)
{
    return load_text_n(cfg, text, 256);
}

int all_zero(const struct lapse_config *cfg)
{
    static const struct lapse_config zero;
    return memcmp(cfg, &zero, sizeof zero) == 0;
}

/* Loads `text`, expects failure with exactly `want`, and a zeroed cfg. */
void expect_err(const char *text, const char *want)
{
    struct lapse_config cfg;
    CHECK(load_text(&cfg, text) == -1);
    CHECK_STR(msg, want);
    CHECK(all_zero(&cfg));
    lapse_config_free(&cfg);
}
