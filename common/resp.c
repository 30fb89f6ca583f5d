/* resp — see resp.h. */
#include "resp.h"

#include <stdint.h>
#include <string.h>

#include "decimal.h"

size_t lapse_resp_len(int argc, const size_t *argvlen)
{
    size_t len = 1 + lapse_decimal_len((uint64_t)argc) + 2;
    for (int i = 0; i < argc; i++)
        len += 1 + lapse_decimal_len(argvlen[i]) + 2 + argvlen[i] + 2;
    return len;
}

/* "<mark><n>\r\n" at o; returns the end. */
static char *resp_head(char *o, char mark, uint64_t n)
{
    *o++ = mark;
    o = lapse_decimal_u(o, n);
    *o++ = '\r';
    *o++ = '\n';
    return o;
}

char *lapse_resp_write(char *o, int argc, const char **argv, const size_t *argvlen)
{
    o = resp_head(o, '*', (uint64_t)argc);
    for (int i = 0; i < argc; i++) {
        o = resp_head(o, '$', argvlen[i]);
        memcpy(o, argv[i], argvlen[i]);
        o += argvlen[i];
        *o++ = '\r';
        *o++ = '\n';
    }
    return o;
}
