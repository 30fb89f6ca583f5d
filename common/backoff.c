/* backoff — see backoff.h. */
#include "backoff.h"

#include <stdint.h>
#include <unistd.h>

#include "clock.h"

void lapse_backoff_init(struct lapse_backoff *b, int min_ms, int max_ms)
{
    b->min_ms = min_ms > 0 ? min_ms : 1;
    b->max_ms = max_ms > b->min_ms ? max_ms : b->min_ms;
    b->step_ms = b->min_ms;
    b->rng = (uint64_t)lapse_clock_mono_ms() * 0x9e3779b97f4a7c15u ^ (uint64_t)getpid() << 32 ^
             (uint64_t)(uintptr_t)b;
    if (!b->rng)
        b->rng = 1;
}

int lapse_backoff_next(struct lapse_backoff *b)
{
    b->rng ^= b->rng >> 12;
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    uint64_t r = b->rng * 0x2545f4914f6cdd1du;
    int half = b->step_ms / 2;
    int wait = half + (int)((r >> 33) % (uint64_t)(b->step_ms - half + 1));
    b->step_ms = b->step_ms > b->max_ms / 2 ? b->max_ms : b->step_ms * 2;
    return wait;
}

void lapse_backoff_reset(struct lapse_backoff *b)
{
    b->step_ms = b->min_ms;
}
