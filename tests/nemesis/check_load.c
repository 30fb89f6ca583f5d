/*
 * check_load — a nemesis run's records (meta.json, history-<w>.jsonl,
 * events.jsonl, faults.jsonl) parsed line by line into a struct nm_run
 * (check_priv.h) for check.c's rules. Each record is checked for its
 * fields and types as it is added; nothing is judged here.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nm_run *nm_run_new(void)
{
    return calloc(1, sizeof(struct nm_run));
}

void nm_run_free(struct nm_run *run)
{
    if (!run)
        return;
    for (size_t i = 0; i < run->nops; i++) {
        free(run->ops[i].w);
        free(run->ops[i].id);
        free(run->ops[i].err);
    }
    for (size_t i = 0; i < run->nevs; i++)
        free(run->evs[i].id);
    for (size_t i = 0; i < run->nfaults; i++) {
        free(run->faults[i].kind);
        free(run->faults[i].target);
    }
    for (size_t i = 0; i < run->nwriters; i++)
        free(run->writers[i]);
    free(run->writers);
    free(run->replays);
    free(run->ops);
    free(run->evs);
    free(run->faults);
    free(run->ns);
    free(run);
}

int nm_grow(void **arr, size_t *cap, size_t count, size_t elem)
{
    if (count < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 64;
    void *n = realloc(*arr, ncap * elem);
    if (!n)
        return -1;
    *arr = n;
    *cap = ncap;
    return 0;
}

static void seterr(char *errstr, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *errstr, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errstr, size, fmt, ap);
    va_end(ap);
}

static json_t *parse(const char *text, char *errstr, size_t size)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        seterr(errstr, size, "not JSON: %s", je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        seterr(errstr, size, "not a JSON object");
        return NULL;
    }
    return j;
}

/* An integer field: 1 found (into *out), 0 absent or null, -1 not an integer. */
static int int_field(json_t *j, const char *key, int64_t *out)
{
    json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return -1;
    *out = (int64_t)json_integer_value(v);
    return 1;
}

