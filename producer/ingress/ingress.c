/*
 * ingress — the --from-kafka consumer loop (see ingress.h for the rules):
 * the consumer and its callbacks, and each message taken into the batch,
 * submitted to the producer library with its index in the batch as the tag
 * or marked "not understood". What a batch is and how it is settled,
 * committed or read again is ingress_batch.c, which keeps the commit rule's
 * invariants; calls go from here into it, never back.
 *
 * Logging of what input can trigger is rate-limited.
 */
#include "ingress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "backoff.h"
#include "clock.h"
#include "command.h"
#include "deadletter.h"
#include "flatjson.h"
#include "hash.h"
#include "httpd.h"
#include "ingress_priv.h"
#include "ingress_metrics.h"
#include "kafka.h"
#include "log.h"
#include "watchdog.h"

#define POLL_IDLE_MS 100     /* longest consumer wait: how soon a stop is seen */
#define BACKOFF_MIN_MS 200   /* first wait before reading a failed batch again */
#define BACKOFF_MAX_MS 5000  /* the back-off doubles up to this */
#define STATS_EVERY_MS 60000 /* a counters line at most this often, when they moved */
#define HOLD_BATCHES 32      /* producer.batch messages uncommitted at most, times this */
#define READ_MAX 1024        /* messages taken from librdkafka's queue in one call */
#define PREFETCH_AHEAD 8     /* messages between a slack prefetch and its lookup */
#define QUEUED_MIN "20000"   /* queued.min.messages, unless ingress.properties says */

/* ---------------------------------------------------------------- setup */

/* Client errors: most also reach on_kafka_log, so only the two that do not
 * (and matter) are logged here. Runs in our thread (from a poll). */
static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    lapse_ingress *ing = opaque;
    (void)rk;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        ing->fatal = 1;
        log_error("ingress: kafka: fatal: %s", reason);
    } else if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        lapse_log_limited(&ing->lim_kafka, LOG_PER_SEC, LAPSE_LOG_WARN, "ingress: kafka: %s",
                          reason);
    }
}

/* librdkafka's own log lines, routed through the log queue (log.queue) so
 * they arrive in our thread: warnings and worse as warn, the rest as debug. */
static void on_kafka_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    lapse_ingress *ing = rd_kafka_opaque(rk);
    if (level <= 4)
        lapse_log_limited(&ing->lim_kafka, LOG_PER_SEC, LAPSE_LOG_WARN, "ingress: kafka: %s: %s",
                          fac, buf);
    else
        log_debug("ingress: kafka: %s: %s", fac, buf);
}

static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    lapse_ingress *ing = opaque;
    (void)rk;
    (void)offsets;
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) /* a later commit covers it */
        lapse_log_limited(&ing->lim_kafka, LOG_PER_SEC, LAPSE_LOG_WARN,
                          "ingress: commit failed: %s", rd_kafka_err2str(err));
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque);

/* librdkafka's statistics (statistics.interval.ms, set with metrics_port):
 * the consumer lag per partition. Served by our poll, in our thread. */
static int on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
    lapse_ingress *ing = opaque;
    (void)rk;
    lapse_ingress_metrics_stats(ing->metrics, json, len);
    return 0; /* librdkafka frees json */
}

/* Sets `props` in order; "FILE: WHAT: NAME: reason" on error. */
static int conf_set_all(rd_kafka_conf_t *conf, const struct lapse_config *cfg, const char *what,
                        const struct lapse_kv *props, size_t n, char *errstr, size_t size)
{
    char why[256];
    for (size_t i = 0; i < n; i++)
        if (rd_kafka_conf_set(conf, props[i].key, props[i].value, why, sizeof why) !=
            RD_KAFKA_CONF_OK) {
            snprintf(errstr, size, "%s: %s: %s: %s", cfg->path, what, props[i].key, why);
            return -1;
        }
    return 0;
}

