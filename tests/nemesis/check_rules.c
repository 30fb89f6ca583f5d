/*
 * check_rules — the nemesis checker's rules over one ID's records (struct
 * idv): never-early, cancel-wins and extend-never-shortens per event
 * (rules_events), never-lost per op, repeat, recovered, duplicates and
 * lateness, each adding its counts and violations to V (check_priv.h).
 * check.c's top comment argues each rule's soundness and nm_check runs
 * them (nm_rules) over every ID; the rules live apart from it so that the
 * argument and the run around them (grouping, the verdict lines) stay one
 * file, and the rules' code another, of a size to read.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_priv.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Lateness histogram buckets (upper bounds, ms): NBUCKETS of them. */
static const int64_t buckets[] = {10, 100, 1000, 2000, 10000, 60000, INT64_MAX};
_Static_assert(sizeof buckets / sizeof buckets[0] == NBUCKETS, "NBUCKETS is buckets' count");

/* Whether D is one of o's possible deadlines. */
static int matches(const struct op *o, int64_t d)
{
    if (o->op == OP_CANCEL)
        return 0;
    if (o->op == OP_REPEAT)
        return d >= o->lo && (d - o->lo) % o->period <= o->hi - o->lo;
    return d >= o->lo && d <= o->hi;
}

static int is_candidate(const struct op *o, const struct event *e)
{
    return o->sent <= e->fired + P->eps_ms && matches(o, e->deadline);
}

/* Whether writer w's ops may be applied more than once (meta "replaying"). */
static int replaying(const char *w)
{
    for (size_t i = 0; i < R->nwriters; i++)
        if (R->replays[i] && strcmp(R->writers[i], w) == 0)
            return 1;
    return 0;
}

/* Rule 3: a later op acked ok before D - eps removes or moves o's D. */
static int killed(const struct idv *v, size_t oi, int64_t d)
{
    for (size_t ri = oi + 1; ri < v->nops; ri++) {
        const struct op *r = &v->ops[ri];
        if (r->ack != ACK_OK || r->ack_ms >= d - P->eps_ms)
            continue;
        if (r->op == OP_CANCEL)
            return 1;
        if ((r->op == OP_TOUCH || r->op == OP_REPEAT) && !matches(r, d))
            return 1;
        if ((r->op == OP_EXTEND || r->op == OP_WATCH) && r->lo > d)
            return 1;
    }
    return 0;
}

/* Rule 4: o is an extend/watch whose D an earlier pending deadline beat. */
static int shortened(const struct idv *v, size_t oi, int64_t d)
{
    const struct op *o = &v->ops[oi];
    if ((o->op != OP_EXTEND && o->op != OP_WATCH) || o->ack != ACK_OK)
        return 0;
    /* A replaying writer's O may be applied again up to its ack: after a
     * later touch, repeat or cancel sent before that ack lowered or
     * cleared what was pending (protocol.md: a message read again is
     * applied again), where O sets D once more. */
    for (size_t qi = oi + 1; replaying(o->w) && qi < v->nops; qi++) {
        const struct op *q = &v->ops[qi];
        if (q->op != OP_EXTEND && q->op != OP_WATCH && q->sent < o->ack_ms)
            return 0;
    }
    for (size_t pi = oi; pi-- > 0;) {
        const struct op *p = &v->ops[pi];
        if (p->ack == ACK_OK && p->op != OP_CANCEL && p->lo > d && o->ack_ms < p->lo - P->eps_ms)
            return 1;
        if (p->op != OP_EXTEND && p->op != OP_WATCH)
            return 0; /* a touch, repeat or cancel between may lower it */
    }
    return 0;
}

/* Faults overlapping [a, b] (each one's window running to end + recovery). */
static int in_fault(int64_t a, int64_t b, const char **kind)
{
    for (size_t i = 0; i < R->nfaults; i++) {
        const struct fault *f = &R->faults[i];
        if (f->start <= b && f->end + P->recovery_ms >= a) {
            if (kind)
                *kind = f->kind;
            return 1;
        }
    }
    return 0;
}

/* The end of the window within which a deadline d must fire: d + late_ms,
 * pushed to a fault's end + recovery while one overlaps it. */
static int64_t window_end(int64_t d)
{
    int64_t w = d + P->late_ms;
    for (int moved = 1; moved;) {
        moved = 0;
        for (size_t i = 0; i < R->nfaults; i++) {
            const struct fault *f = &R->faults[i];
            if (f->start <= w && f->end + P->recovery_ms > w && f->end + P->recovery_ms >= d) {
                w = f->end + P->recovery_ms;
                moved = 1;
            }
        }
    }
    return w;
}

