/*
 * kafka — librdkafka configuration from the lapse config.
 *
 * Properties are applied in this order, later ones winning: lapse's defaults
 * for the role (passed by the caller), then kafka.properties verbatim (kcat's
 * -X style passthrough: SASL, TLS, anything librdkafka knows), then
 * bootstrap.servers from kafka.brokers. librdkafka validates every name and
 * value locally, so a wrong property is reported before anything connects.
 * Values are never put in error messages (they may be secrets).
 */
#ifndef LAPSE_KAFKA_H
#define LAPSE_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

#include "config.h"

/*
 * Returns a new rd_kafka_conf_t (the caller owns it until rd_kafka_new takes
 * it), or NULL with "FILE: kafka.properties: NAME: reason" in errstr.
 */
rd_kafka_conf_t *lapse_kafka_conf(const struct lapse_config *cfg, const struct lapse_kv *defaults,
                                  size_t ndefaults, char *errstr, size_t size);

/* The value kafka.properties sets for `name`, or NULL. */
const char *lapse_kafka_prop(const struct lapse_config *cfg, const char *name);

#endif
