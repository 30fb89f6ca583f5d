/*
 * autoscale_metrics — the scaler's /metrics, /healthz and /readyz
 * (scale.metrics_port, common/httpd.h): its last figures, the shard count,
 * its decisions. The loop publishes under the lock; the HTTP thread only
 * renders what was published (docs/operating.md, "The scaler").
 */
#ifndef LAPSE_SCALE_AUTOSCALE_METRICS_H
#define LAPSE_SCALE_AUTOSCALE_METRICS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "autoscale.h"
#include "httpd.h"

struct lapse_autoscale_metrics {
    pthread_mutex_t lock;                /* guards everything below */
    const char *ns;                      /* the namespace (the config's: outlives us) */
    int dry_run;                         /* 1: --dry-run, decisions not carried out */
    int have;                            /* 1 once a reading was published */
    struct lapse_autoscale_reading last; /* the last reading */
    uint64_t decisions[4];               /* by enum lapse_autoscale_action (none unused) */
    uint64_t readings, reading_errors;   /* readings taken, those not read in full */
    uint64_t action_errors;              /* splits, merges, finishes that failed */
};

/* Initialises m (ns is not copied). */
void lapse_autoscale_metrics_init(struct lapse_autoscale_metrics *m, const char *ns, int dry_run);
void lapse_autoscale_metrics_destroy(struct lapse_autoscale_metrics *m);

/* Publishes one reading. */
void lapse_autoscale_metrics_reading(struct lapse_autoscale_metrics *m,
                                     const struct lapse_autoscale_reading *r);

/* Counts one decision (an action), and whether carrying it out failed. */
void lapse_autoscale_metrics_decision(struct lapse_autoscale_metrics *m,
                                      enum lapse_autoscale_action a, int failed);

/* The Prometheus text into buf: its length, or -1 when it did not fit. */
int lapse_autoscale_metrics_render(struct lapse_autoscale_metrics *m, char *buf, size_t size);

/* Serves m on bind:port. The server, or NULL with errstr. */
lapse_httpd *lapse_autoscale_metrics_serve(struct lapse_autoscale_metrics *m, const char *bind,
                                           int port, char *errstr, size_t size);

#endif
