/*
 * check — the nemesis checker's core: proves the guarantees of
 * docs/protocol.md ("Guarantees", "The producer protocol", "Recovered
 * events") from a run's records, or names the ID that breaks one.
 *
 * What a record can tell. An op line is written before the op is handed to
 * the producer (sent_ms) and its ack after the flush that covered it
 * (ack_ms); both read CLOCK_REALTIME on the host Redis runs on, so Redis'
 * TIME, the scanners' fired_ms and these agree to the ms (eps_ms covers the
 * truncations). From that:
 *
 *  - An op's possible deadlines. at_ms: exactly that. in_ms: the write's
 *    first application, on Redis' clock, lies in [sent_ms, ack_ms] (an
 *    ack ok:false or no ack: [sent_ms, end_ms]: it may have applied at any
 *    time before the end), so its deadline lies in [sent + in, ack + in]
 *    (each end widened by eps). A write sent again keeps the first
 *    application's deadline, one applied again after a lost answer gets a
 *    later one, still inside. A repeat: a first point T in that interval,
 *    then the grid T + k * period (k >= 0); a D is on it when D >= lo and
 *    (D - lo) mod period <= hi - lo. Coalescing within a batch sends the
 *    net effect (touch, touch -> the last; extend +5 s, extend +9 s ->
 *    +9 s; touch @T1, extend @T2 > T1 -> touch @T2): every deadline Redis
 *    then holds is still one of the ops' possible deadlines, applied
 *    within [sent, ack] of that op; so nothing below depends on batching.
 *  - Per-ID order: every ID has one writer (the rule of the run's IDs:
 *    two writers of one ID stop the checker), its ops are applied in its
 *    order n, an op that failed or whose outcome is unknown either applied
 *    in its place or not at all.
 *  - An event's candidates: the ops of its ID sent before it fired (+eps)
 *    whose possible deadlines hold its deadline_ms. Its deadline came from
 *    one of them (one Redis held when the claim read it).
 *
 * The rules, each as decided here:
 *
 *  1 never-early. Every timeout event has fired_ms >= deadline_ms, and at
 *    least one candidate. Sound: the claim reads due by Redis TIME, the
 *    same clock; a deadline is only ever one an op set.
 *  2 never-lost. For each op acked ok that sets a deadline: touch; repeat
 *    (its first point, or any later grid point: an outage skips points);
 *    extend/watch only when no earlier op since the last acked-ok reset
 *    (touch, repeat, cancel) could hold a deadline at or after this one's
 *    earliest (an earlier repeat always could: its grid runs on), since an
 *    extend that does not move the deadline changes nothing. Its deadline
 *    D (hi, the latest possible) must have a timeout event whose
 *    deadline_ms is one of the op's possible deadlines, unless a later op
 *    of the ID (any outcome) was sent before D + allowed lateness: late_ms,
 *    pushed to a fault's end + recovery_ms while a fault overlaps the
 *    window (any fault, any target: a fault anywhere may delay any shard).
 *    An op whose window ends after end_ms is not judged (counted
 *    "unjudged"). Sound: an op acked ok was applied; nothing but a later
 *    op of the ID can remove or move its deadline; a claimed deadline is
 *    delivered at least once (Guarantee 2), within the lateness.
 *  3 cancel-wins. A timeout event is refused when every candidate O has a
 *    later op R, acked ok before deadline_ms - eps, that removes or moves
 *    D: a cancel; a touch or repeat that cannot set D itself; an
 *    extend/watch whose earliest deadline is after D. Sound: R applied
 *    before D was due, so before any claim of D (claims happen at or after
 *    D on Redis' clock), and D was then pending (O applied before R); an
 *    op that could set D again is a candidate of its own. A recovered
 *    event is never judged here (protocol.md: a queued recovered event is
 *    not withdrawn).
 *  4 extend-never-shortens. A timeout event is refused when it has no
 *    candidate that rule 3 leaves standing and is not "shortened", and one
 *    is shortened: an extend/watch O acked ok (applied before its
 *    ack_ms), an earlier op P acked ok (touch, extend, watch, repeat)
 *    whose earliest deadline is after D, only extends/watches between P
 *    and O, and O acked before P's earliest deadline - eps. Sound: after
 *    P the pending deadline is >= P's (an extend only raises it, a repeat
 *    only moves on to later points), it was not due when O applied, so O
 *    changed nothing and D was never pending. For a writer whose ops may
 *    be applied again (meta "replaying"), also no touch, repeat or cancel
 *    after O sent before O's ack: O may be applied again after one of
 *    them lowered or cleared what was pending. (A candidate refused by
 *    both rules is reported under rule 4.)
 *  5 repeat. Each timeout event with seq belongs to the latest repeat op
 *    (in the ID's order) sent before it fired whose grid holds its
 *    deadline at least seq - 1 periods after the grid's earliest first
 *    point, unless an earlier such repeat's count it continues (its
 *    previous event has seq - 1, whole periods earlier); none: a
 *    violation. Where that gives one repeat two deadlines for one seq, the
 *    earlier deadline goes to the latest earlier repeat whose grid holds
 *    it (an event of the old repeat in flight as a new one was applied, on
 *    the new one's grid only because the new one's flush was slow). Per
 *    repeat op: the seqs seen are exactly 1..k, one deadline per seq,
 *    deadlines increasing with seq; for a writer whose ops may be applied
 *    again (meta "replaying": the ingress reads a batch again after a
 *    failure, protocol.md), per application of the op: each starts its
 *    count at seq 1 on a grid of its own, so a seq 1 of another deadline,
 *    or one after a seq 2, starts the next count.
 *    Sound: ack.lua counts a fire per acknowledged claim and re-arms on
 *    the grid only an ID still on its lease, skipping missed points (not
 *    seqs); a new repeat (or a repeat applied again) starts a new count;
 *    redelivery repeats a (seq, deadline) pair, never a seq with another
 *    deadline. The last fire may still be in flight at the end: seqs 1..k
 *    stay contiguous all the same.
 *  6 recovered. Each recovered event follows, in events.jsonl (same key:
 *    same partition, read in order), a timeout event of its ID with the
 *    same deadline_ms, and the ID had recovery on: a watch (any outcome)
 *    sent before Kafka took that timeout (the recovered event's fired_ms:
 *    protocol.md, a watch during the dispatch counts), with no acked-ok
 *    cancel or repeat
 *    after it in the ID's order acked before the recovery (recovered_ms
 *    - eps): such a cancel forgets the offline ID, a repeat forgets the
 *    watch; one acked after the recovery does not withdraw it.
 *  7 duplicates. Events with the same (id, type, deadline_ms) beyond the
 *    first are counted, by the fault kinds overlapping their span; never
 *    a violation by itself (delivery is at least once). A copy that a
 *    cancel, a reset or an extend forbids is judged by 3 and 4 as any
 *    event is.
 *  8 lateness. For the first copy of each (id, deadline_ms) timeout:
 *    fired_ms - max(deadline_ms, when written) (a deadline already past
 *    when written is late from its write: the latest apply bound of its
 *    candidates). Outside fault windows (a fault's start to its end +
 *    recovery_ms not overlapping [deadline, fired]) it must stay under
 *    late_bound_ms; inside it is counted in a histogram only.
 *
 * Not checked: payloads; bounded slack (the nemesis runs without
 * producer.slack_ms, with which rule 2's "later op" window and rule 8 would
 * need slack_ms added).
 *
 * This file is the run around the rules: each op's possible deadlines, the
 * records sorted and grouped per ID, the verdict lines and the offending
 * IDs' histories; the rules' code is check_rules.c's (nm_rules, one ID at
 * a time), the state both share check_priv.h's.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
static const char *rule_names[] = {
    "never-early", "never-lost", "cancel-wins", "extend-never-shortens",
    "repeat",      "recovered",  "duplicates",  "lateness",
};

const char *nm_rule_name(enum nm_rule r)
{
    return r >= 1 && r <= NM_RULES ? rule_names[r - 1] : "?";
}

void nm_params_default(struct nm_params *p)
{
    p->eps_ms = 5;
    p->late_ms = 3000;
    p->recovery_ms = 15000;
    p->late_bound_ms = 2000;
    p->shown = 5;
}

/* ------------------------------------------------------------ the run */

