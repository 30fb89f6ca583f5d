/*
 * lapse-console: the web console (tools/console/console.h): options ->
 * config -> tokens -> connections -> signals -> serve until SIGTERM/SIGINT.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "console.h"
#include "layout.h"
#include "log.h"
#include "stop.h"
#include "tokens.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: lapse-console -c FILE\n"
                 "Serves the web console of the namespace FILE configures, on console.bind\n"
                 "(127.0.0.1 unless set) and console.port (lapse.conf(5), docs/operating.md\n"
                 "\"The web console\"): pages at /, JSON under /api/ with the names of\n"
                 "lapse-scale status --json, status --due --json, get --json and offline --json.\n"
                 "Reads only, unless console.writes = true: then cancel and set-deadline, each\n"
                 "with a token of console.tokens_file. SIGTERM/SIGINT stop it.\n"
                 "Exit status: 0 stopped; 2 bad usage or configuration; 1 could not start.\n");
}

/* The config's nodes, opened (connections are made when first used). */
static lapse_redis **open_nodes(const struct lapse_config *cfg)
{
    lapse_redis **nodes = calloc(cfg->nnodes, sizeof *nodes);
    for (size_t i = 0; nodes && i < cfg->nnodes; i++)
        if (!(nodes[i] = lapse_node_open(cfg, i))) {
            while (i--)
                lapse_redis_free(nodes[i]);
            free(nodes);
            return NULL;
        }
    return nodes;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'}, {0}};
    const char *path = NULL;
    int o;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":c:h", opts, NULL)) != -1) {
        if (o == 'c') {
            path = optarg;
        } else if (o == 'h') {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "lapse-console: %s %s; see lapse-console --help\n",
                    o == ':' ? "an argument is missing to" : "unknown option", argv[optind - 1]);
            return 2;
        }
    }
    if (!path || optind < argc) {
        fprintf(stderr, "lapse-console: %s; see lapse-console --help\n",
                path ? "unexpected argument" : "-c FILE is required");
        return 2;
    }
    struct lapse_config cfg;
    char err[1024];
    if (lapse_config_load(&cfg, path, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (cfg.console_port == 0) {
        fprintf(stderr,
                "lapse-console: %s: console.port is 0 or there is no console group: the console "
                "is off (add console = { port = 9480; }, lapse.conf(5))\n",
                path);
        lapse_config_free(&cfg);
        return 2;
    }
    lapse_log_init("lapse-console", cfg.log_level);
    lapse_tokens *tokens = NULL;
    if (cfg.console_writes && !cfg.console_tokens_file) {
        fprintf(stderr,
                "lapse-console: %s: console.tokens_file: missing (writes = true needs the tokens "
                "that may write)\n",
                path);
        lapse_config_free(&cfg);
        return 2;
    }
    if (cfg.console_writes &&
        !(tokens = lapse_tokens_load(cfg.console_tokens_file, err, sizeof err))) {
        fprintf(stderr, "lapse-console: %s: console.tokens_file (writes = true): %s\n", path, err);
        lapse_config_free(&cfg);
        return 2;
    }
    /* reading never refuses a node whose policy evicts (as lapse-scale's
     * reads); writes, when on, keep the config's rule */
    if (!cfg.console_writes)
        cfg.redis_accept_eviction = 1;
    struct lapse_console_deps d = {.cfg = &cfg, .tokens = tokens};
    d.read_nodes = open_nodes(&cfg);
    d.req_nodes = open_nodes(&cfg);
    if (!d.read_nodes || !d.req_nodes) {
        fprintf(stderr, "lapse-console: out of memory\n");
        return 1;
    }
    /* SIGTERM and SIGINT are blocked in every thread the console starts and
     * taken by this one alone, in sigsuspend: no signal is missed between
     * the check of the flag and the wait */
    lapse_stop_on_signals(1);
    sigset_t stop_set, old;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGTERM);
    sigaddset(&stop_set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_set, &old);
    lapse_console *c = lapse_console_start(&d, err, sizeof err);
    if (!c) {
        fprintf(stderr, "lapse-console: %s\n", err);
        lapse_config_free(&cfg);
        return 1;
    }
    int v6 = strchr(cfg.console_bind, ':') != NULL;
    log_info("serving namespace \"%s\" on http://%s%s%s:%d/ (writes %s)", cfg.ns, v6 ? "[" : "",
             cfg.console_bind, v6 ? "]" : "", cfg.console_port, cfg.console_writes ? "on" : "off");
    if (cfg.console_writes)
        log_info("writes: %zu tokens from %s", lapse_tokens_count(tokens), cfg.console_tokens_file);
    while (!lapse_stop)
        sigsuspend(&old);
    log_info("stopping");
    lapse_console_stop(c);
    lapse_config_free(&cfg);
    return 0;
}
