/*
 * plan_fit — see plan_fit.h.
 */
#include "plan_fit.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n-1] (n >= 1), v reordered. */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int lapse_plan_fit(const double *ids, const double *us, size_t n, double ref_ids,
                   struct lapse_plan_fit *out)
{
    if (n == 0 || n > LAPSE_PLAN_FIT_MAX || !(ref_ids > 0))
        return -1;
    double x[LAPSE_PLAN_FIT_MAX], tmp[LAPSE_PLAN_FIT_MAX * LAPSE_PLAN_FIT_MAX / 2];
    for (size_t i = 0; i < n; i++) {
        if (!(ids[i] > 0) || !(us[i] > 0) || !isfinite(us[i]))
            return -1;
        x[i] = log2(ids[i] / ref_ids);
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (fabs(x[j] - x[i]) >= 1)
                tmp[m++] = (us[j] - us[i]) / (x[j] - x[i]);
    double b = m ? median(tmp, m) : 0;
    if (b < 0)
        b = 0;
    for (size_t i = 0; i < n; i++)
        tmp[i] = us[i] - b * x[i];
    double a = median(tmp, n);
    double spread = 0;
    for (size_t i = 0; i < n; i++) {
        double fit = a + b * x[i];
        double d = fit > 0 ? fabs(us[i] - fit) / fit : 0;
        if (d > spread)
            spread = d;
    }
    *out = (struct lapse_plan_fit){.us = a, .per_doubling = b, .spread_pct = spread * 100};
    return 0;
}

double lapse_plan_fit_at(double us, double per_doubling, double ref_ids, double ids)
{
    if (!(ref_ids > 0) || !(ids > ref_ids) || !(per_doubling > 0))
        return us;
    return us + per_doubling * log2(ids / ref_ids);
}
