/*
 * test_slot — hash slots as Redis computes them: every expected value below
 * is what CLUSTER KEYSLOT answered on redis-server 7.0.15 (cluster-enabled).
 */
#include <string.h>

#include "slot.h"
#include "t.h"

static uint16_t slot(const char *key)
{
    return lapse_slot(key, strlen(key));
}

TEST(slot_known_keys)
{
    CHECK(slot("123456789") == 12739); /* the CRC16/XMODEM check value 0x31C3 */
    CHECK(slot("foo") == 12182);
    CHECK(slot("bar") == 5061);
    CHECK(slot("") == 0);
}

TEST(slot_hash_tags)
{
    CHECK(slot("{user1000}.following") == 3443);
    CHECK(slot("{user1000}.following") == slot("{user1000}.followers"));
    CHECK(slot("demo:z:{demo:3}") == 6226);
    CHECK(slot("demo:z:{demo:3}") == slot("demo:p:{demo:3}"));
    CHECK(slot("a{}b") == 13694);   /* an empty tag: the whole key */
    CHECK(slot("{}{x}") == 3257);   /* the first '{' decides, and its tag is empty */
    CHECK(slot("x{y") == 2740);     /* no closing brace: the whole key */
    CHECK(slot("{a}{b}") == 15495); /* only the first tag */
    CHECK(slot("{a}{b}") == slot("a"));
}

TEST(slot_tag_found)
{
    size_t off = 99, len = 99;
    CHECK(lapse_slot_tag("demo:z:{demo:3}", 15, &off, &len) == 1);
    CHECK(off == 8 && len == 6);
    CHECK(lapse_slot_tag("{a}{b}", 6, &off, &len) == 1);
    CHECK(off == 1 && len == 1);
    CHECK(lapse_slot_tag("a{}b", 4, &off, &len) == 0);
    CHECK(lapse_slot_tag("{}{x}", 5, &off, &len) == 0);
    CHECK(lapse_slot_tag("x{y", 3, &off, &len) == 0);
    CHECK(lapse_slot_tag("plain", 5, &off, &len) == 0);
    CHECK(lapse_slot_tag("k{t}", 3, &off, &len) == 0); /* the '}' lies past len */
}
