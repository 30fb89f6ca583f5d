/*
 * autoscale_run — see autoscale_run.h.
 *
 * Invariants:
 *  - one step at a time: a split or merge is started only on a stable
 *    layout, and the next reading (which sees it under way) finishes it;
 *  - the cooldown counts from the end of the last change this process
 *    made or finished, and from its own start (it cannot know when the
 *    last change was); with --dry-run, from the decision it would have
 *    carried out, whose windows start again too: it says each decision
 *    when it would take it;
 *  - every wait is bounded and ends at once on SIGTERM/SIGINT; a change
 *    that fails is logged and tried again later (a split or merge after the
 *    cooldown, a finish at the next reading).
 */
#include "autoscale_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoscale.h"
#include "autoscale_metrics.h"
#include "autoscale_read.h"
#include "autoscale_scrape.h"
#include "clock.h"
#include "httpd.h"
#include "log.h"
#include "resize.h"
#include "stop.h"

/* Readings kept: the longer window at the shortest interval, and some. */
#define HISTORY_MAX 4096

/* The reading's figures in one debug line. */
static void log_reading(const struct lapse_autoscale_reading *r)
{
    if (!r->ok) {
        log_warn("autoscale: reading not complete: %s", r->why);
        return;
    }
    log_debug("autoscale: reading: %u shards%s, due/s per shard %.1f, pending per shard %.0f, "
              "oldest overdue %lld ms, memory %.0f %%, Redis CPU %.0f %%, scanner busy %.0f %%, "
              "lateness p99 %lld ms (-1: unknown; %u scanners read, %u not)",
              r->shards, r->changing ? (r->merging ? " (merging)" : " (splitting)") : "",
              r->due_per_s, r->pending, (long long)r->overdue_ms, r->memory_pct, r->cpu_pct,
              r->busy >= 0 ? r->busy * 100 : -1, (long long)r->lateness_p99_ms, r->scanners_read,
              r->scanners_unread);
}

/*
 * The scanners not read, said at warn when the set changes and at most once
 * a minute while it stays the same (a scanner down for an hour is a line a
 * minute, not one per reading); said again at info when all answer.
 */
struct unread_log {
    char last[1024]; /* what was said last ("" when all answered) */
    int64_t at_ms;   /* when (monotonic) */
};

static void log_unread(struct unread_log *u, const char *unread, uint32_t n, uint32_t of,
                       int64_t now)
{
    if (!unread[0]) {
        if (u->last[0])
            log_info("autoscale: every scanner answered again (%u)", of);
        u->last[0] = '\0';
        return;
    }
    if (strcmp(unread, u->last) == 0 && now - u->at_ms < 60000)
        return;
    log_warn("autoscale: %u of %u scanners not read (their figures left to the others; the "
             "Redis figures stand): %s",
             n, of, unread);
    snprintf(u->last, sizeof u->last, "%s", unread);
    u->at_ms = now;
}

/* Carries decision d out. 0, or the failing command's status. */
static int act(const struct lapse_config *cfg, lapse_redis **nodes,
               const struct lapse_autoscale_decision *d)
{
    int rc = 0;
    switch (d->action) {
    case LAPSE_AUTOSCALE_SPLIT:
        rc = scale_split(cfg, nodes, NULL, cfg->scale_start_cmd);
        break;
    case LAPSE_AUTOSCALE_MERGE:
        rc = scale_merge(cfg, nodes, cfg->scale_stop_cmd);
        break;
    case LAPSE_AUTOSCALE_FINISH:
        rc = scale_finish(cfg, nodes, 1, cfg->scale_drain_rate);
        break;
    default:
        break;
    }
    fflush(stdout);
    return rc;
}

/* Waits until monotonic time `until`, in slices, ending early on a stop. */
static void wait_until(int64_t until)
{
    int64_t now;
    while (!lapse_stop && (now = lapse_clock_mono_ms()) < until)
        lapse_clock_sleep_ms(until - now > 200 ? 200 : (int)(until - now));
}

/* Where each shard's scanner was found, when that changed (at start, after
 * a takeover by a scanner on another host): which host is read is no
 * guess for the operator. */
static void log_hosts(const struct lapse_config *cfg, struct lapse_autoscale_scanners *sc)
{
    for (uint32_t i = 0; i < sc->shards; i++) {
        if (sc->host[i] < 0 || sc->host[i] == sc->said[i])
            continue;
        log_info("autoscale: shard %u: scanner read on %s port %d", i,
                 cfg->scale_scanner_hosts[sc->host[i]], cfg->scanner_metrics_port + (int)i);
        sc->said[i] = sc->host[i];
    }
}

