/*
 * test_decimal — lapse_decimal writes what snprintf's "%lld" and "%llu" do,
 * at every digit count and both ends of the range.
 */
#include "decimal.h"
#include "t.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int same_signed(int64_t v)
{
    char want[32], got[LAPSE_DECIMAL_MAX];
    int n = snprintf(want, sizeof want, "%" PRId64, v);
    char *end = lapse_decimal(got, v);
    return end - got == n && memcmp(got, want, (size_t)n) == 0;
}

static int same_unsigned(uint64_t v)
{
    char want[32], got[LAPSE_DECIMAL_MAX];
    int n = snprintf(want, sizeof want, "%" PRIu64, v);
    char *end = lapse_decimal_u(got, v);
    return end - got == n && (size_t)n == lapse_decimal_len(v) && memcmp(got, want, (size_t)n) == 0;
}

TEST(decimal_as_printf)
{
    CHECK(same_signed(0) && same_signed(-1) && same_signed(INT64_MAX) && same_signed(INT64_MIN));
    CHECK(same_unsigned(0) && same_unsigned(UINT64_MAX));
    uint64_t p = 1;
    for (int d = 0; d < 19; d++, p *= 10) {
        CHECK(same_unsigned(p - 1) && same_unsigned(p) && same_unsigned(p + 1));
        CHECK(same_signed((int64_t)p) && same_signed(-(int64_t)p) && same_signed((int64_t)p - 1));
    }
    CHECK(same_signed(1764417600000LL)); /* a deadline in ms */
}
