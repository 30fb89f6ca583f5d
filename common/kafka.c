/* kafka — see kafka.h. */
#include "kafka.h"

#include <stdio.h>
#include <string.h>

static int kafka_set(rd_kafka_conf_t *conf, const struct lapse_config *cfg, const char *name,
                     const char *value, char *errstr, size_t size)
{
    char why[256];
    if (rd_kafka_conf_set(conf, name, value, why, sizeof why) == RD_KAFKA_CONF_OK)
        return 0;
    snprintf(errstr, size, "%s: kafka.properties: %s: %s", cfg->path, name, why);
    return -1;
}

rd_kafka_conf_t *lapse_kafka_conf(const struct lapse_config *cfg, const struct lapse_kv *defaults,
                                  size_t ndefaults, char *errstr, size_t size)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    for (size_t i = 0; i < ndefaults; i++)
        if (kafka_set(conf, cfg, defaults[i].key, defaults[i].value, errstr, size) < 0)
            goto fail;
    for (size_t i = 0; i < cfg->nkafka_props; i++)
        if (kafka_set(conf, cfg, cfg->kafka_props[i].key, cfg->kafka_props[i].value, errstr, size) <
            0)
            goto fail;
    if (kafka_set(conf, cfg, "bootstrap.servers", cfg->kafka_brokers, errstr, size) < 0)
        goto fail;
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

const char *lapse_kafka_prop(const struct lapse_config *cfg, const char *name)
{
    const char *v = NULL;
    for (size_t i = 0; i < cfg->nkafka_props; i++)
        if (strcmp(cfg->kafka_props[i].key, name) == 0)
            v = cfg->kafka_props[i].value;
    return v;
}