const struct nm_params *P;
const struct nm_run *R;
struct verdict V[NM_RULES + 1];
unsigned long hist[2][NBUCKETS];
struct dupkind dupkinds[32];
int ndupkinds;

/* Fills o->lo, o->hi: the possible deadlines (a repeat's first point). */
static void bounds(struct op *o)
{
    if (o->kind == WHEN_AT) {
        o->lo = o->hi = o->when;
    } else if (o->kind == WHEN_IN) {
        int64_t applied = o->ack == ACK_OK ? o->ack_ms : R->end;
        if (applied < o->sent)
            applied = o->sent;
        o->lo = o->sent + o->when - P->eps_ms;
        o->hi = applied + o->when + P->eps_ms;
    } else {
        o->lo = o->hi = 0;
    }
}

static void print_history(FILE *out, const struct idv *v)
{
    int64_t from = INT64_MAX, to = INT64_MIN;
    fprintf(out, "    history of %s:\n", v->id);
    for (size_t i = 0; i < v->nops; i++) {
        const struct op *o = &v->ops[i];
        fprintf(out, "      op %s n=%" PRId64 " %s", o->w, o->n, nm_op_name(o->op));
        if (o->kind == WHEN_AT)
            fprintf(out, " at=%" PRId64, o->when);
        else if (o->kind == WHEN_IN)
            fprintf(out, " in=%" PRId64, o->when);
        if (o->op == OP_REPEAT)
            fprintf(out, " period=%" PRId64, o->period);
        fprintf(out, " sent=%" PRId64, o->sent);
        if (o->ack == ACK_NONE)
            fprintf(out, " no ack (unknown)");
        else
            fprintf(out, " %s at %" PRId64 "%s%s", o->ack == ACK_OK ? "ok" : "FAILED", o->ack_ms,
                    o->err ? ": " : "", o->err ? o->err : "");
        if (o->op != OP_CANCEL)
            fprintf(out, " -> deadline %" PRId64 "..%" PRId64, o->lo, o->hi);
        fputc('\n', out);
        from = o->sent < from ? o->sent : from;
        to = o->sent > to ? o->sent : to;
    }
    for (size_t i = 0; i < v->nevs; i++) {
        const struct event *e = &v->evs[i];
        fprintf(out, "      event #%zu %s deadline=%" PRId64 " fired=%" PRId64, e->order,
                e->recovered ? "recovered" : "timeout", e->deadline, e->fired);
        if (e->seq)
            fprintf(out, " seq=%" PRId64, e->seq);
        if (e->recovered)
            fprintf(out, " recovered_ms=%" PRId64, e->recovered_ms);
        fprintf(out, " (%+" PRId64 " ms)\n", e->fired - e->deadline);
        from = e->fired < from ? e->fired : from;
        to = e->fired > to ? e->fired : to;
        to = e->deadline > to ? e->deadline : to;
    }
    for (size_t i = 0; i < v->nops; i++)
        to = v->ops[i].hi > to ? v->ops[i].hi : to;
    for (size_t i = 0; i < R->nfaults; i++) {
        const struct fault *f = &R->faults[i];
        if (f->start <= to && f->end + P->recovery_ms >= from)
            fprintf(out, "      fault %s %s %" PRId64 "..%" PRId64 "\n", f->kind, f->target,
                    f->start, f->end);
    }
}