static rd_kafka_t *consumer_new(lapse_ingress *ing, char *errstr, size_t size)
{
    const struct lapse_config *cfg = ing->cfg;
    static const struct lapse_kv defaults[] = {
        {"auto.offset.reset", "earliest"}, /* a new group misses no signal */
        {"enable.partition.eof", "false"},
        {"log.queue", "true"},
        /* How long a crashed member's partitions go unread before the group
         * hands them on (librdkafka's 45 s would outlast many watchdog
         * timeouts; 10 s is above brokers' 6 s minimum), and on
         * lapse-kafka-dev how long a group waits after its last member
         * left: docs/operating.md, "What an ingress start and restart cost". */
        {"session.timeout.ms", "10000"},
        /* The prefetch: librdkafka fetches ahead until its queue holds this
         * many messages (counted over all partitions), then waits for a
         * wake-up that the kicker sends once the queue drained (kick.h).
         * Small, so the fetch thread reuses the memory the ingress frees
         * rather than faulting in fresh pages on the CPU Redis needs: a
         * 500,000-message backlog took 0.7-1.3 s of the ingress's CPU and
         * 105-140 MB of RSS with 300000 and no kicks, 0.5-0.8 s and
         * 30-60 MB with QUEUED_MIN (bench-ingress, 2026-11-29). */
        {"queued.min.messages", QUEUED_MIN},
        {"statistics.interval.ms", "1000"}, /* (with metrics_port only): the lag; last */
    };
    size_t ndefaults = sizeof defaults / sizeof defaults[0];
    if (!cfg->ingress_metrics_port)
        ndefaults--; /* no statistics */
    const struct lapse_kv forced[] = {
        /* the commit rule depends on these */
        {"group.id", cfg->ingress_group},
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
    };
    rd_kafka_conf_t *conf = lapse_kafka_conf(cfg, defaults, ndefaults, errstr, size);
    if (!conf)
        return NULL;
    if (conf_set_all(conf, cfg, "ingress.properties", cfg->ingress_props, cfg->ningress_props,
                     errstr, size) < 0 ||
        conf_set_all(conf, cfg, "ingress", forced, 3, errstr, size) < 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    char qmin[32];
    size_t qsize = sizeof qmin;
    ing->queued_min =
        rd_kafka_conf_get(conf, "queued.min.messages", qmin, &qsize) == RD_KAFKA_CONF_OK
            ? (size_t)strtoull(qmin, NULL, 10)
            : 100000; /* librdkafka's default */
    rd_kafka_conf_set_opaque(conf, ing);
    rd_kafka_conf_set_error_cb(conf, on_kafka_error);
    rd_kafka_conf_set_log_cb(conf, on_kafka_log);
    rd_kafka_conf_set_offset_commit_cb(conf, on_commit);
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    rd_kafka_conf_set_stats_cb(conf, on_stats);
    char why[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why);
    if (!rk) {
        snprintf(errstr, size, "ingress: cannot create the Kafka consumer: %s", why);
        rd_kafka_conf_destroy(conf); /* not taken on failure */
        return NULL;
    }
    rd_kafka_set_log_queue(rk, NULL); /* the main queue, which is the consumer's: */
    rd_kafka_poll_set_consumer(rk);   /* served by rd_kafka_consumer_poll */
    return rk;
}

static void destroy_message(void *m)
{
    rd_kafka_message_destroy(m);
}

lapse_ingress *lapse_ingress_new(const struct lapse_config *cfg, char *errstr, size_t size)
{
    if (lapse_config_check_ingress(cfg, errstr, size) < 0)
        return NULL;
    lapse_ingress *ing = calloc(1, sizeof *ing);
    if (!ing) {
        snprintf(errstr, size, "out of memory");
        return NULL;
    }
    ing->cfg = cfg;
    lapse_backoff_init(&ing->backoff, BACKOFF_MIN_MS, BACKOFF_MAX_MS);
    ing->stats_at = lapse_clock_mono_ms();
    ing->metrics = lapse_ingress_metrics_new(cfg->ns);
    ing->reaper = lapse_reaper_new(destroy_message);
    if (!ing->metrics || !ing->reaper)
        snprintf(errstr, size, "out of memory");
    if (!ing->metrics || !ing->reaper ||
        (cfg->ingress_metrics_port &&
         !(ing->httpd = lapse_ingress_metrics_serve(ing->metrics, cfg->ingress_metrics_bind,
                                                    cfg->ingress_metrics_port, errstr, size))) ||
        (ing->rk = consumer_new(ing, errstr, size)) == NULL ||
        (cfg->ingress_dead_letter_topic &&
         (ing->dlq = lapse_deadletter_new(cfg, errstr, size)) == NULL)) {
        lapse_ingress_free(ing);
        return NULL;
    }
    ing->queue = rd_kafka_queue_get_consumer(ing->rk);
    return ing;
}

void lapse_ingress_free(lapse_ingress *ing)
{
    if (!ing)
        return;
    ingress_release(ing);
    lapse_kick_free(ing->kick);
    lapse_reaper_free(ing->reaper); /* every message destroyed before the consumer is */
    ing->reaper = NULL;             /* a revoke in rd_kafka_destroy releases at once */
    free(ing->batch);
    free(ing->stamps);
    lapse_httpd_stop(ing->httpd); /* before what it reads goes */
    if (ing->revoked)
        rd_kafka_topic_partition_list_destroy(ing->revoked);
    if (ing->queue)
        rd_kafka_queue_destroy(ing->queue);
    if (ing->rk)
        rd_kafka_destroy(ing->rk);
    lapse_deadletter_free(ing->dlq, 1000);
    lapse_ingress_metrics_free(ing->metrics);
    free(ing);
}

void lapse_ingress_get_stats(const lapse_ingress *ing, struct lapse_ingress_stats *st)
{
    *st = ing->st;
    st->dead_lettered = ing->dlq ? lapse_deadletter_acked(ing->dlq) : 0;
}

/* ---------------------------------------------------------------- the batch */

/* Appends `m` to the batch and submits what it means (or marks it bad).
 * key_hash: lapse_hash of m's key, or NULL (not hashed yet). */
static void take(lapse_ingress *ing, rd_kafka_message_t *m, const uint64_t *key_hash)
{
    if (ingress_reserve(ing) < 0) { /* stop without committing it: read again after a restart */
        log_error("ingress: out of memory");
        rd_kafka_message_destroy(m);
        ing->fatal = 1;
        return;
    }
    size_t i = ing->n++;
    memset(&ing->batch[i], 0, sizeof ing->batch[i]);
    ing->batch[i].m = m;
    ing->batch[i].taken_ms = (int64_t)(ing->lap_ns / 1000000); /* (the fetch lap's end) */
    ing->st.messages++;
    M_INC(messages);

    char why[WHY_MAX], jerr[256] = "no value";
    /* A flat object is read in place (flatjson.h), anything else decoded
     * whole: the same verdict and reason either way. */
    struct lapse_flatjson flat;
    int is_flat = m->len && lapse_flatjson_scan(m->payload, m->len, &flat) == 0;
    json_t *j =
        m->len && !is_flat ? lapse_command_load(m->payload, m->len, jerr, sizeof jerr) : NULL;
    ingress_lap(ing, LAPSE_STAGE_PARSE);
    struct lapse_cmd cmd;
    struct lapse_watchdog_result wr; /* cmd may point into wr.idbuf: same scope */
    int rc, is_cmd = is_flat ? lapse_command_is_flat(&flat) : lapse_command_is(j);
    if (is_cmd) {
        rc = is_flat ? lapse_command_from_flat(&flat, &cmd, why, sizeof why)
                     : lapse_command_from_json(j, &cmd, why, sizeof why);
    } else {
        if (j && !json_is_object(j)) {
            json_decref(j);
            j = NULL;
            snprintf(jerr, sizeof jerr, "a JSON array, not an object");
        }
        rd_kafka_timestamp_type_t tstype;
        struct lapse_signal sig = {m->key,
                                   m->key_len,
                                   j,
                                   is_flat ? &flat : NULL,
                                   j || is_flat ? NULL : jerr,
                                   rd_kafka_message_timestamp(m, &tstype)};
        rc = lapse_watchdog_apply(ing->cfg->ingress_rules, ing->cfg->ningress_rules, &sig, &wr, why,
                                  sizeof why);
        cmd = wr.cmd;
    }
    if (rc < 0) {
        json_decref(j);
        ingress_mark_bad(ing, i, why,
                         is_cmd     ? LAPSE_REJECT_BAD_COMMAND
                         : rc == -2 ? LAPSE_REJECT_BAD_SIGNAL
                                    : LAPSE_REJECT_NO_RULE);
        ingress_lap(ing, LAPSE_STAGE_RULE);
        return;
    }
    /* (cmd.id may point into j) a device's signals are keyed by its ID:
     * its key's hash, taken for the prefetch, is the ID's */
    uint64_t id_hash =
        key_hash && m->key_len == cmd.id_len && memcmp(m->key, cmd.id, cmd.id_len) == 0
            ? *key_hash
            : lapse_hash(cmd.id, cmd.id_len);
    ingress_lap(ing, LAPSE_STAGE_RULE);
    rc = lapse_producer_submit_hashed(ing->p, &cmd, id_hash, ing->base + i, why, sizeof why);
    ingress_lap(ing, LAPSE_STAGE_WRITE);
    if (j) {
        json_decref(j); /* submit copied the bytes */
        ingress_lap(ing, LAPSE_STAGE_PARSE);
    }
    if (rc == 0 || rc == -2) {
        struct lapse_producer_stats ps;
        lapse_producer_stats(ing->p, &ps);
        ing->batch[i].submission = ps.submitted;
    }
    if (rc == 0) {
        ing->batch[i].kind = is_cmd ? 'c' : 's';
        ing->batch[i].id_hash = id_hash;
        if (is_cmd)
            ing->st.commands++;
        else
            ing->st.signals++;
        return;
    }
    /* -1: refused before queueing; -2: queued, and an automatic send failed
     * (this op's batch or one in flight before it: all of them hold only
     * messages not committed yet; each failed op was reported, its message
     * marked refused): settle now, which flushes first, so only the
     * partitions holding a failed message are read again. */
    if (rc == -1) {
        ingress_mark_bad(ing, i, why, LAPSE_REJECT_INVALID);
    } else {
        ing->batch[i].kind = is_cmd ? 'c' : 's';
        ing->batch[i].id_hash = id_hash;
        ing->send_failed = 1;
        snprintf(ing->send_why, sizeof ing->send_why, "%s", why);
    }
}

/* ---------------------------------------------------------------- the loop */

/* Partitions revoked during a read (read_some) whose messages, read in the
 * same call before the revoke, must not be taken: their next owner reads
 * them from the offset just committed. */
static void note_revoked(lapse_ingress *ing, const rd_kafka_topic_partition_list_t *parts)
{
    if (!ing->revoked)
        ing->revoked = rd_kafka_topic_partition_list_new(parts->cnt);
    for (int i = 0; i < parts->cnt; i++)
        rd_kafka_topic_partition_list_add(ing->revoked, parts->elems[i].topic,
                                          parts->elems[i].partition);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    lapse_ingress *ing = opaque;
    int coop = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    rd_kafka_error_t *e = NULL;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        log_info("ingress: %d partitions assigned", parts->cnt);
        if (coop)
            e = rd_kafka_incremental_assign(rk, parts);
        else
            rd_kafka_assign(rk, parts);
    } else {
        if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS && ing->p) {
            ing->in_rebalance = 1; /* applied work is committed before they go */
            ingress_settle(ing, 1);
            ing->in_rebalance = 0;
            note_revoked(ing, parts);
        } else if (err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
            log_warn("ingress: rebalance: %s", rd_kafka_err2str(err));
        }
        log_info("ingress: %d partitions revoked", parts->cnt);
        if (coop)
            e = rd_kafka_incremental_unassign(rk, parts);
        else
            rd_kafka_assign(rk, NULL);
    }
    if (e) {
        log_error("ingress: rebalance: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
}

static void log_stats(lapse_ingress *ing, int always)
{
    struct lapse_ingress_stats now;
    const struct lapse_ingress_stats *s = &now;
    lapse_ingress_get_stats(ing, &now);
    if (!always && (lapse_clock_mono_ms() - ing->stats_at < STATS_EVERY_MS ||
                    memcmp(s, &ing->st_logged, sizeof *s) == 0))
        return;
    log_info("ingress: %llu messages: %llu commands, %llu signals, %llu not understood "
             "(%llu dead-lettered); %llu batches committed, %llu read again",
             (unsigned long long)s->messages, (unsigned long long)s->commands,
             (unsigned long long)s->signals, (unsigned long long)s->rejected,
             (unsigned long long)s->dead_lettered, (unsigned long long)s->batches,
             (unsigned long long)s->retries);
    ing->st_logged = now;
    ing->stats_at = lapse_clock_mono_ms();
}

/* A consumer event that is not a message. */
static void consumer_error(lapse_ingress *ing, const rd_kafka_message_t *m)
{
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
        return;
    if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[256];
        rd_kafka_fatal_error(ing->rk, why, sizeof why);
        log_error("ingress: kafka: fatal: %s", why);
        ing->fatal = 1;
        return;
    }
    lapse_log_limited(&ing->lim_kafka, LOG_PER_SEC, LAPSE_LOG_WARN, "ingress: kafka: %s",
                      rd_kafka_message_errstr(m));
}

