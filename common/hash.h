/*
 * hash — where an ID lives: shard = XXH64(id, seed 0) & (shards - 1).
 *
 * XXH64 is stable across versions and implemented in every common language,
 * so other tools can locate an ID; docs/protocol.md ("Where an ID lives")
 * lists test vectors. The shard
 * count is a power of two, so after a split 2^n -> 2^(n+1) an ID of shard i
 * either stays in i or moves to i + 2^n, decided by bit n of the hash.
 */
#ifndef LAPSE_HASH_H
#define LAPSE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A zset member that is this byte and then an ID is the ID's queued
 * "recovered" event (common/lua/lib/watch.lua): no ID begins with a control
 * byte, and lapse_hash places the member where its ID lives. */
#define LAPSE_RECOVERED_MARK 1

uint64_t lapse_hash(const void *id, size_t len);

/* shard of an ID among `shards` (a power of two, >= 1). */
static inline uint32_t lapse_shard_of(uint64_t hash, uint32_t shards)
{
    return (uint32_t)(hash & (uint64_t)(shards - 1));
}

/* 1 if `n` is a power of two between 1 and LAPSE_MAX_SHARDS. */
int lapse_shards_valid(long n);

#define LAPSE_MAX_SHARDS 4096

#endif