static void violation(enum nm_rule r, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void violation(enum nm_rule r, const char *id, const char *fmt, ...)
{
    struct verdict *v = &V[r];
    char line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (v->bad++ == 0)
        snprintf(v->first, sizeof v->first, "%s: %s", id, line);
    for (int i = 0; i < v->nids; i++)
        if (strcmp(v->ids[i], id) == 0)
            return;
    if (v->nids < P->shown && v->nids < 64) {
        v->ids[v->nids] = id;
        v->why[v->nids++] = strdup(line);
    }
}

static void rules_events(const struct idv *v)
{
    for (size_t ei = 0; ei < v->nevs; ei++) {
        const struct event *e = &v->evs[ei];
        if (e->recovered)
            continue;
        V[NM_NEVER_EARLY].counted++;
        if (e->fired < e->deadline)
            violation(NM_NEVER_EARLY, v->id,
                      "fired at %" PRId64 ", %" PRId64 " ms before its deadline %" PRId64, e->fired,
                      e->deadline - e->fired, e->deadline);
        int cands = 0, standing = 0, short_ = 0;
        for (size_t oi = 0; oi < v->nops; oi++) {
            if (!is_candidate(&v->ops[oi], e))
                continue;
            cands++;
            int k = killed(v, oi, e->deadline), s = shortened(v, oi, e->deadline);
            short_ += s;
            standing += !k && !s;
        }
        if (cands == 0) {
            violation(NM_NEVER_EARLY, v->id,
                      "deadline %" PRId64 " (fired %" PRId64
                      ") is no possible deadline of any op sent before it fired",
                      e->deadline, e->fired);
            continue;
        }
        V[NM_CANCEL_WINS].counted++;
        V[NM_EXTEND_NEVER_SHORTENS].counted++;
        if (standing == 0)
            violation(short_ ? NM_EXTEND_NEVER_SHORTENS : NM_CANCEL_WINS, v->id,
                      "deadline %" PRId64 " fired at %" PRId64 " though %s", e->deadline, e->fired,
                      short_ ? "a later deadline was pending when the extend that set it was "
                               "applied"
                             : "a later op acked before it fell due removed or moved it");
    }
}

static void rule_never_lost(const struct idv *v)
{
    for (size_t oi = 0; oi < v->nops; oi++) {
        const struct op *o = &v->ops[oi];
        if (o->ack != ACK_OK || o->op == OP_CANCEL)
            continue;
        if (o->op == OP_EXTEND || o->op == OP_WATCH) {
            int maybe_held = 0;
            for (size_t pi = oi; pi-- > 0 && !maybe_held;) {
                const struct op *p = &v->ops[pi];
                if (p->op == OP_REPEAT || (p->op != OP_CANCEL && p->hi >= o->lo))
                    maybe_held = 1;
                if (p->ack == ACK_OK &&
                    (p->op == OP_TOUCH || p->op == OP_REPEAT || p->op == OP_CANCEL))
                    break;
            }
            if (maybe_held) {
                V[NM_NEVER_LOST].extra[0]++; /* an extend that may not move */
                continue;
            }
        }
        int64_t w = window_end(o->hi);
        if (o->hi > R->end - R->grace || w > R->end) {
            V[NM_NEVER_LOST].extra[1]++; /* unjudged: too close to the end */
            continue;
        }
        int later = 0;
        for (size_t li = oi + 1; li < v->nops && !later; li++)
            later = v->ops[li].sent < w;
        int fired = 0;
        for (size_t ei = 0; ei < v->nevs && !fired; ei++)
            fired = !v->evs[ei].recovered && matches(o, v->evs[ei].deadline);
        if (fired) {
            V[NM_NEVER_LOST].counted++;
        } else if (later) {
            V[NM_NEVER_LOST].extra[2]++; /* superseded in time */
        } else {
            V[NM_NEVER_LOST].counted++;
            violation(NM_NEVER_LOST, v->id,
                      "%s n=%" PRId64 " acked ok, deadline %" PRId64 "..%" PRId64
                      ": no event by %" PRId64 " and no later op",
                      nm_op_name(o->op), o->n, o->lo, o->hi, w);
        }
    }
}

/* Whether event e (with a seq) can be repeat o's: on o's grid, and at
 * least seq - 1 periods after its first point (each fire, counted by seq,
 * takes a grid point of its own: a missed point is skipped, never fired
 * twice). */
static int repeat_holds(const struct op *o, const struct event *e)
{
    return is_candidate(o, e) && e->deadline - (e->seq - 1) * o->period >= o->lo;
}

/* Whether event ei (with a seq) continues the count of repeat oi as the
 * events before it were given out (owner[]: op index + 1): its previous
 * event has seq - 1 and a deadline whole periods earlier (or is a copy of
 * it), or it has none and the seq is 1. */
static int continues(const struct idv *v, const size_t *owner, size_t ei, size_t oi)
{
    const struct event *e = &v->evs[ei];
    for (size_t ej = ei; ej-- > 0;) {
        const struct event *p = &v->evs[ej];
        if (owner[ej] != oi + 1)
            continue;
        if (p->seq == e->seq && p->deadline == e->deadline)
            return 1;
        return p->seq == e->seq - 1 && e->deadline > p->deadline &&
               (e->deadline - p->deadline) % v->ops[oi].period == 0;
    }
    return e->seq == 1;
}

/* Checks repeat oi's count r (its events: owner oi + 1, run r): seqs 1..k
 * each seen, one deadline a seq, deadlines rising with the seq. */
static void repeat_count(const struct idv *v, const size_t *owner, const size_t *run, size_t oi,
                         size_t r)
{
    size_t nev = v->nevs;
    int64_t maxseq = 0;
    for (size_t ei = 0; ei < nev; ei++)
        if (owner[ei] == oi + 1 && run[ei] == r && v->evs[ei].seq > maxseq)
            maxseq = v->evs[ei].seq;
    if (maxseq > 0)
        V[NM_REPEAT].extra[0]++;
    int64_t prev = INT64_MIN;
    for (int64_t s = 1; s <= maxseq; s++) {
        int64_t d = INT64_MIN;
        int seen = 0;
        for (size_t ei = 0; ei < nev; ei++) {
            if (owner[ei] != oi + 1 || run[ei] != r || v->evs[ei].seq != s)
                continue;
            if (seen && v->evs[ei].deadline != d) {
                violation(NM_REPEAT, v->id,
                          "repeat n=%" PRId64 ": seq %" PRId64 " with deadlines %" PRId64
                          " and %" PRId64,
                          v->ops[oi].n, s, d, v->evs[ei].deadline);
                return;
            }
            d = v->evs[ei].deadline;
            seen = 1;
        }
        if (!seen) {
            violation(NM_REPEAT, v->id,
                      "repeat n=%" PRId64 ": seq %" PRId64 " missing (seqs up to %" PRId64
                      " fired)",
                      v->ops[oi].n, s, maxseq);
            return;
        }
        if (d <= prev) {
            violation(NM_REPEAT, v->id,
                      "repeat n=%" PRId64 ": seq %" PRId64 " deadline %" PRId64
                      " not after seq %" PRId64 "'s %" PRId64,
                      v->ops[oi].n, s, d, s - 1, prev);
            return;
        }
        prev = d;
    }
}

/* Whether repeat o's count may start over at event e: e is a seq 1 and o
 * may have been applied twice, its writer reading ops again (replaying:
 * the ingress after a failure) or o at +<ms> with e's deadline a first
 * point it could resolve to before its answer (a batch sent again after a
 * lost answer or a short WAIT resolves its first point again:
 * protocol.md). */
static int starts_over(const struct op *o, const struct event *e)
{
    return e->seq == 1 && (replaying(o->w) || (o->kind == WHEN_IN && e->deadline <= o->hi));
}

/* Whether the events of repeat owner (op index + 1) hold a seq 1 fired in
 * (a, b] (fire times) that starts its count over (starts_over: for a
 * replaying writer, at an at_ms already past, with the same first deadline
 * as before), so the same seq at both is two counts, not a clash. */
static int restarts_between(const struct idv *v, const size_t *owner, size_t own, int64_t a,
                            int64_t b)
{
    for (size_t ek = 0; ek < v->nevs; ek++)
        if (owner[ek] == own && starts_over(&v->ops[own - 1], &v->evs[ek]) &&
            v->evs[ek].fired > a && v->evs[ek].fired <= b)
            return 1;
    return 0;
}

/* Whether repeat oi has an event of seq 2 one period after event e
 * (owner[]: op index + 1). */
static int next_of(const struct idv *v, const size_t *owner, size_t oi, const struct event *e)
{
    for (size_t ej = 0; ej < v->nevs; ej++)
        if (owner[ej] == oi + 1 && v->evs[ej].seq == 2 &&
            v->evs[ej].deadline == e->deadline + v->ops[oi].period)
            return 1;
    return 0;
}

/* Whether repeat oi has an event of seq 1. */
static int has_seq1(const struct idv *v, const size_t *owner, size_t oi)
{
    for (size_t ej = 0; ej < v->nevs; ej++)
        if (owner[ej] == oi + 1 && v->evs[ej].seq == 1)
            return 1;
    return 0;
}

static void rule_repeat(const struct idv *v)
{
    size_t nev = v->nevs;
    size_t *owner = calloc(nev ? nev : 1, sizeof *owner); /* op index + 1 */
    if (!owner)
        return;
    for (size_t ei = 0; ei < nev; ei++) {
        const struct event *e = &v->evs[ei];
        if (e->recovered || e->seq == 0)
            continue;
        V[NM_REPEAT].counted++;
        /* the latest repeat whose grid holds it, unless an earlier one's
         * count it continues also does (a later repeat whose first point is
         * unsure holds much of an earlier one's grid) */
        for (size_t oi = v->nops; oi-- > 0;) {
            if (v->ops[oi].op != OP_REPEAT || !repeat_holds(&v->ops[oi], e))
                continue;
            if (!owner[ei])
                owner[ei] = oi + 1;
            /* (a seq 1 may start the latest one's count again, starts_over;
             * not an earlier, silent one's) */
            if (continues(v, owner, ei, oi) || starts_over(&v->ops[oi], e)) {
                owner[ei] = oi + 1;
                break;
            }
        }
        if (!owner[ei])
            violation(NM_REPEAT, v->id,
                      "seq %" PRId64 " deadline %" PRId64
                      " lies on the grid of no repeat sent before it fired",
                      e->seq, e->deadline);
    }
    /* An event of an earlier repeat in flight as a later one was applied
     * can lie on the later one's grid too when that one's interval is wide
     * (a slow flush): where two events of one owner share a seq with
     * different deadlines, the earlier deadline goes to the latest earlier
     * repeat that holds it, if any. */
    for (size_t ei = 0; ei < nev; ei++) {
        const struct event *e = &v->evs[ei];
        if (!owner[ei])
            continue;
        int clash = 0;
        for (size_t ej = 0; ej < nev && !clash; ej++)
            clash = owner[ej] == owner[ei] && v->evs[ej].seq == e->seq &&
                    v->evs[ej].deadline > e->deadline &&
                    !restarts_between(v, owner, owner[ei], e->fired, v->evs[ej].fired);
        for (size_t oi = owner[ei] - 1; clash && oi-- > 0;)
            if (v->ops[oi].op == OP_REPEAT && repeat_holds(&v->ops[oi], e)) {
                owner[ei] = oi + 1;
                break;
            }
    }
    /* A seq 1 that two repeats hold goes to the later one (the latest
     * wins, above). When the earlier one then has no seq 1 of its own but
     * a seq 2 one period after it, while the later one has no seq 2 after
     * it, the event is the earlier one's: the later one (an op whose
     * outcome was unknown) was never applied (seed 49). */
    for (size_t ei = 0; ei < nev; ei++) {
        const struct event *e = &v->evs[ei];
        if (!owner[ei] || e->seq != 1)
            continue;
        size_t later = owner[ei] - 1;
        if (next_of(v, owner, later, e))
            continue;
        for (size_t oi = later; oi-- > 0;)
            if (v->ops[oi].op == OP_REPEAT && repeat_holds(&v->ops[oi], e) &&
                !has_seq1(v, owner, oi) && next_of(v, owner, oi, e)) {
                owner[ei] = oi + 1;
                break;
            }
    }
    /* A repeat that may be applied again (starts_over: a replaying
     * writer's, or one at +<ms> sent again before its answer) gives one
     * count per application: a seq 1 of another deadline, or one after a
     * seq 2, starts the next (run[]); each is checked on its own. (A repeat
     * at an absolute time applied again fires seq 1 with the same deadline
     * again, then skips to the grid point after it.) */
    size_t *run = calloc(nev ? nev : 1, sizeof *run);
    if (!run) {
        free(owner);
        return;
    }
    for (size_t oi = 0; oi < v->nops; oi++) {
        if (v->ops[oi].op != OP_REPEAT)
            continue;
        size_t runs = 1;
        int64_t first = INT64_MIN; /* the current count's seq 1 deadline */
        int on = 0;                /* ... and it went past seq 1 */
        for (size_t ei = 0; ei < nev; ei++) {
            if (owner[ei] != oi + 1)
                continue;
            const struct event *e = &v->evs[ei];
            if (starts_over(&v->ops[oi], e) && (e->deadline != first || on)) {
                runs += first != INT64_MIN;
                first = e->deadline;
                on = 0;
            } else if (e->seq > 1) {
                on = 1;
            }
            run[ei] = runs;
        }
        for (size_t r = 1; r <= runs; r++)
            repeat_count(v, owner, run, oi, r);
    }
    free(run);
    free(owner);
}

static void rule_recovered(const struct idv *v)
{
    for (size_t ei = 0; ei < v->nevs; ei++) {
        const struct event *e = &v->evs[ei];
        if (!e->recovered)
            continue;
        V[NM_RECOVERED].counted++;
        const struct event *t = NULL;
        for (size_t ti = 0; ti < ei && !t; ti++)
            if (!v->evs[ti].recovered && v->evs[ti].deadline == e->deadline)
                t = &v->evs[ti];
        if (!t) {
            violation(NM_RECOVERED, v->id,
                      "recovered event of deadline %" PRId64
                      " follows no timeout event of that deadline",
                      e->deadline);
            continue;
        }
        /* the last cancel/repeat acked ok before the recovery; a watch after it */
        size_t from = 0;
        for (size_t oi = 0; oi < v->nops; oi++) {
            const struct op *o = &v->ops[oi];
            if (o->ack == ACK_OK && (o->op == OP_CANCEL || o->op == OP_REPEAT) &&
                o->ack_ms < e->recovered_ms - P->eps_ms)
                from = oi + 1;
        }
        int on = 0;
        for (size_t oi = from; oi < v->nops && !on; oi++)
            on = v->ops[oi].op == OP_WATCH && v->ops[oi].sent <= e->fired + P->eps_ms;
        if (!on)
            violation(NM_RECOVERED, v->id,
                      "recovered event of deadline %" PRId64 " (back at %" PRId64
                      ") though recovery was not on",
                      e->deadline, e->recovered_ms);
    }
}

static void rules_dup_late(const struct idv *v)
{
    for (size_t ei = 0; ei < v->nevs; ei++) {
        const struct event *e = &v->evs[ei];
        size_t first = ei;
        int64_t last = e->fired;
        for (size_t fi = 0; fi < v->nevs; fi++) {
            const struct event *f = &v->evs[fi];
            if (f->recovered != e->recovered || f->deadline != e->deadline)
                continue;
            if (fi < first)
                first = fi;
            if (f->fired > last)
                last = f->fired;
        }
        if (first != ei) { /* a copy */
            const char *kind = "none";
            in_fault(v->evs[first].fired, last, &kind);
            V[NM_DUPLICATES].counted++;
            if (strcmp(kind, "none") == 0)
                V[NM_DUPLICATES].extra[0]++;
            continue;
        }
        if (e->recovered)
            continue;
        int64_t ref = e->deadline;
        for (size_t oi = 0; oi < v->nops; oi++) {
            const struct op *o = &v->ops[oi];
            if (!is_candidate(o, e))
                continue;
            int64_t applied = o->ack != ACK_NONE ? o->ack_ms : o->sent;
            if (applied > ref)
                ref = applied;
        }
        int64_t late = e->fired - ref;
        if (late < 0)
            late = 0;
        int inside = in_fault(e->deadline, e->fired, NULL);
        size_t b = 0;
        while (late >= buckets[b])
            b++;
        hist[inside][b]++;
        V[NM_LATENESS].counted++;
        if (!inside && late > P->late_bound_ms)
            violation(NM_LATENESS, v->id,
                      "deadline %" PRId64 " fired %" PRId64 " ms late outside any fault",
                      e->deadline, late);
    }
}

static void dup_kinds(const struct idv *v)
{
    for (size_t ei = 0; ei < v->nevs; ei++) {
        const struct event *e = &v->evs[ei];
        size_t first = ei;
        for (size_t fi = 0; fi < ei; fi++)
            if (v->evs[fi].recovered == e->recovered && v->evs[fi].deadline == e->deadline) {
                first = fi;
                break;
            }
        if (first == ei)
            continue;
        for (size_t i = 0; i < R->nfaults; i++) {
            const struct fault *f = &R->faults[i];
            if (f->start > e->fired || f->end + P->recovery_ms < v->evs[first].fired)
                continue;
            int k = 0;
            while (k < ndupkinds && strcmp(dupkinds[k].kind, f->kind) != 0)
                k++;
            if (k == ndupkinds && ndupkinds < 32)
                dupkinds[ndupkinds++].kind = f->kind;
            if (k < ndupkinds)
                dupkinds[k].count++;
        }
    }
}

void nm_rules(const struct idv *v)
{
    rules_events(v);
    rule_never_lost(v);
    rule_repeat(v);
    rule_recovered(v);
    rules_dup_late(v);
    dup_kinds(v);
}
