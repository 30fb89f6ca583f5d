#include "clock.h"

#include <time.h>

static int64_t clock_read(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t lapse_clock_ms(void)
{
    return clock_read(CLOCK_REALTIME);
}
int64_t lapse_clock_mono_ms(void)
{
    return clock_read(CLOCK_MONOTONIC);
}

int64_t lapse_clock_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void lapse_clock_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}