int lapse_scale_autoscale(const struct lapse_config *cfg, lapse_redis **nodes, int dry_run)
{
    lapse_log_init("lapse-scale", cfg->log_level);
    if (cfg->scale_metrics_port && !lapse_httpd_addr_ok(cfg->scale_metrics_bind)) {
        fprintf(stderr, "%s: scale.metrics_bind: \"%s\" is not an IPv4 or IPv6 address\n",
                cfg->path, cfg->scale_metrics_bind);
        return 2;
    }
    if (cfg->nscale_scanner_hosts && !cfg->scanner_metrics_port) {
        fprintf(stderr,
                "%s: scale.scanner_hosts is set but scanner.metrics_port is 0: the scanners "
                "serve no figures (set scanner.metrics_port, or remove scanner_hosts)\n",
                cfg->path);
        return 2;
    }
    lapse_stop_on_signals(1);
    struct lapse_autoscale_reading *h = calloc(HISTORY_MAX, sizeof *h);
    struct lapse_autoscale_cpu cpu = {0};
    struct lapse_autoscale_scanners scanners = {0};
    struct unread_log unread_said = {0};
    if (!h || lapse_autoscale_cpu_init(&cpu, cfg->nnodes) < 0) {
        fprintf(stderr, "lapse-scale: out of memory\n");
        free(h);
        return 1;
    }
    struct lapse_autoscale_metrics m;
    lapse_autoscale_metrics_init(&m, cfg->ns, dry_run);
    lapse_httpd *httpd = NULL;
    int httpd_said = 0;
    log_info("autoscale: started%s: every %d ms; split when hot for %d ms, merge when cold for "
             "%d ms, cooldown %d ms, %d..%d shards; scanners' figures %s",
             dry_run ? " (dry run: changes nothing)" : "", cfg->scale_interval_ms,
             cfg->scale_up_window_ms, cfg->scale_down_window_ms, cfg->scale_cooldown_ms,
             cfg->scale_min_shards, cfg->scale_max_shards,
             cfg->nscale_scanner_hosts ? "read (scale.scanner_hosts)"
                                       : "not read (no scale.scanner_hosts)");

    size_t n = 0;
    int64_t last_change = lapse_clock_mono_ms();
    struct lapse_autoscale_decision said = {0}; /* --dry-run: the last decision */
    while (!lapse_stop) {
        int64_t now = lapse_clock_mono_ms();
        if (cfg->scale_metrics_port && !httpd) {
            char err[256];
            httpd = lapse_autoscale_metrics_serve(&m, cfg->scale_metrics_bind,
                                                  cfg->scale_metrics_port, err, sizeof err);
            if (httpd)
                log_info("autoscale: metrics on http://%s:%d/metrics", cfg->scale_metrics_bind,
                         cfg->scale_metrics_port);
            else if (!httpd_said++)
                log_warn("autoscale: %s; metrics are off (scaling goes on), trying again at "
                         "each reading",
                         err);
        }
        size_t keep = lapse_autoscale_keep_from(cfg, h, n, now);
        if (n == HISTORY_MAX && keep == 0)
            keep = 1;
        memmove(h, h + keep, (n - keep) * sizeof *h);
        n -= keep;
        lapse_autoscale_read(cfg, nodes, &cpu, now, &h[n]);
        char unread[1024];
        lapse_autoscale_scanners_read(cfg, &scanners, now, &h[n], unread, sizeof unread);
        if (cfg->nscale_scanner_hosts) {
            log_unread(&unread_said, unread, h[n].scanners_unread,
                       h[n].scanners_read + h[n].scanners_unread, now);
            log_hosts(cfg, &scanners);
        }
        log_reading(&h[n]);
        lapse_autoscale_metrics_reading(&m, &h[n]);
        n++;

        struct lapse_autoscale_decision d;
        lapse_autoscale_decide(cfg, h, n, last_change, now, &d);
        if (d.action == LAPSE_AUTOSCALE_NONE) {
            log_debug("autoscale: %s", d.reason);
        } else if (dry_run) {
            /* a finish is said once per change under way; a split or a
             * merge as if carried out: its windows and cooldown start again */
            if (d.action != LAPSE_AUTOSCALE_FINISH || d.from != said.from || d.to != said.to) {
                log_info("autoscale: would %s", d.reason);
                printf("autoscale: would %s\n", d.reason);
                fflush(stdout);
                lapse_autoscale_metrics_decision(&m, d.action, 0);
            }
            said = d;
            if (d.action != LAPSE_AUTOSCALE_FINISH) {
                last_change = now;
                n = 0;
            }
        } else {
            log_info("autoscale: %s", d.reason);
            int rc = act(cfg, nodes, &d);
            lapse_autoscale_metrics_decision(&m, d.action, rc != 0);
            if (rc != 0)
                log_warn("autoscale: %s %u -> %u failed (status %d); tried again later",
                         lapse_autoscale_action_name(d.action), d.from, d.to, rc);
            else if (d.action == LAPSE_AUTOSCALE_FINISH)
                log_info("autoscale: %s %u -> %u finished; cooldown_ms %d from now",
                         d.from > d.to ? "merge" : "split", d.from, d.to, cfg->scale_cooldown_ms);
            last_change = lapse_clock_mono_ms();
        }
        wait_until(now + cfg->scale_interval_ms);
    }
    log_info("autoscale: stopping (signal)%s", n && h[n - 1].changing
                                                   ? "; the change under way is finished by the "
                                                     "next run, or by lapse-scale finish --drain"
                                                   : "");
    lapse_httpd_stop(httpd);
    lapse_autoscale_metrics_destroy(&m);
    lapse_autoscale_cpu_free(&cpu);
    lapse_autoscale_scanners_free(&scanners);
    free(h);
    return 0;
}
