/*
 * test_inspect — the pure parts of lapse-scale get: which IDs it accepts
 * (the producer's rule), the terminal-safe preview of bytes, the UTC time.
 */
#include "inspect.h"
#include "t.h"

TEST(inspect_id_check)
{
    char err[128], id[600];
    memset(id, 'x', sizeof id);
    CHECK(lapse_inspect_id_check("dev-42", 6, err, sizeof err) == 0);
    CHECK(lapse_inspect_id_check(id, 512, err, sizeof err) == 0);
    CHECK(lapse_inspect_id_check(id, 513, err, sizeof err) < 0);
    CHECK(lapse_inspect_id_check("", 0, err, sizeof err) < 0);
    CHECK(lapse_inspect_id_check("a b", 3, err, sizeof err) < 0);
    CHECK(lapse_inspect_id_check("a\x7f", 2, err, sizeof err) < 0);
    CHECK(lapse_inspect_id_check("\xc3\xa9t\xff", 4, err, sizeof err) ==
          0); /* high bytes are fine */
}

TEST(inspect_preview)
{
    char out[300];
    CHECK_STR(lapse_inspect_preview("a\x01"
                                    "b\xff\\\n",
                                    6, 64, out, sizeof out),
              "a\\x01b\\xff\\\\\\n");
    char p[100];
    memset(p, 'p', sizeof p);
    lapse_inspect_preview(p, sizeof p, 64, out, sizeof out);
    CHECK(strlen(out) == 67 && strcmp(out + 64, "...") == 0);
    /* a short buffer cuts between escapes, never inside one */
    CHECK_STR(lapse_inspect_preview("ab\x01", 3, 64, out, 5), "ab");
}

TEST(inspect_iso)
{
    char out[40];
    CHECK_STR(lapse_inspect_iso(0, out, sizeof out), "1970-01-01T00:00:00.000Z");
    /* (date -u -d @1795303123) */
    CHECK_STR(lapse_inspect_iso(1795303123004, out, sizeof out), "2026-11-21T23:18:43.004Z");
}