static int cmp_op(const void *a, const void *b)
{
    const struct op *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    if (c == 0)
        c = strcmp(x->w, y->w);
    if (c == 0)
        c = (x->n > y->n) - (x->n < y->n);
    return c;
}

static int cmp_ev(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->order > y->order) - (x->order < y->order);
}

/* The ID groups, in ID order: ops' IDs and events' IDs merged. */
static size_t groups(struct nm_run *run, struct idv **out)
{
    size_t n = 0, cap = 0, oi = 0, ei = 0;
    struct idv *g = NULL;
    while (oi < run->nops || ei < run->nevs) {
        const char *id;
        if (oi < run->nops && ei < run->nevs)
            id = strcmp(run->ops[oi].id, run->evs[ei].id) <= 0 ? run->ops[oi].id : run->evs[ei].id;
        else
            id = oi < run->nops ? run->ops[oi].id : run->evs[ei].id;
        if (nm_grow((void **)&g, &cap, n, sizeof *g) < 0)
            break;
        struct idv *v = &g[n++];
        v->id = id;
        v->ops = &run->ops[oi];
        v->nops = 0;
        while (oi < run->nops && strcmp(run->ops[oi].id, id) == 0)
            oi++, v->nops++;
        v->evs = &run->evs[ei];
        v->nevs = 0;
        while (ei < run->nevs && strcmp(run->evs[ei].id, id) == 0)
            ei++, v->nevs++;
    }
    *out = g;
    return n;
}

