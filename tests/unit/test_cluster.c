/*
 * test_cluster — the slot map and redirections of common/cluster, from
 * replies as Redis 7.0 sends them (fed through hiredis's own redisReader).
 */
#include <hiredis/hiredis.h>
#include <string.h>

#include "cluster.h"
#include "layout.h"
#include "t.h"

/* The reply that RESP bytes `resp` make; NULL if they are not one. */
static redisReply *reply_of(const char *resp)
{
    redisReader *r = redisReaderCreate();
    void *reply = NULL;
    if (redisReaderFeed(r, resp, strlen(resp)) != REDIS_OK ||
        redisReaderGetReply(r, &reply) != REDIS_OK)
        reply = NULL;
    redisReaderFree(r);
    return reply;
}

/* Slots 0-5460 on :30001 (with a replica), 5461-16383 on :30002, as
 * CLUSTER SLOTS lists them (host, port, id, and 7.0's metadata array). */
static const char two_primaries[] =
    "*2\r\n"
    "*4\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:30001\r\n$2\r\nid\r\n*0\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:30004\r\n$2\r\nir\r\n*0\r\n"
    "*3\r\n:5461\r\n:16383\r\n*3\r\n$0\r\n\r\n:30002\r\n$2\r\ni2\r\n";

TEST(cluster_map_parse)
{
    redisReply *r = reply_of(two_primaries);
    REQUIRE(r);
    struct lapse_cluster_map m = {0};
    char err[200];
    REQUIRE(lapse_cluster_map_parse(&m, r, "10.0.0.9", err, sizeof err) == 0);
    CHECK(m.nprimaries == 2);
    CHECK(m.uncovered == 0);
    CHECK_STR(lapse_cluster_owner(&m, 0), "127.0.0.1:30001");
    CHECK_STR(lapse_cluster_owner(&m, 5460), "127.0.0.1:30001");
    /* an empty host is the host the reply came from */
    CHECK_STR(lapse_cluster_owner(&m, 5461), "10.0.0.9:30002");
    CHECK_STR(lapse_cluster_owner(&m, 16383), "10.0.0.9:30002");
    CHECK(lapse_cluster_owner(&m, LAPSE_SLOTS) == NULL);
    lapse_cluster_map_free(&m);
    freeReplyObject(r);
}

TEST(cluster_map_uncovered_and_bad)
{
    struct lapse_cluster_map m = {0};
    char err[200];
    redisReply *r = reply_of("*1\r\n*3\r\n:100\r\n:199\r\n*2\r\n$1\r\nh\r\n:7000\r\n");
    REQUIRE(r);
    REQUIRE(lapse_cluster_map_parse(&m, r, "x", err, sizeof err) == 0);
    CHECK(m.uncovered == LAPSE_SLOTS - 100);
    CHECK(lapse_cluster_owner(&m, 99) == NULL);
    CHECK_STR(lapse_cluster_owner(&m, 150), "h:7000");
    freeReplyObject(r);

    r = reply_of("-ERR This instance has cluster support disabled\r\n");
    REQUIRE(r);
    CHECK(lapse_cluster_map_parse(&m, r, "x", err, sizeof err) == -1);
    CHECK(strstr(err, "cluster support disabled") != NULL);
    CHECK(m.nprimaries == 0 && lapse_cluster_owner(&m, 150) == NULL);
    freeReplyObject(r);

    /* a range past the last slot, a port out of range */
    r = reply_of("*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:7000\r\n");
    REQUIRE(r);
    CHECK(lapse_cluster_map_parse(&m, r, "x", err, sizeof err) == -1);
    freeReplyObject(r);
    r = reply_of("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:70000\r\n");
    REQUIRE(r);
    CHECK(lapse_cluster_map_parse(&m, r, "x", err, sizeof err) == -1);
    CHECK(m.uncovered == LAPSE_SLOTS);
    freeReplyObject(r);
    lapse_cluster_map_free(&m);
}

TEST(cluster_redirects)
{
    uint16_t slot = 0;
    char addr[64];
    CHECK(lapse_cluster_redirect("MOVED 3999 127.0.0.1:6381", "s", &slot, addr, sizeof addr) ==
          LAPSE_REDIRECT_MOVED);
    CHECK(slot == 3999);
    CHECK_STR(addr, "127.0.0.1:6381");
    CHECK(lapse_cluster_redirect("ASK 12 :6390", "10.1.1.1", &slot, addr, sizeof addr) ==
          LAPSE_REDIRECT_ASK);
    CHECK(slot == 12);
    CHECK_STR(addr, "10.1.1.1:6390");
    CHECK(lapse_cluster_redirect("TRYAGAIN Multiple keys request during rehashing of slot", "s",
                                 &slot, addr, sizeof addr) == LAPSE_REDIRECT_RETRY);
    CHECK(lapse_cluster_redirect("CLUSTERDOWN The cluster is down", "s", &slot, addr,
                                 sizeof addr) == LAPSE_REDIRECT_RETRY);
    CHECK(lapse_cluster_redirect("MOVED 16384 h:1", "s", &slot, addr, sizeof addr) ==
          LAPSE_REDIRECT_NONE);
    CHECK(lapse_cluster_redirect("MOVED x h:1", "s", &slot, addr, sizeof addr) ==
          LAPSE_REDIRECT_NONE);
    CHECK(lapse_cluster_redirect("ERR wrong number", "s", &slot, addr, sizeof addr) ==
          LAPSE_REDIRECT_NONE);
    CHECK(lapse_cluster_redirect("CROSSSLOT Keys in request don't hash to the same slot", "s",
                                 &slot, addr, sizeof addr) == LAPSE_REDIRECT_NONE);
}

TEST(cluster_tagged_keys)
{
    char a[64], b[64];
    lapse_key_tagged(a, sizeof a, "demo", LAPSE_KEY_DUE, 3);
    CHECK_STR(a, "demo:z:{demo:3}");
    /* every key a shard script takes shares the shard's slot */
    for (int k = 0; k < LAPSE_SHARD_NKEYS; k++) {
        lapse_key_tagged(b, sizeof b, "demo", lapse_shard_keys[k], 3);
        CHECK(lapse_slot(b, strlen(b)) == lapse_shard_slot("demo", 3));
    }
    CHECK(lapse_shard_slot("demo", 3) == 6226); /* CLUSTER KEYSLOT demo:z:{demo:3} */
    CHECK(lapse_shard_slot("demo", 3) != lapse_shard_slot("demo", 4));
}
