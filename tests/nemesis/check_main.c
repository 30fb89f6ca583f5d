/*
 * nemesis-check RUN — proves the guarantees from a nemesis run's records
 * (check.c says how, check.h what it reads). Prints one verdict line per
 * rule and, after a violation, the seed and the offending IDs' histories.
 * Exit status: 0 all hold, 1 a violation, 2 unreadable input or bad usage.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: nemesis-check RUN\n"
               "Checks RUN/meta.json, history-<writer>.jsonl, events.jsonl and faults.jsonl\n"
               "against the guarantees; exit 0 all hold, 1 a violation, 2 unreadable input.\n");
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: nemesis-check RUN\n");
        return 2;
    }
    struct nm_run *run = nm_run_new();
    char err[512];
    int cut = 0;
    if (!run) {
        fprintf(stderr, "nemesis-check: out of memory\n");
        return 2;
    }
    if (nm_run_load(run, argv[1], &cut, err, sizeof err) < 0) {
        fprintf(stderr, "nemesis-check: %s\n", err);
        nm_run_free(run);
        return 2;
    }
    if (cut)
        printf("nemesis-check: %d last line%s cut short (a writer killed mid-line) skipped\n", cut,
               cut == 1 ? "" : "s");
    struct nm_params params;
    nm_params_default(&params);
    unsigned bad = nm_check(run, &params, stdout);
    nm_run_free(run);
    return bad ? 1 : 0;
}
