/* lapse-scanner: serves one shard (see scanner.h). options -> config ->
 * scanner -> signals -> serve. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "hash.h"
#include "log.h"
#include "scanner.h"
#include "stop.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: lapse-scanner -c FILE --shard N\n"
                 "Serves shard N: claims due IDs, sends one event each to Kafka, and removes\n"
                 "them once Kafka acknowledged. SIGTERM/SIGINT stop it cleanly.\n"
                 "Exit status: 0 stopped; 1 could not start (Redis unreachable for\n"
                 "redis.retry_timeout_ms, namespace not initialised, no such shard); 2 bad\n"
                 "options or config; 3 fatal Kafka errors; 78 Redis refused us (password,\n"
                 "user, ACL, TLS).\n");
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    long shard = -1;
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"shard", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "c:s:h", opts, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 'c':
            path = optarg;
            break;
        case 's':
            shard = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || shard < 0 || shard >= LAPSE_MAX_SHARDS) {
                fprintf(stderr, "lapse-scanner: --shard: \"%s\" is not a shard number\n", optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "lapse-scanner: unexpected argument \"%s\" (try --help)\n", argv[optind]);
        return 2;
    }
    if (!path || shard < 0) {
        fprintf(stderr, "lapse-scanner: %s\n",
                !path ? "-c FILE is required" : "--shard N is required");
        return 2;
    }
    lapse_log_init("lapse-scanner", LAPSE_LOG_INFO);
    struct lapse_config cfg;
    char err[2048]; /* every problem of a config, a line each */
    if (lapse_config_load(&cfg, path, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    lapse_log_init("lapse-scanner", cfg.log_level);
    /* before anything slow (connecting): a SIGTERM during start-up is a
     * clean stop too, never death by the default action */
    lapse_stop_on_signals(1);
    lapse_scanner *s = lapse_scanner_new(&cfg, (uint32_t)shard, err, sizeof err);
    if (!s) {
        fprintf(stderr, "%s\n", err);
        lapse_config_free(&cfg);
        return 2;
    }

    int rc = lapse_scanner_serve(s, &lapse_stop);
    lapse_scanner_free(s);
    lapse_config_free(&cfg);
    return rc;
}
