/* config_text — see config_text.h. */
#include "config_text.h"

#include <stdlib.h>
#include <unistd.h>

#include "t.h"

char msg[400]; /* last error, temp path replaced by "FILE" */

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

    char err[1024];
    memset(err, 'x', sizeof err);
    int rc = lapse_config_load(cfg, path, err, size);
    CHECK(size == 0 || memchr(err, '\0', size) != NULL); /* terminated within size */
    CHECK(size == sizeof err || err[size] == 'x');       /* nothing written past it */
    unlink(path);
    /* the path at the start of each line (a problem each) */
    size_t plen = strlen(path), at = 0;
    const char *e = err;
    if (memchr(err, '\0', sizeof err) == NULL)
        err[sizeof err - 1] = '\0'; /* (size 0: never written) */
    while (*e && at + 1 < sizeof msg) {
        int head = strncmp(e, path, plen) == 0;
        const char *from = head ? e + plen : e, *nl = strchr(from, '\n');
        size_t n = nl ? (size_t)(nl + 1 - from) : strlen(from);
        int w = snprintf(msg + at, sizeof msg - at, "%s%.*s", head ? "FILE" : "", (int)n, from);
        at += w > 0 && (size_t)w < sizeof msg - at ? (size_t)w : sizeof msg - at - 1;
        e = from + n;
    }
    msg[at] = '\0';
    return rc;
}

int load_text(struct lapse_config *cfg, const char *text)
{
    return load_text_n(cfg, text, 1024);
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