/* Drops the messages of msgs[0..got) whose partitions were revoked during
 * the batch call (ing->revoked): read before the revoke was served, they
 * were not taken, so the offset the revoke committed is theirs and their
 * partition's next owner reads them from it. A partition
 * assigned to us again within that call is sought back to its first
 * dropped message (its new fetch may already be in msgs). Returns the new
 * count. The rare path of a rebalance during a read. */
static size_t drop_revoked(lapse_ingress *ing, rd_kafka_message_t **msgs, size_t got)
{
    rd_kafka_topic_partition_list_t *rev = ing->revoked, *back = NULL, *now = NULL;
    ing->revoked = NULL;
    rd_kafka_assignment(ing->rk, &now);
    size_t kept = 0;
    for (size_t k = 0; k < got; k++) {
        rd_kafka_message_t *m = msgs[k];
        const char *topic = m->rkt ? rd_kafka_topic_name(m->rkt) : NULL;
        if (!topic || !rd_kafka_topic_partition_list_find(rev, topic, m->partition)) {
            msgs[kept++] = m;
            continue;
        }
        if (now && rd_kafka_topic_partition_list_find(now, topic, m->partition)) {
            if (!back)
                back = rd_kafka_topic_partition_list_new(4);
            rd_kafka_topic_partition_t *t =
                rd_kafka_topic_partition_list_find(back, topic, m->partition);
            if (!t)
                rd_kafka_topic_partition_list_add(back, topic, m->partition)->offset = m->offset;
            else if (m->offset < t->offset)
                t->offset = m->offset;
        }
        rd_kafka_message_destroy(m);
    }
    if (back && ingress_seek_back(ing, back) < 0)
        ing->fatal = 1; /* dropped and not read again: commit nothing more */
    if (now)
        rd_kafka_topic_partition_list_destroy(now);
    rd_kafka_topic_partition_list_destroy(rev);
    return kept;
}

