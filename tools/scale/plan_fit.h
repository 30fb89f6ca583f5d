/*
 * plan_fit — how a write's cost grows with the set it goes into, fitted
 * from a calibration's points: cost = us + per_doubling · log2(ids /
 * ref_ids), ids the IDs on the node (plan.h, lapse_plan_costs_at, says why
 * the node's and not one shard's).
 *
 * Why a logarithm: a sorted set's insert, update and removal walk a skip
 * list of log2(size) levels, and the deeper walk misses more cache (the
 * bench's ZADD: 1.17 µs a call at 1M IDs, 1.97 at 10M: docs/benchmarks.md,
 * "Small keys"). A calibration bounded to seconds measures sets of tens
 * to hundreds of thousands; the sizes plan is asked about are millions.
 *
 * Why Theil–Sen (the median of the pairwise slopes, then the median of the
 * intercepts) and not least squares: on a shared machine one repeat in
 * three can be taken twice as long by another process, and a median of
 * slopes ignores it where a mean is pulled by it. Only pairs of points at
 * least a doubling apart give a slope: repeats at nearly one size would
 * turn noise into steep slopes.
 *
 * Pure: no I/O; unit-tested (tests/unit/test_plan.c).
 */
#ifndef LAPSE_SCALE_PLAN_FIT_H
#define LAPSE_SCALE_PLAN_FIT_H

#include <stddef.h>

/* The most points a fit takes. */
#define LAPSE_PLAN_FIT_MAX 32

struct lapse_plan_fit {
    double us;           /* the cost at ref_ids IDs, µs */
    double per_doubling; /* µs more each time the set doubles (>= 0) */
    double spread_pct;   /* the farthest point from the fit, % of the fit there */
};

/*
 * Fits n points (ids[i] > 0 IDs in the set, us[i] µs an op) at ref_ids.
 * A slope that comes out negative is taken as 0 (noise: a sorted set does
 * not get cheaper as it grows), and the level is then the median of the
 * points; so is it when no two points are a doubling apart (one size
 * measured). Returns 0 with *out, or -1 when n is 0 or over
 * LAPSE_PLAN_FIT_MAX or a point is not positive (*out untouched).
 */
int lapse_plan_fit(const double *ids, const double *us, size_t n, double ref_ids,
                   struct lapse_plan_fit *out);

/* The fitted cost at a set of `ids` IDs: sets smaller than ref_ids cost as
 * ref_ids does (no extrapolating downwards, where a few µs of the call's
 * own overhead dominate and the log would go negative). */
double lapse_plan_fit_at(double us, double per_doubling, double ref_ids, double ids);

#endif
