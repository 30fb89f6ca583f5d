/*
 * config_text — how the config unit tests load a config: the text is
 * written to a temp file and loaded, and the error lands in msg with the
 * temp path replaced by "FILE", so a check reads like what an operator sees.
 */
#ifndef LAPSE_TEST_CONFIG_TEXT_H
#define LAPSE_TEST_CONFIG_TEXT_H

#include <stddef.h>

#include "config.h"

/* The contract's three keys, one per line (lines 1..3). */
#define MIN_NS "namespace = \"demo\";\n"
#define MIN_REDIS "redis = { nodes = ( { host = \"127.0.0.1\"; port = 6379; } ); };\n"
#define MIN_KAFKA "kafka = { brokers = \"127.0.0.1:9092\"; topic = \"lapse.timeouts\"; };\n"
#define MIN MIN_NS MIN_REDIS MIN_KAFKA

extern char msg[400]; /* the last error, temp path replaced by "FILE" on each line */

/* Loads `text` into cfg with an errstr of `size` bytes (checking that
 * nothing is written past it); what lapse_config_load returned. */
int load_text_n(struct lapse_config *cfg, const char *text, size_t size);
int load_text(struct lapse_config *cfg, const char *text); /* errstr of 1024 */

/* 1 when cfg is all zeroes (what a failed load leaves). */
int all_zero(const struct lapse_config *cfg);

/* Loads `text`, expects failure with exactly `want`, and a zeroed cfg. */
void expect_err(const char *text, const char *want);

#endif
