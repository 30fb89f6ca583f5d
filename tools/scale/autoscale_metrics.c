/* autoscale_metrics — see autoscale_metrics.h. */
#include "autoscale_metrics.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "prom.h"

void lapse_autoscale_metrics_init(struct lapse_autoscale_metrics *m, const char *ns, int dry_run)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
    m->ns = ns;
    m->dry_run = dry_run;
}

void lapse_autoscale_metrics_destroy(struct lapse_autoscale_metrics *m)
{
    pthread_mutex_destroy(&m->lock);
}

void lapse_autoscale_metrics_reading(struct lapse_autoscale_metrics *m,
                                     const struct lapse_autoscale_reading *r)
{
    pthread_mutex_lock(&m->lock);
    m->last = *r;
    m->have = 1;
    m->readings++;
    if (!r->ok)
        m->reading_errors++;
    pthread_mutex_unlock(&m->lock);
}

void lapse_autoscale_metrics_decision(struct lapse_autoscale_metrics *m,
                                      enum lapse_autoscale_action a, int failed)
{
    pthread_mutex_lock(&m->lock);
    if ((size_t)a < sizeof m->decisions / sizeof m->decisions[0])
        m->decisions[a]++;
    if (failed)
        m->action_errors++;
    pthread_mutex_unlock(&m->lock);
}

/* One sample of a family of its own. */
static void one(struct lapse_prom *o, const char *labels, const char *name, const char *type,
                const char *help, double v)
{
    lapse_prom_family(o, name, type, help);
    lapse_prom_printf(o, "%s{%s} %.15g\n", name, labels, v);
}

int lapse_autoscale_metrics_render(struct lapse_autoscale_metrics *m, char *buf, size_t size)
{
    struct lapse_prom o;
    lapse_prom_init(&o, buf, size);
    char ns[2 * 64 + 1], labels[160];
    lapse_prom_escape(ns, sizeof ns, m->ns);
    snprintf(labels, sizeof labels, "ns=\"%s\"", ns);
    pthread_mutex_lock(&m->lock);
    const struct lapse_autoscale_reading *r = &m->last;
    one(&o, labels, "lapse_autoscale_dry_run", "gauge",
        "1 when the scaler runs with --dry-run: it says what it would do and changes nothing.",
        m->dry_run);
    one(&o, labels, "lapse_autoscale_readings_total", "counter", "Readings of the figures taken.",
        (double)m->readings);
    one(&o, labels, "lapse_autoscale_reading_errors_total", "counter",
        "Readings that missed a shard or a node (they count for no window).",
        (double)m->reading_errors);
    lapse_prom_family(&o, "lapse_autoscale_decisions_total", "counter",
                      "Decisions taken (with --dry-run: that it would take), by action.");
    for (int a = LAPSE_AUTOSCALE_SPLIT; a <= LAPSE_AUTOSCALE_FINISH; a++)
        lapse_prom_printf(&o, "lapse_autoscale_decisions_total{%s,action=\"%s\"} %llu\n", labels,
                          lapse_autoscale_action_name((enum lapse_autoscale_action)a),
                          (unsigned long long)m->decisions[a]);
    one(&o, labels, "lapse_autoscale_action_errors_total", "counter",
        "Splits, merges and finishes the scaler started that failed (tried again).",
        (double)m->action_errors);
    if (m->have && r->shards) {
        one(&o, labels, "lapse_autoscale_shards", "gauge", "The layout's shard count.", r->shards);
        one(&o, labels, "lapse_autoscale_changing", "gauge",
            "1 while a split or merge is under way, else 0.", r->changing);
        one(&o, labels, "lapse_autoscale_due_per_second_per_shard", "gauge",
            "IDs due within the next minute, per second and shard (mean), at the last reading.",
            r->due_per_s);
        one(&o, labels, "lapse_autoscale_pending_per_shard", "gauge",
            "Pending IDs per shard (mean), at the last reading.", r->pending);
        one(&o, labels, "lapse_autoscale_oldest_overdue_seconds", "gauge",
            "Age of the oldest overdue ID of a shard with an active scanner; 0 when none is due.",
            r->overdue_ms > 0 ? (double)r->overdue_ms / 1000 : 0);
        if (r->memory_pct >= 0)
            one(&o, labels, "lapse_autoscale_redis_memory_percent", "gauge",
                "The fullest node's used_memory in % of its maxmemory.", r->memory_pct);
        if (r->cpu_pct >= 0)
            one(&o, labels, "lapse_autoscale_redis_cpu_percent", "gauge",
                "The busiest node's Redis CPU (system + user) in % of one core, between the "
                "last two readings.",
                r->cpu_pct);
        if (r->busy >= 0)
            one(&o, labels, "lapse_autoscale_scanner_busy_ratio", "gauge",
                "The busiest scanner's busy fraction between the last two readings "
                "(scale.scanner_hosts).",
                r->busy);
        if (r->lateness_p99_ms >= 0) {
            const char *name = "lapse_autoscale_scanner_lateness_p99_seconds";
            lapse_prom_family(&o, name, "gauge",
                              "The worst scanner's lateness p99 between the last two readings "
                              "(a bucket's upper bound; +Inf above the last).");
            if (r->lateness_p99_ms == INT64_MAX)
                lapse_prom_printf(&o, "%s{%s} +Inf\n", name, labels);
            else
                lapse_prom_printf(&o, "%s{%s} %.3f\n", name, labels,
                                  (double)r->lateness_p99_ms / 1000);
        }
        if (r->scanners_read + r->scanners_unread)
            one(&o, labels, "lapse_autoscale_scanners_unread", "gauge",
                "Shards whose scanner's /metrics did not answer at the last reading.",
                r->scanners_unread);
    }
    pthread_mutex_unlock(&m->lock);
    return lapse_prom_end(&o);
}

static int render_cb(void *ctx, char *buf, size_t size)
{
    return lapse_autoscale_metrics_render(ctx, buf, size);
}

static int ready_cb(void *ctx, char *why, size_t size)
{
    struct lapse_autoscale_metrics *m = ctx;
    pthread_mutex_lock(&m->lock);
    int ok = m->have && m->last.ok;
    if (!ok)
        snprintf(why, size, "%s", !m->have ? "no reading yet" : m->last.why);
    pthread_mutex_unlock(&m->lock);
    return ok;
}

lapse_httpd *lapse_autoscale_metrics_serve(struct lapse_autoscale_metrics *m, const char *bind,
                                           int port, char *errstr, size_t size)
{
    struct lapse_httpd_handlers h = {render_cb, ready_cb, m};
    return lapse_httpd_start(bind, port, &h, errstr, size);
}
