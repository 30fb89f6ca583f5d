/*
 * config_scale — what the keys of the `scale` group (lapse-scale autoscale)
 * must say together, checked once every value is of the right type and in
 * its bounds (config.c calls it with the other cross-key checks).
 *
 * The hysteresis rule: a merge halves the shards, so the load each shard
 * carries doubles. A merge allowed at the down thresholds must leave the
 * load below the up thresholds by the tolerance, or the next up window
 * would split again (a flap). So, for each figure with an up threshold:
 *
 *     2 * down <= up * (1 - tolerance_pct / 100)
 *
 * That holds for the due and pending figures and for the scanners' busy
 * fraction (twice the IDs, twice the work). An up threshold of 0 is no
 * reason to split, and then its down threshold is free. (Lateness has no
 * down key: a merge needs p99 at most up_lateness_ms / 2.) Shard bounds are powers of two (the only counts a split or a
 * merge reaches) with min_shards <= max_shards.
 */
#include "config_priv.h"
#include "hash.h"

/* down_key's value `down` against up_key's `up`: 0, or -1 with the
 * problem reported at down_key's line. */
static int check_pair(struct ctx *x, const config_t *lc, const char *down_key, long long down,
                      const char *up_key, long long up, int tol)
{
    if (up == 0 || 2 * down * 100 <= up * (100 - tol))
        return 0;
    long long most = up * (100 - tol) / 200;
    char path[64];
    snprintf(path, sizeof path, "scale.%s", down_key);
    const config_setting_t *s = config_lookup(lc, path);
    return config_fail(x, s ? s : config_lookup(lc, "scale"), path,
                       "%lld is more than %s / 2 * (1 - tolerance_pct / 100) = %lld: after a "
                       "merge each shard carries twice the load, which would call for a split "
                       "again (raise %s or lower %s)",
                       down, up_key, most, up_key, down_key);
}

int config_check_scale(struct ctx *x, const config_t *lc)
{
    const struct lapse_config *c = x->cfg;
    int tol = c->scale_tolerance_pct, bad = 0;
    static const char *const bound[] = {"min_shards", "max_shards"};
    const int value[] = {c->scale_min_shards, c->scale_max_shards};
    for (int i = 0; i < 2; i++) {
        char path[64];
        snprintf(path, sizeof path, "scale.%s", bound[i]);
        if (!lapse_shards_valid(value[i]))
            bad |= config_fail(x, config_lookup(lc, path), path,
                               "%d is not a power of two between 1 and %d", value[i],
                               LAPSE_MAX_SHARDS);
    }
    if (!bad && c->scale_min_shards > c->scale_max_shards)
        bad |=
            config_fail(x, config_lookup(lc, "scale.min_shards"), "scale.min_shards",
                        "%d is more than max_shards %d", c->scale_min_shards, c->scale_max_shards);
    bad |= check_pair(x, lc, "down_due_per_shard", c->scale_down_due_per_shard, "up_due_per_shard",
                      c->scale_up_due_per_shard, tol);
    bad |= check_pair(x, lc, "down_pending_per_shard", c->scale_down_pending_per_shard,
                      "up_pending_per_shard", c->scale_up_pending_per_shard, tol);
    bad |= check_pair(x, lc, "down_busy_pct", c->scale_down_busy_pct, "up_busy_pct",
                      c->scale_up_busy_pct, tol);
    return bad ? -1 : 0;
}
