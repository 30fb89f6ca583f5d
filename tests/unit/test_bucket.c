/*
 * test_bucket — pins an ID's bucket inside a shard in small keys. The
 * scripts (common/lua/lib/bucket.lua, bk_hash) write an ID into the bucket
 * its hash names and the tools (bucket.h) read it there, so both must hash
 * alike: the expected values are bk_hash's, as Redis ran it (EVAL of
 * scripts/lua-source common/lua/lib/bucket.lua with `return bk_hash(id)`;
 * tests/integration/0815-small-keys-readers.sh checks the same vectors
 * against the Lua on every run).
 */
#include "bucket.h"
#include "t.h"

#include <stdint.h>

static const struct {
    const char *id;
    size_t len;
    uint32_t hash;
} vectors[] = {
    {"", 0, 0u},
    {"a", 1, 470938373u},
    {"dev-42", 6, 2770676572u},
    {"order:1234567", 13, 3105038160u},
    {"x\377y", 3, 1410198711u}, /* a byte above 127: unsigned, as string.byte */
};

TEST(bucket_hash_vectors)
{
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        uint32_t h = lapse_bucket_hash(vectors[i].id, vectors[i].len);
        CHECK(h == vectors[i].hash);
        if (h != vectors[i].hash)
            fprintf(stderr, "    id \"%s\": got %u\n", vectors[i].id, h);
    }
}

/* 512 bytes (the longest ID) of 'z': the polynomial wraps the prime many
 * times, where a 64-bit overflow would show. */
TEST(bucket_hash_max_id)
{
    char id[512];
    memset(id, 'z', sizeof id);
    CHECK(lapse_bucket_hash(id, sizeof id) == 1190629869u);
}

TEST(bucket_parse)
{
    struct lapse_buckets bk;
    CHECK(lapse_buckets_parse(NULL, &bk) == 0 && !bk.small);
    CHECK(lapse_buckets_count(&bk) == 1);
    REQUIRE(lapse_buckets_parse("3 2 pr", &bk) == 0);
    CHECK(bk.small && bk.b == 3 && bk.s == 2 && bk.payloads && bk.repeats);
    CHECK(lapse_buckets_count(&bk) == 10);
    REQUIRE(lapse_buckets_parse("0 0", &bk) == 0);
    CHECK(bk.small && bk.b == 0 && bk.s == 0 && !bk.payloads && !bk.repeats);
    CHECK(lapse_buckets_count(&bk) == 1);
    CHECK(lapse_buckets_parse("", &bk) == -1);
    CHECK(lapse_buckets_parse("3", &bk) == -1);
    CHECK(lapse_buckets_parse("3 8", &bk) == -1); /* s < 2^b */
    CHECK(lapse_buckets_parse("32 0", &bk) == -1);
    CHECK(lapse_buckets_parse("1 0 P", &bk) == -1);
}

/* Linear hashing: h mod 2^b, or h mod 2^(b+1) below s (split already). */
TEST(bucket_of)
{
    struct lapse_buckets bk;
    lapse_buckets_parse(NULL, &bk);
    CHECK(lapse_bucket_of(&bk, 12345) == 0);
    lapse_buckets_parse("3 2", &bk);
    CHECK(lapse_bucket_of(&bk, 8 * 7 + 5) == 5);  /* 5 >= s: mod 8 */
    CHECK(lapse_bucket_of(&bk, 16 * 3 + 1) == 1); /* 1 < s: mod 16, bit 3 clear */
    CHECK(lapse_bucket_of(&bk, 16 * 3 + 9) == 9); /* 1 < s: mod 16, bit 3 set */
    CHECK(lapse_bucket_of(&bk, 16 * 3 + 10) == 2);
    char key[64];
    CHECK(lapse_bucket_key(key, sizeof key, &bk, "ns:z:{ns:3}", 9) == 13);
    CHECK_STR(key, "ns:z:{ns:3}:9");
    lapse_buckets_parse(NULL, &bk);
    lapse_bucket_key(key, sizeof key, &bk, "ns:z:3", 0);
    CHECK_STR(key, "ns:z:3");
}
