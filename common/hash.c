#include "hash.h"

#include <xxhash.h>

uint64_t lapse_hash(const void *id, size_t len)
{
    return (uint64_t)XXH64(id, len, 0);
}

int lapse_shards_valid(long n)
{
    return n >= 1 && n <= LAPSE_MAX_SHARDS && (n & (n - 1)) == 0;
}
