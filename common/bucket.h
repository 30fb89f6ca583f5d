/*
 * bucket — where an ID lives inside its shard when the shard is split into
 * small keys (common/lua/lib/bucket.lua has the same rules, and the why).
 *
 * A shard in small keys has a state key NS:k:I ("b s" and flag letters)
 * and 2^b + s buckets: the zset NS:z:I:J beside NS:p:I:J and NS:r:I:J
 * (with the shard's hash tag on a Cluster: NS:z:{NS:I}:J), and an index
 * NS:x:I of each bucket's lowest score (a lower bound). An ID's bucket
 * follows linear hashing on its bucket hash h: J = h mod 2^b, or
 * h mod 2^(b+1) when that is below s. A shard without a state key is one
 * zset NS:z:I (with NS:p:I, NS:r:I), as lapse wrote it before 2026-11-27.
 */
#ifndef LAPSE_BUCKET_H
#define LAPSE_BUCKET_H

#include <stddef.h>
#include <stdint.h>

/* lib/bucket.lua's BK_GROUP: a shard's index NS:x:I holds one entry per
 * group of this many buckets, whose own index is NS:x:I:G. */
#define LAPSE_BUCKET_GROUP 2048

/* An ID's bucket hash, independent of the shard hash (hash.h): the
 * polynomial of its bytes with base 1000003 modulo 4294967291, times
 * 2654435761 modulo 2^32, rotated by 16 bits (lib/bucket.lua says why). */
uint32_t lapse_bucket_hash(const void *id, size_t len);

struct lapse_buckets {
    int small;  /* 0: the shard is one zset (no state key) */
    unsigned b; /* level: 2^b buckets, plus s split already */
    uint32_t s;
    int payloads; /* flag "p": a bucket may hold payloads */
    int repeats;  /* flag "r": repeat records */
};

/* Parses a state key's value ("b s" [flags]); NULL (no key) gives the one
 * zset. Returns 0, or -1 when it is malformed. */
int lapse_buckets_parse(const char *state, struct lapse_buckets *out);

/* The bucket of an ID with bucket hash h. */
uint32_t lapse_bucket_of(const struct lapse_buckets *bk, uint32_t h);

/* How many buckets the shard has: 2^b + s (1 for one zset). */
uint64_t lapse_buckets_count(const struct lapse_buckets *bk);

/* Writes key `shard_key` (a shard's z, p or r key, layout.h) of bucket j:
 * "KEY:J"; or the key itself for one zset. Returns its length. */
int lapse_bucket_key(char *buf, size_t size, const struct lapse_buckets *bk, const char *shard_key,
                     uint32_t j);

#endif
