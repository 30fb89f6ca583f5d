/* ingress_metrics — see ingress_metrics.h. */
#include "ingress_metrics.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "httpd.h"
#include "prom.h"

const int64_t lapse_apply_bounds[LAPSE_APPLY_BUCKETS] = {1,   3,   5,    10,   25,   50,    100,
                                                         250, 500, 1000, 2500, 5000, 10000, 30000};

static const char *const reasons[LAPSE_REJECT_COUNT] = {
    [LAPSE_REJECT_BAD_COMMAND] = "bad_command",     [LAPSE_REJECT_NO_RULE] = "no_rule",
    [LAPSE_REJECT_BAD_SIGNAL] = "bad_signal",       [LAPSE_REJECT_INVALID] = "invalid",
    [LAPSE_REJECT_REDIS_REFUSED] = "redis_refused",
};

struct lapse_ingress_metrics *lapse_ingress_metrics_new(const char *ns)
{
    struct lapse_ingress_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return NULL;
    }
    m->ns = ns;
    return m;
}

void lapse_ingress_metrics_free(struct lapse_ingress_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m->lag);
    free(m);
}

void lapse_ingress_metrics_reject(struct lapse_ingress_metrics *m, enum lapse_ingress_reject r)
{
    if ((unsigned)r < LAPSE_REJECT_COUNT)
        atomic_fetch_add_explicit(&m->rejected[r], 1, memory_order_relaxed);
}

static const char *const stages[LAPSE_STAGE_COUNT] = {
    [LAPSE_STAGE_FETCH] = "fetch", [LAPSE_STAGE_PARSE] = "parse", [LAPSE_STAGE_RULE] = "rule",
    [LAPSE_STAGE_WRITE] = "write", [LAPSE_STAGE_WAIT] = "wait",   [LAPSE_STAGE_COMMIT] = "commit",
};

void lapse_ingress_metrics_stage(struct lapse_ingress_metrics *m, enum lapse_ingress_stage s,
                                 uint64_t ns)
{
    if ((unsigned)s < LAPSE_STAGE_COUNT)
        atomic_fetch_add_explicit(&m->stage_ns[s], ns, memory_order_relaxed);
}

/* The apply-time histogram as prom.h reads and counts it: ms. */
static struct lapse_prom_hist apply_hist(struct lapse_ingress_metrics *m)
{
    return (struct lapse_prom_hist){lapse_apply_bounds, LAPSE_APPLY_BUCKETS, 1000, m->apply,
                                    &m->apply_sum_ms};
}

void lapse_ingress_metrics_apply(struct lapse_ingress_metrics *m, int64_t ms)
{
    struct lapse_prom_hist h = apply_hist(m);
    lapse_prom_observe(&h, ms);
}

void lapse_ingress_metrics_settled(struct lapse_ingress_metrics *m, const lapse_producer *p,
                                   uint64_t dead_lettered, uint64_t cmds, uint64_t signals,
                                   int64_t ms)
{
    struct lapse_producer_stats ps;
    atomic_fetch_add_explicit(&m->commands_applied, cmds, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->signals_extended, signals, memory_order_relaxed);
    lapse_ingress_metrics_apply(m, ms);
    lapse_producer_stats(p, &ps);
    atomic_store_explicit(&m->absorbed, ps.absorbed, memory_order_relaxed);
    atomic_store_explicit(&m->dead_lettered, dead_lettered, memory_order_relaxed);
}

void lapse_ingress_metrics_unconfirmed(struct lapse_ingress_metrics *m, const lapse_producer *p)
{
    pthread_mutex_lock(&m->lock);
    size_t n = 0;
    while (n < LAPSE_INGRESS_UNCONFIRMED_MAX &&
           lapse_producer_unconfirmed(p, n, m->unconfirmed[n], sizeof m->unconfirmed[n]))
        n++;
    m->nunconfirmed = n;
    pthread_mutex_unlock(&m->lock);
}