/* Reads into msgs what the consumer has ready, up to READ_MAX: one call
 * for many messages costs librdkafka a third less CPU than a poll each
 * (tests/bench/ingress-run). With nothing held, waits up to POLL_IDLE_MS for
 * the first one only, so a lone message is taken at once. Returns how many
 * are in msgs. */
static size_t read_some(lapse_ingress *ing, rd_kafka_message_t **msgs)
{
    size_t got = 0;
    if (ing->n == ing->first) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(ing->rk, POLL_IDLE_MS);
        if (!m)
            return 0;
        msgs[got++] = m;
    }
    /* a poll returns one message, read after any callback it served, so
     * never one of a partition revoked then; a revoke during the batch
     * call can leave messages of that partition in msgs, the poll's too */
    if (ing->revoked) {
        rd_kafka_topic_partition_list_destroy(ing->revoked);
        ing->revoked = NULL;
    }
    size_t before = ing->kick ? rd_kafka_queue_length(ing->queue) : 0;
    ssize_t more = rd_kafka_consume_batch_queue(ing->queue, 0, msgs + got, READ_MAX - got);
    if (more > 0)
        got += (size_t)more;
    if (ing->kick) /* the fetcher may have stopped on a full queue */
        lapse_kick_read(ing->kick, before, more > 0 ? (size_t)more : 0);
    return ing->revoked ? drop_revoked(ing, msgs, got) : got;
}

