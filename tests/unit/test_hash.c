/*
 * test_hash — pins where an ID lives. The shard of an ID is part of the data
 * layout: other tools compute it too, so XXH64 (seed 0) and the masking must
 * never change. The expected values were computed independently of libxxhash
 * (a separate XXH64 written from the spec, cross-checked against published
 * vectors for "" and "a") and are the ones listed in docs/protocol.md,
 * "Where an ID lives".
 */
#include "hash.h"
#include "t.h"

#include <stdint.h>

static const struct {
    const char *id;
    uint64_t hash;
    uint32_t shard4, shard16;
} vectors[] = {
    {"", UINT64_C(0xef46db3751d8e999), 1, 9},
    {"a", UINT64_C(0xd24ec4f1a98c6e5b), 3, 11},
    {"dev-42", UINT64_C(0xe7ac137331bffcbb), 3, 11},
    {"order:1234567", UINT64_C(0x9c5d7f811e123237), 3, 7},
};

TEST(hash_vectors)
{
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        uint64_t h = lapse_hash(vectors[i].id, strlen(vectors[i].id));
        CHECK(h == vectors[i].hash);
        CHECK(lapse_shard_of(h, 4) == vectors[i].shard4);
        CHECK(lapse_shard_of(h, 16) == vectors[i].shard16);
        if (h != vectors[i].hash)
            fprintf(stderr, "    id \"%s\": got %016llx\n", vectors[i].id, (unsigned long long)h);
    }
}

/* 512 bytes (the longest ID): "abcdefghijklmnopqrstuvwxyz" repeated. It
 * takes XXH64's 32-byte stripe loop, which short IDs never reach. */
TEST(hash_max_id)
{
    char id[512];
    for (size_t i = 0; i < sizeof id; i++)
        id[i] = (char)('a' + i % 26);
    uint64_t h = lapse_hash(id, sizeof id);
    CHECK(h == UINT64_C(0xae04e8ccd4d3b869));
    CHECK(lapse_shard_of(h, 4) == 1);
    CHECK(lapse_shard_of(h, 16) == 9);
}

TEST(hash_reads_only_len_bytes)
{
    CHECK(lapse_hash("dev-42 and more", 6) == UINT64_C(0xe7ac137331bffcbb));
}

TEST(hash_shard_of)
{
    uint64_t h = UINT64_C(0xe7ac137331bffcbb);
    CHECK(lapse_shard_of(h, 1) == 0);
    CHECK(lapse_shard_of(h, 2) == 1);
    CHECK(lapse_shard_of(h, 4096) == 0xcbb);
    /* a split 2^n -> 2^(n+1) keeps shard i or moves to i + 2^n, by bit n */
    for (uint32_t n = 1; n < 4096; n *= 2) {
        uint32_t before = lapse_shard_of(h, n), after = lapse_shard_of(h, n * 2);
        CHECK(after == before || after == before + n);
        CHECK((after == before + n) == ((h & n) != 0));
    }
}

TEST(hash_shards_valid)
{
    CHECK(lapse_shards_valid(1));
    CHECK(lapse_shards_valid(2));
    CHECK(lapse_shards_valid(16));
    CHECK(lapse_shards_valid(4096));
    CHECK(!lapse_shards_valid(0));
    CHECK(!lapse_shards_valid(-4));
    CHECK(!lapse_shards_valid(3));
    CHECK(!lapse_shards_valid(12));
    CHECK(!lapse_shards_valid(8192));
}
