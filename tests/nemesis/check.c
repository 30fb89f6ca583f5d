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
 */
#define _POSIX_C_SOURCE 200809L

#include "check_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
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

/* ------------------------------------------------------------ the rules */

static const struct nm_params *P;
static const struct nm_run *R;

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

/* Whether D is one of o's possible deadlines. */
static int matches(const struct op *o, int64_t d)
{
    if (o->op == OP_CANCEL)
        return 0;
    if (o->op == OP_REPEAT)
        return d >= o->lo && (d - o->lo) % o->period <= o->hi - o->lo;
    return d >= o->lo && d <= o->hi;
}

/* One ID's records: ops[0..nops) in its order, evs[0..nevs) in file order. */
struct idv {
    const char *id;
    struct op *ops;
    size_t nops;
    struct event *evs;
    size_t nevs;
};

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

/* What a violated rule prints, and how many times. */
struct verdict {
    unsigned long bad;      /* violations */
    unsigned long counted;  /* what was judged */
    unsigned long extra[4]; /* rule-specific counts */
    char first[1024];       /* the first violation, one line */
    const char *ids[64];    /* offending IDs to show (at most params->shown) */
    int nids;
    char *why[64]; /* per shown ID, the first reason */
};

static struct verdict V[NM_RULES + 1];

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

/* Whether the events of repeat owner (op index + 1) hold a seq 1 fired in
 * (a, b] (fire times): its count started again between two events (a
 * replaying writer's repeat applied again: at an at_ms already past, with
 * the same first deadline as before), so the same seq at both is two
 * counts, not a clash. */
static int restarts_between(const struct idv *v, const size_t *owner, size_t own, int64_t a,
                            int64_t b)
{
    for (size_t ek = 0; ek < v->nevs; ek++)
        if (owner[ek] == own && v->evs[ek].seq == 1 && v->evs[ek].fired > a &&
            v->evs[ek].fired <= b)
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
            /* (a replaying writer's seq 1 may start the latest one's count
             * again: its message read again; not an earlier, silent one's) */
            if (continues(v, owner, ei, oi) || (e->seq == 1 && replaying(v->ops[oi].w))) {
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
                    !(replaying(v->ops[owner[ei] - 1].w) &&
                      restarts_between(v, owner, owner[ei], e->fired, v->evs[ej].fired));
        for (size_t oi = owner[ei] - 1; clash && oi-- > 0;)
            if (v->ops[oi].op == OP_REPEAT && repeat_holds(&v->ops[oi], e)) {
                owner[ei] = oi + 1;
                break;
            }
    }
    /* A writer whose ops may be applied again (meta "replaying": the
     * ingress reads a batch again after a failure, protocol.md) gives a
     * repeat one count per application: a seq 1 of another deadline, or
     * one after a seq 2, starts the next (run[]); each is checked on its
     * own. (A repeat at an absolute time applied again fires seq 1 with
     * the same deadline again, then skips to the grid point after it.) */
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
            if (replaying(v->ops[oi].w) && e->seq == 1 && (e->deadline != first || on)) {
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

/* Lateness histogram buckets (upper bounds, ms). */
static const int64_t buckets[] = {10, 100, 1000, 2000, 10000, 60000, INT64_MAX};
#define NBUCKETS (sizeof buckets / sizeof buckets[0])
static unsigned long hist[2][NBUCKETS]; /* [0] outside faults, [1] inside */

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

/* Duplicate counts by fault kind: a small table. */
static struct {
    const char *kind;
    unsigned long count;
} dupkinds[32];
static int ndupkinds;

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
        rules_events(v);
        rule_never_lost(v);
        rule_repeat(v);
        rule_recovered(v);
        rules_dup_late(v);
        dup_kinds(v);
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
