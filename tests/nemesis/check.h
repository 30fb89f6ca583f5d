/*
 * check — the nemesis checker's core: a run's records (meta, the writers'
 * histories, the events, the faults) parsed line by line into memory, and
 * the guarantees decided over them by one pure function. check_load.c
 * parses; check.c's top comment says how each rule is decided and why it
 * is sound, check_rules.c holds the rules' code; check_main.c
 * is the program (nemesis-check RUN) around it; tests/unit/test_nemesis.c
 * feeds it hand-made histories.
 */
#ifndef NEMESIS_CHECK_H
#define NEMESIS_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The rules, numbered as in the design (bit r - 1 of nm_check's result). */
enum nm_rule {
    NM_NEVER_EARLY = 1,
    NM_NEVER_LOST,
    NM_CANCEL_WINS,
    NM_EXTEND_NEVER_SHORTENS,
    NM_REPEAT,
    NM_RECOVERED,
    NM_DUPLICATES,
    NM_LATENESS,
    NM_RULES = NM_LATENESS,
};

/* "never-early", "never-lost", ... as the verdict lines name them. */
const char *nm_rule_name(enum nm_rule r);

/* The tolerances (nm_params_default fills them). */
struct nm_params {
    int64_t eps_ms;        /* clock reads and ms truncation (5) */
    int64_t late_ms;       /* never-lost: lateness allowed outside faults (3000) */
    int64_t recovery_ms;   /* after a fault heals: lease + Kafka retry (15000) */
    int64_t late_bound_ms; /* lateness: the bound outside fault windows (2000) */
    int shown;             /* violations whose ID history is printed, per rule (5) */
};
void nm_params_default(struct nm_params *p);

struct nm_run;

/* An empty run; NULL on ENOMEM. nm_run_free accepts NULL. */
struct nm_run *nm_run_new(void);
void nm_run_free(struct nm_run *run);

/*
 * Each adds one record from one JSON text (a line without its newline).
 * Returns 0, or -1 with a reason in errstr (not JSON, a field missing or of
 * the wrong type, an ack for no op, an n given twice); nothing is added then.
 * An event of another namespace than meta's is skipped (returns 0): give
 * the meta first.
 */
int nm_run_meta(struct nm_run *run, const char *json, char *errstr, size_t size);
int nm_run_history(struct nm_run *run, const char *json, char *errstr, size_t size);
int nm_run_event(struct nm_run *run, const char *json, char *errstr, size_t size);
int nm_run_fault(struct nm_run *run, const char *json, char *errstr, size_t size);

/*
 * Reads RUN/meta.json, RUN/history-<w>.jsonl for every writer the meta
 * names, RUN/events.jsonl and RUN/faults.jsonl. A last line cut short (no
 * newline, not JSON: its writer was killed mid-line) is skipped and counted
 * in *cut; any other bad line fails. Returns 0, or -1 with errstr
 * ("FILE:LINE: reason").
 */
int nm_run_load(struct nm_run *run, const char *dir, int *cut, char *errstr, size_t size);

/*
 * Decides every rule over the records, printing to out the verdict lines
 * ("ok NAME (counts)" or "VIOLATION NAME: ...", one per rule, in rule
 * order) and, after a violation's line, the seed and the whole history of
 * (up to params->shown of) the offending IDs. Returns the set of violated
 * rules, bit r - 1 for rule r (0: all hold). Sorts the records in place;
 * otherwise leaves the run as it is.
 */
unsigned nm_check(struct nm_run *run, const struct nm_params *params, FILE *out);

#endif
