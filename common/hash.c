#include "hash.h"

#include <xxhash.h>

uint64_t lapse_hash(const void *id, size_t len)
{
    const unsigned char *p = id;
    if (len > 0 && p[0] == LAPSE_RECOVERED_MARK) /* a recovered event lives with its ID */
        p++, len--;
    return (uint64_t)XXH64(p, len, 0);
}

int lapse_shards_valid(long n)
{
    return n >= 1 && n <= LAPSE_MAX_SHARDS && (n & (n - 1)) == 0;
}