void lapse_ingress_metrics_probe(struct lapse_ingress_metrics *m, lapse_producer *p)
{
    uint64_t reconnects;
    int64_t now = lapse_clock_mono_ms();
    if (m->probe_ms && now - m->probe_ms < LAPSE_INGRESS_PROBE_MS)
        return;
    m->probe_ms = now;
    int down = lapse_producer_probe(p, &reconnects);
    if (down >= 0) {
        atomic_store_explicit(&m->redis_up, down == 0, memory_order_relaxed);
        atomic_store_explicit(&m->redis_reconnects, reconnects, memory_order_relaxed);
    }
}

/* An integer field of a stats object, or -1001 (librdkafka's "invalid"). */
static int64_t stat_int(const json_t *o, const char *name)
{
    const json_t *v = json_object_get(o, name);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1001;
}

/* Whether librdkafka fetches the partition for us: assigned and not being
 * stopped (an unassigned partition can stay in the stats for a while). */
static int fetching(const json_t *part)
{
    const char *st = json_string_value(json_object_get(part, "fetch_state"));
    return st && (strcmp(st, "active") == 0 || strcmp(st, "offset-query") == 0 ||
                  strcmp(st, "offset-wait") == 0);
}

int lapse_ingress_metrics_stats(struct lapse_ingress_metrics *m, const char *json, size_t len)
{
    json_t *root = json_loadb(json, len, 0, NULL);
    json_t *topics = json_object_get(root, "topics");
    if (!json_is_object(topics)) {
        json_decref(root);
        return -1;
    }
    size_t cap = 0, n = 0;
    struct lapse_ingress_lag *lag = NULL;
    const char *tname, *pname;
    json_t *t, *part;
    json_object_foreach(topics, tname, t)
    {
        json_object_foreach(json_object_get(t, "partitions"), pname, part)
        {
            int64_t p = stat_int(part, "partition");
            if (p < 0 || !fetching(part)) /* -1: librdkafka's internal UA partition */
                continue;
            int64_t v = stat_int(part, "consumer_lag");
            int64_t hi = stat_int(part, "ls_offset") >= 0 ? stat_int(part, "ls_offset")
                                                          : stat_int(part, "hi_offset");
            int64_t pos = stat_int(part, "app_offset");
            if (v < 0 && hi >= 0 && pos >= 0) /* nothing committed yet: what was consumed */
                v = hi > pos ? hi - pos : 0;
            if (v < 0)
                continue;
            if (n == cap) {
                size_t c = cap ? cap * 2 : 16;
                struct lapse_ingress_lag *l = realloc(lag, c * sizeof *l);
                if (!l) {
                    free(lag);
                    json_decref(root);
                    return -1;
                }
                lag = l, cap = c;
            }
            snprintf(lag[n].topic, sizeof lag[n].topic, "%s", tname);
            lag[n].partition = (int32_t)p;
            lag[n].lag = v;
            n++;
        }
    }
    json_decref(root);
    pthread_mutex_lock(&m->lock);
    struct lapse_ingress_lag *old = m->lag;
    m->lag = lag;
    m->nlag = n;
    pthread_mutex_unlock(&m->lock);
    free(old);
    return 0;
}

#define LOAD(x) ((long long)atomic_load_explicit(&(x), memory_order_relaxed))

