/* metrics — see metrics.h. */
#include "metrics.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "httpd.h"
#include "prom.h"

const int64_t lapse_lateness_bounds[LAPSE_LATENESS_BUCKETS] = {1,   2,   5,    10,   20,    50,
                                                               100, 250, 1000, 5000, 30000, 300000};

/* The lateness histogram as prom.h reads and counts it: ms. */
static struct lapse_prom_hist lateness_hist(struct lapse_metrics *m)
{
    return (struct lapse_prom_hist){lapse_lateness_bounds, LAPSE_LATENESS_BUCKETS, 1000,
                                    m->lateness, &m->lateness_sum_ms};
}

void lapse_metrics_lateness(struct lapse_metrics *m, int64_t late_ms)
{
    struct lapse_prom_hist h = lateness_hist(m);
    lapse_prom_observe(&h, late_ms);
}

#define LOAD(x) ((long long)atomic_load_explicit(&(x), memory_order_relaxed))

/* One family with one sample labelled {ns, shard}. */
static void one(struct lapse_prom *o, const char *labels, const char *name, const char *type,
                const char *help, long long v)
{
    lapse_prom_family(o, name, type, help);
    lapse_prom_printf(o, "%s{%s} %lld\n", name, labels, v);
}

int lapse_metrics_render(struct lapse_metrics *m, char *buf, size_t size)
{
    struct lapse_prom o;
    char ns[256], labels[320];
    lapse_prom_init(&o, buf, size);
    lapse_prom_escape(ns, sizeof ns, m->ns);
    snprintf(labels, sizeof labels, "ns=\"%s\",shard=\"%u\"", ns, m->shard);
#define C(n, help, f) one(&o, labels, "lapse_scanner_" n, "counter", help, LOAD(m->f))
#define G(n, help, f) one(&o, labels, "lapse_scanner_" n, "gauge", help, LOAD(m->f))
    C("claimed_total", "IDs claimed for dispatch.", claimed);
    C("events_produced_total", "Events handed to Kafka.", sent);
    C("events_acked_total", "Events Kafka acknowledged.", acked);
    C("events_failed_total", "Events Kafka gave up on; claimed again later.", failed);
    C("settled_total", "Acknowledged IDs removed or re-armed in Redis.", settled);
    G("inflight", "Events sent and not yet answered by Kafka.", inflight);
    G("due", "Due IDs left in the shard after the last claim (backlog).", due);
    G("lease_held", "1 while this scanner is the shard's active scanner.", lease_held);
    C("takeovers_total", "Times this scanner became the active one.", takeovers);
    C("recovered_total", "In-flight IDs taken back from a previous holder.", recovered);
    C("fenced_total", "Times this scanner found its lease lost.", fenced);
    C("redis_errors_total", "Failed Redis calls.", redis_errors);
    C("redis_reconnects_total", "Redis reconnections.", redis_reconnects);
    G("redis_up", "1 if the shard's Redis answered the last call, else 0.", redis_up);
    C("kafka_errors_total", "Kafka client errors (brokers down, timeouts).", kafka_errors);
    C("naps_total", "Idle naps begun: nothing in flight, nothing due within the poll interval.",
      naps);
    C("woken_total", "Naps ended by a write that landed before the next deadline.", woken);
    G("splitting", "1 while the layout this scanner follows is splitting, else 0.", splitting);
    G("merging", "1 while the layout this scanner follows is merging, else 0.", merging);
    G("layout_epoch", "Epoch of the layout this scanner follows.", layout_epoch);
    C("written_past_due_total",
      "Events of IDs written with a deadline already past; their lateness counts from when "
      "the scanner could first have seen them.",
      written_past_due);
    C("recovered_events_total", "\"recovered\" events handed to Kafka.", recovered_sent);
    C("bad_records_total",
      "Recovered events whose record was unreadable (not written by lapse); sent with zeros.",
      bad_records);
    C("offline_forgotten_total",
      "Offline IDs forgotten after scanner.offline_retention_s without coming back.",
      offline_forgotten);
#undef C
#undef G
    lapse_prom_family(&o, "lapse_scanner_busy_seconds_total", "counter",
                      "Time the loop worked while holding the shard: its passes less their "
                      "waits (for Kafka or the next deadline, the idle nap). Its rate is the "
                      "busy fraction: near 1, no headroom for a burst.");
    lapse_prom_printf(&o, "lapse_scanner_busy_seconds_total{%s} %.6f\n", labels,
                      (double)LOAD(m->busy_us) / 1e6);
    lapse_prom_family(&o, "lapse_scanner_oldest_overdue_seconds", "gauge",
                      "Age of the oldest due ID after the last claim; 0 when none is due.");
    lapse_prom_printf(&o, "lapse_scanner_oldest_overdue_seconds{%s} %.3f\n", labels,
                      (double)LOAD(m->oldest_overdue_ms) / 1000.0);

    static const struct {
        const char *name, *help;
        size_t off;
    } mem[] = {
        {"lapse_scanner_redis_memory_used_bytes", "used_memory of the shard's Redis primary.",
         offsetof(struct lapse_metrics, memory_used)},
        {"lapse_scanner_redis_memory_max_bytes",
         "maxmemory of the shard's Redis primary; 0 when it has none.",
         offsetof(struct lapse_metrics, memory_max)},
        {"lapse_scanner_redis_evicting",
         "1 if the maxmemory-policy of the shard's Redis evicts keys (deadlines may be lost), "
         "0 under noeviction.",
         offsetof(struct lapse_metrics, evicting)},
        {"lapse_scanner_offline",
         "IDs of the shard whose timeout fired with recovery on and that have not come back.",
         offsetof(struct lapse_metrics, offline)},
        {"lapse_scanner_redis_replicas", "Replicas connected to the shard's Redis primary.",
         offsetof(struct lapse_metrics, replicas)},
        {"lapse_scanner_redis_replicas_missing",
         "How many replicas the shard's Redis primary lacks for redis.wait_replicas (its writes "
         "cannot be confirmed while above 0); absent when wait_replicas is 0.",
         offsetof(struct lapse_metrics, replicas_missing)},
    };
    for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++) { /* absent while unknown */
        long long v = LOAD(*(atomic_int_fast64_t *)((char *)m + mem[i].off));
        if (v >= 0)
            one(&o, labels, mem[i].name, "gauge", mem[i].help, v);
    }

    struct lapse_prom_hist late = lateness_hist(m);
    lapse_prom_histogram(&o, "lapse_scanner_lateness_seconds",
                         "Time from an event's deadline (or, written past due, from when the "
                         "scanner could first have seen it) to its hand-over to Kafka.",
                         labels, &late);
    return lapse_prom_end(&o);
}

int lapse_metrics_ready(struct lapse_metrics *m, char *why, size_t size)
{
    if (!LOAD(m->attached)) {
        snprintf(why, size, "shard %u: layout not read yet (Redis unreachable?)", m->shard);
        return 0;
    }
    if (!LOAD(m->redis_up)) {
        snprintf(why, size, "shard %u: Redis unreachable", m->shard);
        return 0;
    }
    return 1; /* holding the lease, or standing by for it */
}

static int render_cb(void *ctx, char *buf, size_t size)
{
    return lapse_metrics_render(ctx, buf, size);
}

static int ready_cb(void *ctx, char *why, size_t size)
{
    return lapse_metrics_ready(ctx, why, size);
}

struct lapse_httpd *lapse_metrics_serve(struct lapse_metrics *m, const char *bind_addr, int port,
                                        char *errstr, size_t size)
{
    struct lapse_httpd_handlers h = {render_cb, ready_cb, m};
    return lapse_httpd_start(bind_addr, port, &h, errstr, size);
}