unsigned nm_check(struct nm_run *run, const struct nm_params *params, FILE *out)
{
    P = params;
    R = run;
    memset(V, 0, sizeof V);
    memset(hist, 0, sizeof hist);
    ndupkinds = 0;
    if (run->nops)
        qsort(run->ops, run->nops, sizeof *run->ops, cmp_op);
    if (run->nevs)
        qsort(run->evs, run->nevs, sizeof *run->evs, cmp_ev);
    for (size_t i = 0; i < run->nops; i++)
        bounds(&run->ops[i]);
    struct idv *g = NULL;
    size_t ng = groups(run, &g);
    size_t two = 0;
    for (size_t i = 0; i < ng; i++) {
        const struct idv *v = &g[i];
        for (size_t k = 1; k < v->nops; k++)
            if (strcmp(v->ops[k].w, v->ops[0].w) != 0)
                two++;
        nm_rules(v);
    }
    fprintf(out, "nemesis-check: seed %" PRId64 ": %zu ops, %zu events, %zu IDs, %zu faults\n",
            run->seed, run->nops, run->nevs, ng, run->nfaults);
    if (two)
        fprintf(out,
                "nemesis-check: warning: %zu ops on IDs that another writer wrote too: "
                "their order is taken per writer\n",
                two);
    unsigned bad = 0;
    for (int r = 1; r <= NM_RULES; r++) {
        struct verdict *v = &V[r];
        if (v->bad) {
            bad |= 1u << (r - 1);
            fprintf(out, "VIOLATION %s: %lu (first: %s)\n", nm_rule_name(r), v->bad, v->first);
            fprintf(out, "    seed %" PRId64 "\n", run->seed);
            for (int k = 0; k < v->nids; k++) {
                for (size_t i = 0; i < ng; i++)
                    if (g[i].id == v->ids[k] || strcmp(g[i].id, v->ids[k]) == 0) {
                        fprintf(out, "  %s: %s\n", g[i].id, v->why[k]);
                        print_history(out, &g[i]);
                        break;
                    }
            }
        } else if (r == NM_NEVER_EARLY) {
            fprintf(out, "ok %s (%lu timeout events checked)\n", nm_rule_name(r), v->counted);
        } else if (r == NM_NEVER_LOST) {
            fprintf(out,
                    "ok %s (%lu deadlines checked, %lu superseded in time, %lu extends that "
                    "may not move, %lu too near the end)\n",
                    nm_rule_name(r), v->counted, v->extra[2], v->extra[0], v->extra[1]);
        } else if (r == NM_REPEAT) {
            fprintf(out, "ok %s (%lu repeat events, %lu repeats fired)\n", nm_rule_name(r),
                    v->counted, v->extra[0]);
        } else if (r == NM_DUPLICATES) {
            fprintf(out, "ok %s (%lu copies; %lu outside faults", nm_rule_name(r), v->counted,
                    v->extra[0]);
            for (int k = 0; k < ndupkinds; k++)
                fprintf(out, ", %s %lu", dupkinds[k].kind, dupkinds[k].count);
            fprintf(out, ")\n");
        } else if (r == NM_LATENESS) {
            fprintf(out,
                    "ok %s (%lu deadlines; ms <10/<100/<1000/<2000/<10000/<60000/more: "
                    "outside faults",
                    nm_rule_name(r), v->counted);
            for (int in = 0; in < 2; in++) {
                if (in)
                    fprintf(out, "; inside");
                for (size_t b = 0; b < NBUCKETS; b++)
                    fprintf(out, "%s%lu", b ? "/" : " ", hist[in][b]);
            }
            fprintf(out, ")\n");
        } else {
            fprintf(out, "ok %s (%lu events checked)\n", nm_rule_name(r), v->counted);
        }
        for (int k = 0; k < v->nids; k++)
            free(v->why[k]);
    }
    free(g);
    return bad;
}