static const char *str_field(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int nm_run_meta(struct nm_run *run, const char *json, char *errstr, size_t size)
{
    json_t *j = parse(json, errstr, size);
    if (!j)
        return -1;
    int64_t v[5] = {0};
    const char *keys[5] = {"seed", "start_ms", "stop_ms", "end_ms", "grace_ms"};
    for (int i = 0; i < 5; i++) {
        if (int_field(j, keys[i], &v[i]) != 1) {
            seterr(errstr, size, "meta: \"%s\" is missing or not an integer", keys[i]);
            json_decref(j);
            return -1;
        }
    }
    json_t *ws = json_object_get(j, "writers");
    const char *ns = str_field(j, "ns");
    if (!json_is_array(ws) || !ns) {
        seterr(errstr, size, "meta: \"writers\" (an array) or \"ns\" is missing");
        json_decref(j);
        return -1;
    }
    size_t nw = json_array_size(ws);
    char **writers = calloc(nw ? nw : 1, sizeof *writers);
    unsigned char *replays = calloc(nw ? nw : 1, 1);
    char *nsdup = strdup(ns);
    int bad = !writers || !replays || !nsdup;
    json_t *rs = json_object_get(j, "replaying"); /* optional */
    for (size_t i = 0; i < nw && !bad; i++) {
        const char *w = json_string_value(json_array_get(ws, i));
        bad = !w || strchr(w, '/') || !(writers[i] = strdup(w));
        for (size_t k = 0; !bad && k < json_array_size(rs); k++) {
            const char *r = json_string_value(json_array_get(rs, k));
            if (r && strcmp(r, w) == 0)
                replays[i] = 1;
        }
    }
    json_decref(j);
    if (bad) {
        for (size_t i = 0; writers && i < nw; i++)
            free(writers[i]);
        free(writers);
        free(replays);
        free(nsdup);
        seterr(errstr, size, "meta: a writer is not a plain name (or out of memory)");
        return -1;
    }
    run->seed = v[0];
    run->start = v[1];
    run->stop = v[2];
    run->end = v[3];
    run->grace = v[4];
    free(run->ns);
    run->ns = nsdup;
    for (size_t i = 0; i < run->nwriters; i++)
        free(run->writers[i]);
    free(run->writers);
    free(run->replays);
    run->writers = writers;
    run->replays = replays;
    run->nwriters = nw;
    return 0;
}

static int op_code(const char *s)
{
    static const char *names[] = {"touch", "extend", "watch", "repeat", "cancel"};
    for (int i = 0; s && i < 5; i++)
        if (strcmp(s, names[i]) == 0)
            return i + 1;
    return 0;
}

const char *nm_op_name(int op)
{
    static const char *names[] = {"?", "touch", "extend", "watch", "repeat", "cancel"};
    return op >= 1 && op <= 5 ? names[op] : "?";
}

/* The op of writer w numbered n, or NULL. A linear search from the end:
 * an ack follows its op closely. */
static struct op *find_op(struct nm_run *run, const char *w, int64_t n)
{
    for (size_t i = run->nops; i-- > 0;)
        if (run->ops[i].n == n && strcmp(run->ops[i].w, w) == 0)
            return &run->ops[i];
    return NULL;
}

int nm_run_history(struct nm_run *run, const char *json, char *errstr, size_t size)
{
    json_t *j = parse(json, errstr, size);
    if (!j)
        return -1;
    const char *t = str_field(j, "t"), *w = str_field(j, "w");
    int64_t n;
    int rc = -1;
    if (!t || !w || int_field(j, "n", &n) != 1) {
        seterr(errstr, size, "\"t\", \"w\" or \"n\" is missing");
    } else if (strcmp(t, "ack") == 0) {
        struct op *o = find_op(run, w, n);
        int64_t ack_ms;
        json_t *ok = json_object_get(j, "ok");
        if (!o)
            seterr(errstr, size, "an ack of %s's op %" PRId64 ", which has no op line", w, n);
        else if (o->ack != ACK_NONE)
            seterr(errstr, size, "a second ack of %s's op %" PRId64, w, n);
        else if (int_field(j, "ack_ms", &ack_ms) != 1 || !json_is_boolean(ok))
            seterr(errstr, size, "an ack without \"ack_ms\" or \"ok\"");
        else {
            const char *err = str_field(j, "err");
            o->ack = json_is_true(ok) ? ACK_OK : ACK_FAIL;
            o->ack_ms = ack_ms;
            o->err = err ? strdup(err) : NULL;
            rc = 0;
        }
    } else if (strcmp(t, "op") == 0) {
        struct op o = {0};
        int64_t at = 0, in = 0;
        int hat = int_field(j, "at_ms", &at), hin = int_field(j, "in_ms", &in);
        int hper = int_field(j, "period_ms", &o.period);
        const char *id = str_field(j, "id");
        o.op = op_code(str_field(j, "op"));
        o.n = n;
        if (!o.op || !id || int_field(j, "sent_ms", &o.sent) != 1)
            seterr(errstr, size, "an op without a known \"op\", \"id\" or \"sent_ms\"");
        else if (hat < 0 || hin < 0 || hper < 0 || (o.op == OP_CANCEL) != (hat + hin == 0) ||
                 hat + hin > 1)
            seterr(errstr, size,
                   "%s %s: needs exactly one of \"at_ms\" / \"in_ms\" (none for "
                   "cancel)",
                   nm_op_name(o.op), id);
        else if ((o.op == OP_REPEAT) != (hper == 1) || (hper == 1 && o.period < 1))
            seterr(errstr, size, "%s %s: \"period_ms\" >= 1 for a repeat only", nm_op_name(o.op),
                   id);
        else if (find_op(run, w, n))
            seterr(errstr, size, "%s's op %" PRId64 " given twice", w, n);
        else if (nm_grow((void **)&run->ops, &run->capops, run->nops, sizeof o) < 0)
            seterr(errstr, size, "out of memory");
        else {
            o.kind = hat ? WHEN_AT : hin ? WHEN_IN : WHEN_NONE;
            o.when = hat ? at : in;
            o.w = strdup(w);
            o.id = strdup(id);
            if (!o.w || !o.id) {
                free(o.w);
                free(o.id);
                seterr(errstr, size, "out of memory");
            } else {
                run->ops[run->nops++] = o;
                rc = 0;
            }
        }
    } else {
        seterr(errstr, size, "\"t\" is neither \"op\" nor \"ack\"");
    }
    json_decref(j);
    return rc;
}

int nm_run_event(struct nm_run *run, const char *json, char *errstr, size_t size)
{
    json_t *j = parse(json, errstr, size);
    if (!j)
        return -1;
    const char *type = str_field(j, "type"), *id = str_field(j, "id"), *ns = str_field(j, "ns");
    struct event e = {0};
    int rc = -1;
    if (!type || !id || int_field(j, "deadline_ms", &e.deadline) != 1 ||
        int_field(j, "fired_ms", &e.fired) != 1) {
        seterr(errstr, size, "an event without \"type\", \"id\", \"deadline_ms\" or \"fired_ms\"");
    } else if (run->ns && ns && strcmp(ns, run->ns) != 0) {
        rc = 0; /* another namespace's */
    } else if (strcmp(type, "timeout") != 0 && strcmp(type, "recovered") != 0) {
        seterr(errstr, size, "an event of type \"%s\"", type);
    } else if (int_field(j, "seq", &e.seq) < 0 ||
               int_field(j, "recovered_ms", &e.recovered_ms) < 0) {
        seterr(errstr, size, "\"seq\" or \"recovered_ms\" is not an integer");
    } else if (strcmp(type, "recovered") == 0 &&
               int_field(j, "recovered_ms", &e.recovered_ms) != 1) {
        seterr(errstr, size, "a recovered event without \"recovered_ms\"");
    } else if (nm_grow((void **)&run->evs, &run->capevs, run->nevs, sizeof e) < 0 ||
               !(e.id = strdup(id))) {
        seterr(errstr, size, "out of memory");
    } else {
        e.recovered = strcmp(type, "recovered") == 0;
        e.order = run->nevs;
        run->evs[run->nevs++] = e;
        rc = 0;
    }
    json_decref(j);
    return rc;
}

int nm_run_fault(struct nm_run *run, const char *json, char *errstr, size_t size)
{
    json_t *j = parse(json, errstr, size);
    if (!j)
        return -1;
    const char *kind = str_field(j, "kind"), *target = str_field(j, "target");
    struct fault f = {0};
    int rc = -1;
    if (!kind || int_field(j, "start_ms", &f.start) != 1 || int_field(j, "end_ms", &f.end) != 1)
        seterr(errstr, size, "a fault without \"kind\", \"start_ms\" or \"end_ms\"");
    else if (nm_grow((void **)&run->faults, &run->capfaults, run->nfaults, sizeof f) < 0 ||
             !(f.kind = strdup(kind)) || !(f.target = strdup(target ? target : "")))
        seterr(errstr, size, "out of memory");
    else {
        run->faults[run->nfaults++] = f;
        rc = 0;
        f.kind = NULL;
    }
    free(rc == 0 ? NULL : f.kind);
    json_decref(j);
    return rc;
}

typedef int line_fn(struct nm_run *, const char *, char *, size_t);

/* Feeds each line of path to fn. */
static int load_lines(struct nm_run *run, const char *path, line_fn *fn, int *cut, char *errstr,
                      size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        seterr(errstr, size, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long no = 0;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        no++;
        int whole = len > 0 && line[len - 1] == '\n';
        if (whole)
            line[--len] = '\0';
        if (len == 0)
            continue;
        char why[256];
        if (fn(run, line, why, sizeof why) < 0) {
            if (!whole && line[0] == '{' && strncmp(why, "not JSON", 8) == 0) {
                ++*cut; /* the writer was killed mid-line: the last line only */
                continue;
            }
            seterr(errstr, size, "%s:%ld: %s", path, no, why);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(f)) {
        seterr(errstr, size, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

int nm_run_load(struct nm_run *run, const char *dir, int *cut, char *errstr, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        seterr(errstr, size, "%s: %s", path, strerror(errno));
        return -1;
    }
    char buf[65536];
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = '\0';
    char why[256];
    if (nm_run_meta(run, buf, why, sizeof why) < 0) {
        seterr(errstr, size, "%s: %s", path, why);
        return -1;
    }
    for (size_t i = 0; i < run->nwriters; i++) {
        snprintf(path, sizeof path, "%s/history-%s.jsonl", dir, run->writers[i]);
        if (load_lines(run, path, nm_run_history, cut, errstr, size) < 0)
            return -1;
    }
    snprintf(path, sizeof path, "%s/events.jsonl", dir);
    if (load_lines(run, path, nm_run_event, cut, errstr, size) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/faults.jsonl", dir);
    return load_lines(run, path, nm_run_fault, cut, errstr, size);
}
