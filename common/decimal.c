/* decimal — see decimal.h. */
#include "decimal.h"

size_t lapse_decimal_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

char *lapse_decimal_u(char *o, uint64_t v)
{
    size_t n = lapse_decimal_len(v);
    char *end = o + n;
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return o + n;
}

char *lapse_decimal(char *o, int64_t v)
{
    if (v >= 0)
        return lapse_decimal_u(o, (uint64_t)v);
    *o++ = '-';
    return lapse_decimal_u(o, 0 - (uint64_t)v);
}