int lapse_ingress_metrics_render(struct lapse_ingress_metrics *m, char *buf, size_t size)
{
    struct lapse_prom o;
    char ns[256], labels[300];
    lapse_prom_init(&o, buf, size);
    lapse_prom_escape(ns, sizeof ns, m->ns);
    snprintf(labels, sizeof labels, "ns=\"%s\"", ns);
#define ONE(n, type, help, f)                                                        \
    do {                                                                             \
        lapse_prom_family(&o, "lapse_ingress_" n, type, help);                       \
        lapse_prom_printf(&o, "lapse_ingress_" n "{%s} %lld\n", labels, LOAD(m->f)); \
    } while (0)
    ONE("messages_total", "counter", "Messages taken from Kafka (a batch read again counts again).",
        messages);
    ONE("commands_applied_total", "counter", "Command messages whose writes were applied.",
        commands_applied);
    ONE("signals_extended_total", "counter",
        "Signals turned into an applied extend (absorbed ones too).", signals_extended);
    ONE("absorbed_total", "counter",
        "Extends absorbed by producer slack: covered by an earlier write, none sent.", absorbed);
    ONE("dead_lettered_total", "counter",
        "Copies of messages not understood acknowledged by the dead-letter topic.", dead_lettered);
    lapse_prom_family(&o, "lapse_ingress_rejected_total", "counter",
                      "Messages not understood, by reason.");
    for (int r = 0; r < LAPSE_REJECT_COUNT; r++)
        lapse_prom_printf(&o, "lapse_ingress_rejected_total{%s,reason=\"%s\"} %lld\n", labels,
                          reasons[r], LOAD(m->rejected[r]));
    lapse_prom_family(&o, "lapse_ingress_stage_seconds_total", "counter",
                      "Time the consuming thread spent in each stage: fetch (the consumer's "
                      "poll), parse, rule, write (handing ops to the producer), wait (until a "
                      "batch's writes are applied), commit.");
    for (int s = 0; s < LAPSE_STAGE_COUNT; s++)
        lapse_prom_printf(&o, "lapse_ingress_stage_seconds_total{%s,stage=\"%s\"} %.6f\n", labels,
                          stages[s], (double)LOAD(m->stage_ns[s]) / 1e9);
    ONE("fetch_kicks_total", "counter",
        "Times the Kafka fetcher was woken after the consumer's queue drained, so a "
        "backlog is read on without librdkafka's one-second pause.",
        fetch_kicks);
    ONE("redis_errors_total", "counter",
        "Batches not applied because Redis was unreachable or answered \"not now\".", redis_errors);
    ONE("redis_reconnects_total", "counter", "Redis reconnections.", redis_reconnects);
    ONE("redis_up", "gauge", "1 if Redis answered the last write or probe, else 0.", redis_up);
#undef ONE
    lapse_prom_family(&o, "lapse_ingress_consumer_lag", "gauge",
                      "Messages of an assigned partition not committed yet: high watermark "
                      "minus committed offset.");
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->nlag; i++) {
        char topic[600];
        lapse_prom_escape(topic, sizeof topic, m->lag[i].topic);
        lapse_prom_printf(&o, "lapse_ingress_consumer_lag{%s,topic=\"%s\",partition=\"%d\"} %lld\n",
                          labels, topic, (int)m->lag[i].partition, (long long)m->lag[i].lag);
    }
    pthread_mutex_unlock(&m->lock);
    lapse_prom_family(&o, "lapse_ingress_primary_replicas_missing", "gauge",
                      "1 for each Redis primary whose WAIT saw fewer replicas than "
                      "redis.wait_replicas: its writes cannot be confirmed and are not committed.");
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->nunconfirmed; i++) {
        char primary[600];
        lapse_prom_escape(primary, sizeof primary, m->unconfirmed[i]);
        lapse_prom_printf(&o, "lapse_ingress_primary_replicas_missing{%s,primary=\"%s\"} 1\n",
                          labels, primary);
    }
    pthread_mutex_unlock(&m->lock);

    struct lapse_prom_hist apply = apply_hist(m);
    lapse_prom_histogram(&o, "lapse_ingress_batch_apply_seconds",
                         "Time from a batch's first message to its writes applied.", labels,
                         &apply);
    return lapse_prom_end(&o);
}

int lapse_ingress_metrics_ready(struct lapse_ingress_metrics *m, char *why, size_t size)
{
    if (!LOAD(m->consuming)) {
        snprintf(why, size, "ingress: not consuming (starting, stopping, or a fatal Kafka error)");
        return 0;
    }
    if (!LOAD(m->redis_up)) {
        snprintf(why, size, "ingress: Redis unreachable");
        return 0;
    }
    return 1;
}

static int render_cb(void *ctx, char *buf, size_t size)
{
    return lapse_ingress_metrics_render(ctx, buf, size);
}

static int ready_cb(void *ctx, char *why, size_t size)
{
    return lapse_ingress_metrics_ready(ctx, why, size);
}

struct lapse_httpd *lapse_ingress_metrics_serve(struct lapse_ingress_metrics *m, const char *bind,
                                                int port, char *errstr, size_t size)
{
    struct lapse_httpd_handlers h = {render_cb, ready_cb, m};
    return lapse_httpd_start(bind, port, &h, errstr, size);
}
