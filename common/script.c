#include "script.h"

extern const char lapse_lua_apply[], lapse_lua_claim[], lapse_lua_ack[], lapse_lua_acquire[],
    lapse_lua_release[], lapse_lua_take[], lapse_lua_seed[], lapse_lua_drop[], lapse_lua_sleep[],
    lapse_lua_moved[], lapse_lua_forget[];

const char *lapse_script_source(enum lapse_script s)
{
    static const char *const src[LAPSE_SCRIPT_COUNT] = {
        [LAPSE_SCRIPT_APPLY] = lapse_lua_apply,     [LAPSE_SCRIPT_CLAIM] = lapse_lua_claim,
        [LAPSE_SCRIPT_ACK] = lapse_lua_ack,         [LAPSE_SCRIPT_ACQUIRE] = lapse_lua_acquire,
        [LAPSE_SCRIPT_RELEASE] = lapse_lua_release, [LAPSE_SCRIPT_TAKE] = lapse_lua_take,
        [LAPSE_SCRIPT_SEED] = lapse_lua_seed,       [LAPSE_SCRIPT_DROP] = lapse_lua_drop,
        [LAPSE_SCRIPT_SLEEP] = lapse_lua_sleep,     [LAPSE_SCRIPT_MOVED] = lapse_lua_moved,
        [LAPSE_SCRIPT_FORGET] = lapse_lua_forget,
    };
    return src[s];
}
