/*
 * tail_priv — what lapse-tail's two files share: the command-line settings
 * tail.c parses, and tail_print.c's printing of one message by them.
 */
#ifndef LAPSE_TAIL_PRIV_H
#define LAPSE_TAIL_PRIV_H

#include <librdkafka/rdkafka.h>

#define MAX_CONF 64 /* -X properties */

enum format { FORMAT_JSON, FORMAT_DEMO };

/* Command-line settings. */
struct opts {
    const char *brokers;
    const char *topic;
    long long count;      /* stop after this many messages; 0: no limit */
    long long timeout_ms; /* stop after this long; 0: no limit */
    enum format format;
    int keys;                      /* json format: print key<TAB>value */
    const char *conf[MAX_CONF][2]; /* -X name=value, applied last */
    int conf_cnt;
};

/* Prints one message as the options say. Returns 0, or -1 if stdout failed. */
int print_message(const struct opts *o, const rd_kafka_message_t *m);

#endif
