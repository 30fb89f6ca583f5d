/* bucket — see bucket.h. */
#include "bucket.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKET_PRIME 4294967291u

uint32_t lapse_bucket_hash(const void *id, size_t len)
{
    const unsigned char *p = id;
    uint64_t h = 0;
    for (size_t i = 0; i < len; i++)
        h = (h * 1000003 + p[i]) % BUCKET_PRIME;
    uint32_t x = (uint32_t)(h * 2654435761u); /* mod 2^32 */
    return x >> 16 | x << 16;
}

int lapse_buckets_parse(const char *state, struct lapse_buckets *out)
{
    memset(out, 0, sizeof *out);
    if (!state)
        return 0;
    char *end;
    unsigned long b = strtoul(state, &end, 10);
    if (end == state || *end != ' ' || b > 31)
        return -1;
    const char *p = end + 1;
    unsigned long s = strtoul(p, &end, 10);
    if (end == p || s >= (1ul << b))
        return -1;
    if (*end == ' ')
        end++;
    for (; *end; end++) {
        if (*end == 'p')
            out->payloads = 1;
        else if (*end == 'r')
            out->repeats = 1;
        else if (*end < 'a' || *end > 'z')
            return -1;
    }
    out->small = 1;
    out->b = (unsigned)b;
    out->s = (uint32_t)s;
    return 0;
}

uint32_t lapse_bucket_of(const struct lapse_buckets *bk, uint32_t h)
{
    if (!bk->small)
        return 0;
    uint64_t n = 1ull << bk->b;
    uint64_t j = h % n;
    if (j < bk->s)
        j = h % (2 * n);
    return (uint32_t)j;
}

uint64_t lapse_buckets_count(const struct lapse_buckets *bk)
{
    return bk->small ? (1ull << bk->b) + bk->s : 1;
}

int lapse_bucket_key(char *buf, size_t size, const struct lapse_buckets *bk, const char *shard_key,
                     uint32_t j)
{
    return bk->small ? snprintf(buf, size, "%s:%u", shard_key, j)
                     : snprintf(buf, size, "%s", shard_key);
}