int lapse_ingress_serve(lapse_ingress *ing, lapse_producer *p, volatile sig_atomic_t *stop)
{
    ing->p = p;
    ing->stop = stop;
    /* Messages held uncommitted at most: the producer's pipeline (FLIGHTS
     * batches in flight, the queue) and room to fill it again; in a stream
     * ingress_advance() commits long before. */
    size_t max = (size_t)ing->cfg->producer_batch * HOLD_BATCHES;
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, ing->cfg->ingress_topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = rd_kafka_subscribe(ing->rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (err) {
        log_error("ingress: subscribe %s: %s", ing->cfg->ingress_topic, rd_kafka_err2str(err));
        return -1;
    }
    ing->kick = lapse_kick_new(ing->rk, ing->queue, ing->queued_min, &ing->metrics->fetch_kicks);
    if (!ing->kick)
        log_warn("ingress: cannot start the fetch kicker: a backlog is read with pauses");
    M_SET(consuming, 1); /* waiting for partitions or holding some */
    ing->lap_ns = ingress_now_ns();
    if (ing->httpd)
        lapse_ingress_metrics_probe(ing->metrics, p);
    log_info("ingress: consuming %s as group %s, %zu watchdog rules, dead letters %s",
             ing->cfg->ingress_topic, ing->cfg->ingress_group, ing->cfg->ningress_rules,
             ing->cfg->ingress_dead_letter_topic ? ing->cfg->ingress_dead_letter_topic : "off");

    rd_kafka_message_t *msgs[READ_MAX];
    uint64_t key_hash[READ_MAX]; /* msgs[k]'s key hashed for the prefetch (with slack) */
    int slack = ing->cfg->producer_slack_ms > 0;
    while (!*stop && !ing->fatal) {
        int error = 0;
        const char *note;
        while ((note = lapse_producer_notice(p, &error)))
            LAPSE_LOG(error ? LAPSE_LOG_ERROR : LAPSE_LOG_WARN, "ingress: %s", note);
        if (ing->dlq)
            lapse_deadletter_poll(ing->dlq, 0);
        size_t got = read_some(ing, msgs);
        ingress_lap(ing, LAPSE_STAGE_FETCH);
        if (!got) { /* nothing more ready: apply what we have now */
            ingress_settle(ing, 0);
            ingress_laps_publish(ing);
            log_stats(ing, 0);
            if (ing->httpd && ing->n == ing->first) /* Redis's state while no writes tell it */
                lapse_ingress_metrics_probe(ing->metrics, p);
            continue;
        }
        for (size_t k = 0; k < got; k++) {
            rd_kafka_message_t *m = msgs[k];
            /* The slack table's slot of a message PREFETCH_AHEAD on, guessed
             * from its key: a device's signals are keyed by its ID (that is
             * what keeps them in order), so the guess is mostly right, and
             * the lookup's cache miss is mostly gone by its turn. A wrong
             * guess costs one hash. */
            const rd_kafka_message_t *ahead =
                k + PREFETCH_AHEAD < got ? msgs[k + PREFETCH_AHEAD] : NULL;
            if (slack && ahead && !ahead->err && ahead->key_len) {
                key_hash[k + PREFETCH_AHEAD] = lapse_hash(ahead->key, ahead->key_len);
                lapse_producer_prefetch_hashed(p, key_hash[k + PREFETCH_AHEAD]);
            }
            if (m->err) {
                consumer_error(ing, m);
                rd_kafka_message_destroy(m);
                continue;
            }
            take(ing, m, slack && k >= PREFETCH_AHEAD && m->key_len ? &key_hash[k] : NULL);
            if (ing->send_failed || ing->n - ing->first >= max)
                ingress_settle(ing, 0);
            else if (lapse_producer_settled(p) != ing->seen_settled)
                ingress_advance(ing); /* batches in flight were read: commit what they cover */
        }
    }

    int rc = 0;
    M_SET(consuming, 0);
    ingress_laps_publish(ing);
    if (ing->fatal) {
        ingress_release(ing); /* never committed: read again by whoever comes next */
        rc = -1;
    } else if (ingress_settle(ing, 1) < 0 || ing->backoff_ms) {
        rc = -1; /* the last batch failed (maybe just before the stop) */
    }
    ing->p = NULL;              /* the revoke during close has nothing left to settle */
    lapse_kick_free(ing->kick); /* its requests use the consumer */
    ing->kick = NULL;
    /* librdkafka: every message destroyed before the consumer is closed */
    lapse_reaper_drain(ing->reaper);
    rd_kafka_consumer_close(ing->rk);
    log_stats(ing, 1);
    if (rc < 0)
        log_error("ingress: stopped with messages not applied; they were not committed");
    return rc;
}
