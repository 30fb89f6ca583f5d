/* Unit tests of common/redis_policy.c's pure parts: which maxmemory-policy
 * evicts, and INFO memory read into named fields. */
#include "t.h"

#include "redis.h"

TEST(policy_only_noeviction_keeps_keys)
{
    CHECK(!lapse_redis_policy_evicts("noeviction"));
    CHECK(!lapse_redis_policy_evicts("")); /* unknown is not evicting */
    CHECK(!lapse_redis_policy_evicts(NULL));
    static const char *const evicting[] = {"allkeys-lru",  "allkeys-lfu",  "allkeys-random",
                                           "volatile-lru", "volatile-lfu", "volatile-random",
                                           "volatile-ttl"};
    for (size_t i = 0; i < sizeof evicting / sizeof evicting[0]; i++)
        CHECK(lapse_redis_policy_evicts(evicting[i]));
}

TEST(memory_parse_reads_info_memory)
{
    struct lapse_redis_memory m;
    const char *info = "# Memory\r\nused_memory:1234567\r\nused_memory_human:1.18M\r\n"
                       "used_memory_peak:2000000\r\nmaxmemory:4194304\r\n"
                       "maxmemory_human:4.00M\r\nmaxmemory_policy:volatile-lru\r\n"
                       "allocator_frag_ratio:1.0\r\n";
    CHECK(lapse_redis_memory_parse(info, &m) == 0);
    CHECK(m.used == 1234567);
    CHECK(m.max == 4194304);
    CHECK_STR(m.policy, "volatile-lru");
    CHECK(m.replicas == -1); /* (no replication section) */
    CHECK(lapse_redis_memory_parse("used_memory:5\r\nmaxmemory_policy:noeviction\r\n"
                                   "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n",
                                   &m) == 0);
    CHECK(m.replicas == 2);
    /* a field whose name only begins like another is not taken for it */
    CHECK(lapse_redis_memory_parse("used_memory_rss:9\nused_memory:5\nmaxmemory:0\n"
                                   "maxmemory_policy:noeviction\n",
                                   &m) == 0);
    CHECK(m.used == 5 && m.max == 0);
    CHECK_STR(m.policy, "noeviction");
    CHECK(lapse_redis_memory_parse("used_memory:5\r\n", &m) == -1);
    CHECK(m.policy[0] == '\0' && m.why[0]);
    CHECK(lapse_redis_memory_parse("x_maxmemory_policy:allkeys-lru\r\n", &m) == -1);
}
