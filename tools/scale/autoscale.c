/*
 * autoscale — see autoscale.h. Every comparison is on doubles (a figure
 * per shard is a mean); a threshold of 0 on an up figure is no reason to
 * split. The reason line is built here so that the log, --dry-run and the
 * unit tests read the same text.
 */
#include "autoscale.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *lapse_autoscale_action_name(enum lapse_autoscale_action a)
{
    switch (a) {
    case LAPSE_AUTOSCALE_SPLIT:
        return "split";
    case LAPSE_AUTOSCALE_MERGE:
        return "merge";
    case LAPSE_AUTOSCALE_FINISH:
        return "finish";
    default:
        return "none";
    }
}

/* Appends to buf (size bytes, NUL-terminated), cutting what does not fit. */
__attribute__((format(printf, 3, 4))) static void add(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* A lateness p99 as the log shows it, into buf: "250 ms", "above the last
 * bucket", "-" unknown. Returns buf. */
static const char *p99_text(int64_t ms, char *buf, size_t size)
{
    if (ms < 0)
        snprintf(buf, size, "-");
    else if (ms == INT64_MAX)
        snprintf(buf, size, "above the last bucket");
    else
        snprintf(buf, size, "%lld ms", (long long)ms);
    return buf;
}

/* Which up figures of r are above their thresholds, as "due/s per shard
 * 15.0 > up_due_per_shard 10; ..." into buf (when buf is not NULL).
 * Returns how many. */
static int hot_figures(const struct lapse_config *cfg, const struct lapse_autoscale_reading *r,
                       char *buf, size_t size)
{
    char p99[32];
    int n = 0;
    if (cfg->scale_up_due_per_shard > 0 && r->due_per_s > cfg->scale_up_due_per_shard) {
        if (buf)
            add(buf, size, "%sdue/s per shard %.1f > up_due_per_shard %d", n ? "; " : "",
                r->due_per_s, cfg->scale_up_due_per_shard);
        n++;
    }
    if (cfg->scale_up_pending_per_shard > 0 && r->pending > cfg->scale_up_pending_per_shard) {
        if (buf)
            add(buf, size, "%spending per shard %.0f > up_pending_per_shard %d", n ? "; " : "",
                r->pending, cfg->scale_up_pending_per_shard);
        n++;
    }
    if (cfg->scale_up_overdue_ms > 0 && r->overdue_ms > cfg->scale_up_overdue_ms) {
        if (buf)
            add(buf, size, "%soldest overdue %lld ms > up_overdue_ms %d", n ? "; " : "",
                (long long)r->overdue_ms, cfg->scale_up_overdue_ms);
        n++;
    }
    if (cfg->scale_up_busy_pct > 0 && r->busy >= 0 && r->busy * 100 > cfg->scale_up_busy_pct) {
        if (buf)
            add(buf, size, "%sscanner busy %.0f %% > up_busy_pct %d", n ? "; " : "", r->busy * 100,
                cfg->scale_up_busy_pct);
        n++;
    }
    if (cfg->scale_up_lateness_ms > 0 && r->lateness_p99_ms > cfg->scale_up_lateness_ms) {
        if (buf)
            add(buf, size, "%slateness p99 %s > up_lateness_ms %d", n ? "; " : "",
                p99_text(r->lateness_p99_ms, p99, sizeof p99), cfg->scale_up_lateness_ms);
        n++;
    }
    return n;
}

/* The down figures that hold a merge back in r, as hot_figures. */
static int warm_figures(const struct lapse_config *cfg, const struct lapse_autoscale_reading *r,
                        char *buf, size_t size)
{
    char p99[32];
    int n = 0;
    if (r->due_per_s > cfg->scale_down_due_per_shard) {
        if (buf)
            add(buf, size, "%sdue/s per shard %.1f > down_due_per_shard %d", n ? "; " : "",
                r->due_per_s, cfg->scale_down_due_per_shard);
        n++;
    }
    if (r->pending > cfg->scale_down_pending_per_shard) {
        if (buf)
            add(buf, size, "%spending per shard %.0f > down_pending_per_shard %d", n ? "; " : "",
                r->pending, cfg->scale_down_pending_per_shard);
        n++;
    }
    if (cfg->scale_up_overdue_ms > 0 && r->overdue_ms > cfg->scale_up_overdue_ms / 2) {
        if (buf)
            add(buf, size, "%soldest overdue %lld ms > up_overdue_ms / 2", n ? "; " : "",
                (long long)r->overdue_ms);
        n++;
    }
    if (r->memory_pct > cfg->scale_down_memory_pct) {
        if (buf)
            add(buf, size, "%smemory %.0f %% > down_memory_pct %d", n ? "; " : "", r->memory_pct,
                cfg->scale_down_memory_pct);
        n++;
    }
    if (r->cpu_pct > cfg->scale_down_cpu_pct) {
        if (buf)
            add(buf, size, "%sRedis CPU %.0f %% > down_cpu_pct %d", n ? "; " : "", r->cpu_pct,
                cfg->scale_down_cpu_pct);
        n++;
    }
    if (r->busy >= 0 && r->busy * 100 > cfg->scale_down_busy_pct) {
        if (buf)
            add(buf, size, "%sscanner busy %.0f %% > down_busy_pct %d", n ? "; " : "",
                r->busy * 100, cfg->scale_down_busy_pct);
        n++;
    }
    if (cfg->scale_up_lateness_ms > 0 && r->lateness_p99_ms > cfg->scale_up_lateness_ms / 2) {
        if (buf)
            add(buf, size, "%slateness p99 %s > up_lateness_ms / 2", n ? "; " : "",
                p99_text(r->lateness_p99_ms, p99, sizeof p99));
        n++;
    }
    return n;
}

/* A reading the windows may count: read in full, on a stable layout. */
static int usable(const struct lapse_autoscale_reading *r)
{
    return r->ok && !r->changing;
}

int lapse_autoscale_hot(const struct lapse_config *cfg, const struct lapse_autoscale_reading *r)
{
    return usable(r) && hot_figures(cfg, r, NULL, 0) > 0;
}

int lapse_autoscale_cold(const struct lapse_config *cfg, const struct lapse_autoscale_reading *r)
{
    return usable(r) && warm_figures(cfg, r, NULL, 0) == 0;
}

/* How long (ms, to now_ms) the last readings of h have met `is` without a
 * break, at the last one's shard count; -1 when the last one does not.
 * *count: how many readings that is. */
static int64_t run_ms(const struct lapse_config *cfg, const struct lapse_autoscale_reading *h,
                      size_t n, int64_t now_ms,
                      int (*is)(const struct lapse_config *,
                                const struct lapse_autoscale_reading *),
                      size_t *count)
{
    size_t first = n;
    while (first > 0 && h[first - 1].shards == h[n - 1].shards && is(cfg, &h[first - 1]))
        first--;
    *count = n - first;
    return first == n ? -1 : now_ms - h[first].at_ms;
}

/* The figures of r as the log shows them, into buf. */
static void figures(const struct lapse_config *cfg, const struct lapse_autoscale_reading *r,
                    char *buf, size_t size)
{
    char mem[24] = "-", cpu[24] = "-", over[32] = "none", busy[24] = "-", scanners[48] = "";
    char p99[32];
    if (r->busy >= 0)
        snprintf(busy, sizeof busy, "%.0f %%", r->busy * 100);
    if (r->scanners_unread)
        snprintf(scanners, sizeof scanners, " (%u of %u scanners not read)", r->scanners_unread,
                 r->scanners_read + r->scanners_unread);
    if (r->memory_pct >= 0)
        snprintf(mem, sizeof mem, "%.0f %%", r->memory_pct);
    if (r->cpu_pct >= 0)
        snprintf(cpu, sizeof cpu, "%.0f %%", r->cpu_pct);
    if (r->overdue_ms >= 0)
        snprintf(over, sizeof over, "%lld ms", (long long)r->overdue_ms);
    add(buf, size,
        "due/s per shard %.1f (up %d, down %d), pending per shard %.0f (up %d, down %d), "
        "oldest overdue %s (up %d ms), memory %s (down %d), Redis CPU %s (down %d), "
        "scanner busy %s (up %d, down %d), lateness p99 %s (up %d ms)%s",
        r->due_per_s, cfg->scale_up_due_per_shard, cfg->scale_down_due_per_shard, r->pending,
        cfg->scale_up_pending_per_shard, cfg->scale_down_pending_per_shard, over,
        cfg->scale_up_overdue_ms, mem, cfg->scale_down_memory_pct, cpu, cfg->scale_down_cpu_pct,
        busy, cfg->scale_up_busy_pct, cfg->scale_down_busy_pct,
        p99_text(r->lateness_p99_ms, p99, sizeof p99), cfg->scale_up_lateness_ms, scanners);
}

void lapse_autoscale_decide(const struct lapse_config *cfg, const struct lapse_autoscale_reading *h,
                            size_t n, int64_t last_change_ms, int64_t now_ms,
                            struct lapse_autoscale_decision *d)
{
    memset(d, 0, sizeof *d);
    d->action = LAPSE_AUTOSCALE_NONE;
    if (n == 0) {
        snprintf(d->reason, sizeof d->reason, "no reading yet");
        return;
    }
    const struct lapse_autoscale_reading *cur = &h[n - 1];
    d->from = d->to = cur->shards;
    if (cur->changing) {
        d->action = LAPSE_AUTOSCALE_FINISH;
        d->from = cur->prev;
        snprintf(d->reason, sizeof d->reason,
                 "%s %u -> %u under way: finish it (--drain at drain_rate %d IDs/s) before "
                 "anything else",
                 cur->merging ? "merge" : "split", cur->prev, cur->shards, cfg->scale_drain_rate);
        return;
    }
    if (!cur->ok) {
        snprintf(d->reason, sizeof d->reason, "figures not read (%s): no change on them", cur->why);
        return;
    }
    char figs[640] = "", why[384] = "";
    figures(cfg, cur, figs, sizeof figs);
    size_t hot_n, cold_n;
    int64_t hot = run_ms(cfg, h, n, now_ms, lapse_autoscale_hot, &hot_n);
    int64_t cold = run_ms(cfg, h, n, now_ms, lapse_autoscale_cold, &cold_n);
    int64_t since = now_ms - last_change_ms;
    int64_t cool_left = cfg->scale_cooldown_ms - since;
    if (hot >= 0) {
        hot_figures(cfg, cur, why, sizeof why);
        uint32_t to = cur->shards * 2;
        if (hot < cfg->scale_up_window_ms)
            snprintf(d->reason, sizeof d->reason,
                     "no change: %s for %.1f s of up_window_ms %d (%zu readings); %s", why,
                     (double)hot / 1000, cfg->scale_up_window_ms, hot_n, figs);
        else if (to > (uint32_t)cfg->scale_max_shards)
            snprintf(d->reason, sizeof d->reason,
                     "no change: %s for %.1f s, but %u shards is max_shards %d; %s", why,
                     (double)hot / 1000, cur->shards, cfg->scale_max_shards, figs);
        else if (cool_left > 0)
            snprintf(d->reason, sizeof d->reason,
                     "no change: %s for %.1f s, but cooldown_ms %d: %.1f s left; %s", why,
                     (double)hot / 1000, cfg->scale_cooldown_ms, (double)cool_left / 1000, figs);
        else {
            d->action = LAPSE_AUTOSCALE_SPLIT;
            d->to = to;
            snprintf(d->reason, sizeof d->reason,
                     "split %u -> %u: %s for %.1f s (every reading of up_window_ms %d, %zu "
                     "readings); %s; cooldown over (%.1f s since the last change)",
                     cur->shards, to, why, (double)hot / 1000, cfg->scale_up_window_ms, hot_n, figs,
                     (double)since / 1000);
        }
        return;
    }
    if (cold >= 0) {
        uint32_t to = cur->shards / 2;
        if (cold < cfg->scale_down_window_ms)
            snprintf(d->reason, sizeof d->reason,
                     "no change: below every down threshold for %.1f s of down_window_ms %d "
                     "(%zu readings); %s",
                     (double)cold / 1000, cfg->scale_down_window_ms, cold_n, figs);
        else if (cur->shards <= 1 || to < (uint32_t)cfg->scale_min_shards)
            snprintf(d->reason, sizeof d->reason,
                     "no change: below every down threshold for %.1f s, but %u shards is "
                     "min_shards %d; %s",
                     (double)cold / 1000, cur->shards, cfg->scale_min_shards, figs);
        else if (cool_left > 0)
            snprintf(d->reason, sizeof d->reason,
                     "no change: below every down threshold for %.1f s, but cooldown_ms %d: "
                     "%.1f s left; %s",
                     (double)cold / 1000, cfg->scale_cooldown_ms, (double)cool_left / 1000, figs);
        else {
            d->action = LAPSE_AUTOSCALE_MERGE;
            d->to = to;
            snprintf(d->reason, sizeof d->reason,
                     "merge %u -> %u: below every down threshold for %.1f s (every reading of "
                     "down_window_ms %d, %zu readings); %s; cooldown over (%.1f s since the last "
                     "change)",
                     cur->shards, to, (double)cold / 1000, cfg->scale_down_window_ms, cold_n, figs,
                     (double)since / 1000);
        }
        return;
    }
    warm_figures(cfg, cur, why, sizeof why);
    snprintf(d->reason, sizeof d->reason, "no change: within the thresholds (merge held by %s); %s",
             why, figs);
}

size_t lapse_autoscale_keep_from(const struct lapse_config *cfg,
                                 const struct lapse_autoscale_reading *h, size_t n, int64_t now_ms)
{
    int64_t span = cfg->scale_up_window_ms > cfg->scale_down_window_ms ? cfg->scale_up_window_ms
                                                                       : cfg->scale_down_window_ms;
    span += 2 * (int64_t)cfg->scale_interval_ms;
    size_t i = 0;
    while (i + 1 < n && h[i].at_ms < now_ms - span)
        i++;
    return i;
}
