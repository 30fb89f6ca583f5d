/*
 * test_nemesis — the nemesis checker's rules (tests/nemesis/check.c argues
 * them, check_rules.c decides them) on hand-made histories: for each rule one that holds and one that breaks it
 * and must be reported, plus the edges protocol.md allows (an extend that
 * does not move, a cancel acked too late to win, skipped repeat points,
 * copies of an event, lateness inside a fault).
 */
#define _POSIX_C_SOURCE 200809L

#include "../nemesis/check.h"
#include "t.h"

#include <stdlib.h>

#define T0 1000000

static char *out_text; /* the checker's output of the last run */

/* Runs the checker over `lines`: each starts with M (meta, replacing the
 * default one), H (history), E (event) or F (fault) and a space, then the JSON; numbers written as
 * T+N stand for T0 + N. Returns the violated rules' bits. */
static unsigned run(const char *const *lines)
{
    struct nm_run *r = nm_run_new();
    REQUIRE(r);
    char meta[256], err[256];
    snprintf(meta, sizeof meta,
             "{\"seed\":42,\"minutes\":1,\"ns\":\"demo\",\"start_ms\":%d,\"stop_ms\":%d,"
             "\"end_ms\":%d,\"grace_ms\":5000,\"writers\":[\"client\"]}",
             T0, T0 + 60000, T0 + 100000);
    REQUIRE(nm_run_meta(r, meta, err, sizeof err) == 0);
    for (size_t i = 0; lines[i]; i++) {
        char buf[1024], *o = buf;
        const char *s = lines[i] + 2;
        while (*s && o < buf + sizeof buf - 16) {
            if (s[0] == 'T' && s[1] == '+') {
                long v = strtol(s + 2, (char **)&s, 10);
                o += snprintf(o, 16, "%ld", (long)T0 + v);
            } else {
                *o++ = *s++;
            }
        }
        *o = '\0';
        int rc = lines[i][0] == 'H'   ? nm_run_history(r, buf, err, sizeof err)
                 : lines[i][0] == 'E' ? nm_run_event(r, buf, err, sizeof err)
                 : lines[i][0] == 'M' ? nm_run_meta(r, buf, err, sizeof err)
                                      : nm_run_fault(r, buf, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "    %s: %s\n", buf, err);
        REQUIRE(rc == 0);
    }
    struct nm_params p;
    nm_params_default(&p);
    size_t len;
    free(out_text);
    FILE *f = open_memstream(&out_text, &len);
    REQUIRE(f);
    unsigned bad = nm_check(r, &p, f);
    fclose(f);
    nm_run_free(r);
    return bad;
}

#define BIT(rule) (1u << ((rule)-1))

/* an op and its ack, writer client */
#define OP(n, rest) "H {\"t\":\"op\",\"w\":\"client\",\"n\":" #n "," rest "}"
#define ACK(n, at) "H {\"t\":\"ack\",\"w\":\"client\",\"n\":" #n ",\"ack_ms\":" at ",\"ok\":true}"
#define EV(id, d, f)                                                               \
    "E {\"type\":\"timeout\",\"ns\":\"demo\",\"id\":\"" id "\",\"deadline_ms\":" d \
    ",\"fired_ms\":" f ",\"shard\":0}"

TEST(nemesis_never_early)
{
    const char *good[] = {OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
                          ACK(1, "T+10"), EV("c-1", "T+1000", "T+1004"), NULL};
    CHECK(run(good) == 0);
    CHECK(strstr(out_text, "ok never-early (1 timeout events checked)"));
    /* relative: any deadline in [sent + in, ack + in] */
    const char *rel[] = {OP(1, "\"op\":\"watch\",\"id\":\"c-1\",\"in_ms\":1000,\"sent_ms\":T+0"),
                         ACK(1, "T+30"), EV("c-1", "T+1021", "T+1025"), NULL};
    CHECK(run(rel) == 0);
    const char *early[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"), ACK(1, "T+10"),
        EV("c-1", "T+1000", "T+999"), NULL};
    CHECK(run(early) == BIT(NM_NEVER_EARLY));
    CHECK(strstr(out_text, "VIOLATION never-early: 1 (first: c-1: fired at"));
    CHECK(strstr(out_text, "seed 42"));
    CHECK(strstr(out_text, "history of c-1"));
    /* a deadline no op set: 1 s after the relative op's latest */
    const char *stray[] = {OP(1, "\"op\":\"watch\",\"id\":\"c-1\",\"in_ms\":1000,\"sent_ms\":T+0"),
                           ACK(1, "T+30"), EV("c-1", "T+1031", "T+1032"),
                           EV("c-1", "T+2031", "T+2033"), NULL};
    CHECK(run(stray) == BIT(NM_NEVER_EARLY));
    CHECK(strstr(out_text, "is no possible deadline"));
}

TEST(nemesis_never_lost)
{
    const char *lost[] = {OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
                          ACK(1, "T+10"), NULL};
    CHECK(run(lost) == BIT(NM_NEVER_LOST));
    CHECK(strstr(out_text, "VIOLATION never-lost"));
    CHECK(strstr(out_text, "op client n=1 touch at="));
    /* a later op sent within the lateness may have reset it in time */
    const char *reset[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"), ACK(1, "T+10"),
        OP(2, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+1500"), ACK(2, "T+1510"), NULL};
    CHECK(run(reset) == 0);
    /* ... but not one sent long after (3 s of lateness allowed) */
    const char *late[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"), ACK(1, "T+10"),
        OP(2, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+9000"), ACK(2, "T+9010"), NULL};
    CHECK(run(late) == BIT(NM_NEVER_LOST));
    /* inside a fault the window runs to its end + recovery */
    const char *fault[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        OP(2, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+9000"),
        ACK(2, "T+9010"),
        "F {\"kind\":\"kafka-down\",\"target\":\"kafka\",\"start_ms\":T+500,"
        "\"end_ms\":T+2000}",
        NULL};
    CHECK(run(fault) == 0);
    /* an extend that does not move the deadline changes nothing */
    const char *noop[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+5000,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        OP(2, "\"op\":\"extend\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+20"),
        ACK(2, "T+30"),
        EV("c-1", "T+5000", "T+5003"),
        NULL};
    CHECK(run(noop) == 0);
    /* an extend that does move it must fire */
    const char *moves[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"), ACK(1, "T+10"),
        OP(2, "\"op\":\"extend\",\"id\":\"c-1\",\"at_ms\":T+5000,\"sent_ms\":T+20"), ACK(2, "T+30"),
        NULL};
    CHECK(run(moves) == BIT(NM_NEVER_LOST));
    CHECK(strstr(out_text, "extend n=2 acked ok"));
    /* a failed op is not owed an event; near the end nothing is judged */
    const char *failed[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
        "H {\"t\":\"ack\",\"w\":\"client\",\"n\":1,\"ack_ms\":T+10,\"ok\":false,"
        "\"err\":\"unreachable\"}",
        OP(2, "\"op\":\"touch\",\"id\":\"c-2\",\"at_ms\":T+96000,\"sent_ms\":T+0"), ACK(2, "T+10"),
        NULL};
    CHECK(run(failed) == 0);
}

TEST(nemesis_cancel_wins)
{
    const char *won[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"), ACK(1, "T+10"),
        OP(2, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+100"), ACK(2, "T+110"), NULL};
    CHECK(run(won) == 0);
    const char *lost[] = {OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
                          ACK(1, "T+10"),
                          OP(2, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+100"),
                          ACK(2, "T+110"),
                          EV("c-1", "T+1000", "T+1002"),
                          NULL};
    CHECK(run(lost) == BIT(NM_CANCEL_WINS));
    CHECK(strstr(out_text, "VIOLATION cancel-wins"));
    /* a cancel acked as the deadline fell due may lose to the claim */
    const char *race[] = {OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
                          ACK(1, "T+10"),
                          OP(2, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+990"),
                          ACK(2, "T+998"),
                          EV("c-1", "T+1000", "T+1002"),
                          NULL};
    CHECK(run(race) == 0);
    /* a failed cancel may not have applied */
    const char *failed[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        OP(2, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+100"),
        "H {\"t\":\"ack\",\"w\":\"client\",\"n\":2,\"ack_ms\":T+110,\"ok\":false}",
        EV("c-1", "T+1000", "T+1002"),
        NULL};
    CHECK(run(failed) == 0);
    /* a touch to another time is a reset: the old deadline must not fire */
    const char *reset[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        OP(2, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+3000,\"sent_ms\":T+100"),
        ACK(2, "T+110"),
        EV("c-1", "T+1000", "T+1002"),
        EV("c-1", "T+3000", "T+3002"),
        NULL};
    CHECK(run(reset) == BIT(NM_CANCEL_WINS));
    /* a recovered event queued before the cancel is not withdrawn: rule 6 judges it */
}

TEST(nemesis_extend_never_shortens)
{
    const char *bad[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+5000,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        OP(2, "\"op\":\"extend\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+20"),
        ACK(2, "T+30"),
        EV("c-1", "T+1000", "T+1002"),
        EV("c-1", "T+5000", "T+5002"),
        NULL};
    CHECK(run(bad) == BIT(NM_EXTEND_NEVER_SHORTENS));
    CHECK(strstr(out_text, "VIOLATION extend-never-shortens"));
    /* after a cancel the extend sets its deadline */
    const char *good[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+5000,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        OP(2, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+15"),
        ACK(2, "T+18"),
        OP(3, "\"op\":\"extend\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+20"),
        ACK(3, "T+30"),
        EV("c-1", "T+1000", "T+1002"),
        NULL};
    CHECK(run(good) == 0);
    /* the earlier deadline had fallen due (in flight: nothing pending) */
    const char *due[] = {OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
                         ACK(1, "T+10"),
                         EV("c-1", "T+1000", "T+1002"),
                         OP(2, "\"op\":\"watch\",\"id\":\"c-1\",\"at_ms\":T+900,\"sent_ms\":T+999"),
                         ACK(2, "T+1001"),
                         EV("c-1", "T+900", "T+1003"),
                         NULL};
    CHECK(run(due) == 0);
    /* a replaying writer (the ingress read again what it had applied): the
     * extend is applied again after a later touch fired and left nothing
     * pending, so it sets its past deadline once more (seed 22, k-9); a
     * writer that applies an op once cannot do that */
#define AGAIN(meta)                                                                     \
    meta, OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+50000,\"sent_ms\":T+0"),   \
        ACK(1, "T+10"),                                                                 \
        OP(2, "\"op\":\"extend\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+20"),    \
        OP(3, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1200,\"sent_ms\":T+30"),     \
        EV("c-1", "T+1200", "T+1201"), EV("c-1", "T+1000", "T+3000"), ACK(2, "T+3100"), \
        ACK(3, "T+3100"), NULL
    const char *again[] = {AGAIN(
        "M {\"seed\":42,\"minutes\":1,\"ns\":\"demo\",\"start_ms\":T+0,\"stop_ms\":T+60000,"
        "\"end_ms\":T+100000,\"grace_ms\":5000,\"writers\":[\"client\"],\"replaying\":[\"client\"]}")};
    CHECK(run(again) == 0);
    const char *once[] = {
        AGAIN("M {\"seed\":42,\"minutes\":1,\"ns\":\"demo\",\"start_ms\":T+0,\"stop_ms\":T+60000,"
              "\"end_ms\":T+100000,\"grace_ms\":5000,\"writers\":[\"client\"]}")};
    CHECK(run(once) == BIT(NM_EXTEND_NEVER_SHORTENS));
#undef AGAIN
}

TEST(nemesis_repeat)
{
    /* seq 1, 2, then a skipped point, a redelivered copy of seq 3 */
    const char *good[] = {
        OP(1,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+1000,\"period_ms\":500,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1000,\"fired_ms\":T+1001,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1500,\"fired_ms\":T+1501,\"seq\":2}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+2500,\"fired_ms\":T+2501,\"seq\":3}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+2500,\"fired_ms\":T+2601,\"seq\":3}",
        NULL};
    CHECK(run(good) == 0);
    CHECK(strstr(out_text, "ok repeat (4 repeat events, 1 repeats fired)"));
    CHECK(strstr(out_text, "ok duplicates (1 copies"));
    const char *gap[] = {
        OP(1,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+1000,\"period_ms\":500,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1000,\"fired_ms\":T+1001,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+2000,\"fired_ms\":T+2001,\"seq\":3}",
        NULL};
    CHECK(run(gap) == BIT(NM_REPEAT));
    CHECK(strstr(out_text, "seq 2 missing"));
    const char *twice[] = {
        OP(1,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+1000,\"period_ms\":500,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1000,\"fired_ms\":T+1001,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1500,\"fired_ms\":T+1501,\"seq\":1}",
        NULL};
    CHECK(run(twice) == BIT(NM_REPEAT));
    /* a second repeat starts its count again */
    const char *again[] = {
        OP(1,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+1000,\"period_ms\":500,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1000,\"fired_ms\":T+1001,\"seq\":1}",
        OP(2,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+1200,\"period_ms\":700,\"sent_ms\":T+1100"),
        ACK(2, "T+1110"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1200,\"fired_ms\":T+1201,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1900,\"fired_ms\":T+1901,\"seq\":2}",
        NULL};
    CHECK(run(again) == 0);
    /* the first repeat's seq 2 in flight while a second one, whose flush was
     * slow, was applied: it lies on both grids, and is the first one's */
    const char *inflight[] = {
        OP(1,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+1000,\"period_ms\":500,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1000,\"fired_ms\":T+1001,\"seq\":1}",
        OP(2,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"in_ms\":50,\"period_ms\":1000,\"sent_ms\":T+1400"),
        ACK(2, "T+1700"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1500,\"fired_ms\":T+1501,\"seq\":2}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1600,\"fired_ms\":T+1601,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+2600,\"fired_ms\":T+2601,\"seq\":2}",
        NULL};
    CHECK(run(inflight) == 0);
    /* a second repeat whose interval is wider than its period (a slow
     * ingress commit) holds every later deadline on its grid: the first
     * one's seqs 3 and 4, fired after it was sent, are still the first
     * one's (a seq k fire is k - 1 periods past the first point or more) */
    const char *wide[] = {
        OP(1,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+1000,\"period_ms\":500,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1000,\"fired_ms\":T+1001,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1500,\"fired_ms\":T+1501,\"seq\":2}",
        OP(2,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"in_ms\":100,\"period_ms\":700,\"sent_ms\":T+1600"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+2000,\"fired_ms\":T+2001,\"seq\":3}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+2500,\"fired_ms\":T+2501,\"seq\":4}",
        ACK(2, "T+3000"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+3050,\"fired_ms\":T+3051,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+3750,\"fired_ms\":T+3751,\"seq\":2}",
        NULL};
    CHECK(run(wide) == 0);
    /* the same, further on: the first repeat's seqs 5 and 6 also lie on the
     * wide second one's grid far enough past its first point; they continue
     * the first one's count (seq 4 whole periods before), so they are its */
    const char *wider[] = {
        OP(1,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+1000,\"period_ms\":500,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1000,\"fired_ms\":T+1001,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1500,\"fired_ms\":T+1501,\"seq\":2}",
        OP(2,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"in_ms\":100,\"period_ms\":300,\"sent_ms\":T+1600"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+2000,\"fired_ms\":T+2001,\"seq\":3}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+2500,\"fired_ms\":T+2501,\"seq\":4}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+3000,\"fired_ms\":T+3001,\"seq\":5}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+3500,\"fired_ms\":T+3501,\"seq\":6}",
        ACK(2, "T+5000"),
        NULL};
    CHECK(run(wider) == 0);
    /* a gap in one repeat's count is still one */
    const char *hole[] = {
        OP(1,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+1000,\"period_ms\":500,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1000,\"fired_ms\":T+1001,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1500,\"fired_ms\":T+1501,\"seq\":2}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+2500,\"fired_ms\":T+2501,\"seq\":4}",
        NULL};
    CHECK(run(hole) == 1u << (NM_REPEAT - 1));
    /* a repeat applied twice (the ingress read its batch again after a
     * failure; any writer's at +<ms> sent again before its answer, seed
     * 37): two counts, each from seq 1 */
#define TWICE(meta)                                                                                     \
    meta,                                                                                               \
        OP(1,                                                                                           \
           "\"op\":\"repeat\",\"id\":\"c-1\",\"in_ms\":500,\"period_ms\":1000,\"sent_ms\":T+0"),        \
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+600,\"fired_ms\":T+601,\"seq\":1}",   \
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1300,\"fired_ms\":T+1301,\"seq\":1}", \
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+2300,\"fired_ms\":T+2301,\"seq\":2}", \
        ACK(1, "T+900"), NULL
    const char *replayed[] = {TWICE(
        "M {\"seed\":42,\"minutes\":1,\"ns\":\"demo\",\"start_ms\":T+0,\"stop_ms\":T+60000,"
        "\"end_ms\":T+100000,\"grace_ms\":5000,\"writers\":[\"client\"],\"replaying\":[\"client\"]}")};
    CHECK(run(replayed) == 0);
    const char *resent[] = {
        TWICE("M {\"seed\":42,\"minutes\":1,\"ns\":\"demo\",\"start_ms\":T+0,\"stop_ms\":T+60000,"
              "\"end_ms\":T+100000,\"grace_ms\":5000,\"writers\":[\"client\"]}")};
    CHECK(run(resent) == 0);
#undef TWICE
    /* ... but not for a writer that applies an op once, where the second
     * seq 1 lies past every first point the op could resolve to before its
     * answer (acked at T+700: at most T+1200; T+1600 is on its grid), or the repeat is at an
     * absolute time (its first point never resolves again) */
    const char *after_ack[] = {
        OP(1, "\"op\":\"repeat\",\"id\":\"c-1\",\"in_ms\":500,\"period_ms\":1000,\"sent_ms\":T+0"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+600,\"fired_ms\":T+601,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1600,\"fired_ms\":T+1601,\"seq\":1}",
        ACK(1, "T+700"), NULL};
    CHECK(run(after_ack) == 1u << (NM_REPEAT - 1));
    const char *absolute[] = {
        OP(1, "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+600,\"period_ms\":700,\"sent_ms\":T+0"),
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+600,\"fired_ms\":T+601,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+1300,\"fired_ms\":T+1301,\"seq\":1}",
        ACK(1, "T+900"), NULL};
    CHECK(run(absolute) == 1u << (NM_REPEAT - 1));
    /* a seq 1 on the first points of two repeats, the later one's outcome
     * unknown (its ack failed): its seq 2 and 3 one and two periods of the
     * earlier one after it make it the earlier one's (seed 49) */
    const char *unknown_later[] = {
        OP(1, "\"op\":\"repeat\",\"id\":\"c-1\",\"in_ms\":2600,\"period_ms\":2339,\"sent_ms\":T+0"),
        ACK(1, "T+500"),
        OP(2,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"in_ms\":150,\"period_ms\":3321,\"sent_ms\":T+2800"),
        "H {\"t\":\"ack\",\"w\":\"client\",\"n\":2,\"ack_ms\":T+3300,\"ok\":false}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+3050,\"fired_ms\":T+3051,\"seq\":1}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+5389,\"fired_ms\":T+5390,\"seq\":2}",
        "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+7728,\"fired_ms\":T+7729,\"seq\":3}",
        NULL};
    CHECK(run(unknown_later) == 0);
    /* applied again, with an earlier silent repeat of the ID: the count
     * started again is the latest repeat's, not the earlier one's (seed 22,
     * k-63); at an at_ms already past it starts with the same first
     * deadline, then the grid point after the new application (k-77) */
#define META_R                                                                           \
    "M {\"seed\":42,\"minutes\":1,\"ns\":\"demo\",\"start_ms\":T+0,\"stop_ms\":T+60000," \
    "\"end_ms\":T+100000,\"grace_ms\":5000,\"writers\":[\"client\"],\"replaying\":[\"client\"]}"
#define REP(d, f, q)                                                                     \
    "E {\"type\":\"timeout\",\"id\":\"c-1\",\"deadline_ms\":T+" #d ",\"fired_ms\":T+" #f \
    ",\"seq\":" #q "}"
    const char *silent[] = {
        META_R,
        OP(1, "\"op\":\"repeat\",\"id\":\"c-1\",\"in_ms\":2000,\"period_ms\":1199,\"sent_ms\":T+0"),
        OP(2, "\"op\":\"extend\",\"id\":\"c-1\",\"in_ms\":3000,\"sent_ms\":T+100"),
        OP(3,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"in_ms\":1000,\"period_ms\":845,\"sent_ms\":T+200"),
        REP(1250, 1251, 1),
        REP(2095, 2096, 2),
        REP(2940, 2941, 3),
        REP(3500, 4000, 1),
        REP(4345, 4346, 2),
        ACK(1, "T+3600"),
        ACK(2, "T+3600"),
        ACK(3, "T+3600"),
        NULL};
    CHECK(run(silent) == 0);
    const char *past[] = {
        META_R,
        OP(1, "\"op\":\"repeat\",\"id\":\"c-1\",\"in_ms\":2000,\"period_ms\":1913,\"sent_ms\":T+0"),
        OP(2,
           "\"op\":\"repeat\",\"id\":\"c-1\",\"at_ms\":T+10000,\"period_ms\":993,\"sent_ms\":T+9800"),
        REP(2010, 2011, 1),
        REP(3923, 3924, 2),
        REP(10000, 11700, 1),
        REP(11986, 11987, 2),
        REP(12979, 12980, 3),
        REP(10000, 20000, 1),
        REP(20923, 20924, 2),
        ACK(1, "T+500"),
        ACK(2, "T+19900"),
        NULL};
    CHECK(run(past) == 0);
#undef REP
#undef META_R
}

#define WATCHED                                                                                \
    OP(1, "\"op\":\"watch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"), ACK(1, "T+10"), \
        EV("c-1", "T+1000", "T+1002")
#define BACK                                                                                   \
    OP(3, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+3000,\"sent_ms\":T+2000"),              \
        ACK(3, "T+2010"),                                                                      \
        "E {\"type\":\"recovered\",\"id\":\"c-1\",\"deadline_ms\":T+1000,\"fired_ms\":T+1004," \
        "\"recovered_ms\":T+2005,\"down_ms\":1005}",                                           \
        EV("c-1", "T+3000", "T+3001")

TEST(nemesis_recovered)
{
    const char *good[] = {WATCHED, BACK, NULL};
    CHECK(run(good) == 0);
    CHECK(strstr(out_text, "ok recovered (1 events checked)"));
    /* written with extend: no recovery */
    const char *plain[] = {
        OP(1, "\"op\":\"extend\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"), ACK(1, "T+10"),
        EV("c-1", "T+1000", "T+1002"), BACK, NULL};
    CHECK(run(plain) == BIT(NM_RECOVERED));
    CHECK(strstr(out_text, "recovery was not on"));
    /* a cancel of the offline ID forgets it */
    const char *forgot[] = {WATCHED, OP(2, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+1500"),
                            ACK(2, "T+1510"), BACK, NULL};
    CHECK(run(forgot) == BIT(NM_RECOVERED));
    /* a recovered event before its timeout */
    const char *order[] = {
        OP(1, "\"op\":\"watch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"), ACK(1, "T+10"),
        "E {\"type\":\"recovered\",\"id\":\"c-1\",\"deadline_ms\":T+1000,\"fired_ms\":T+1004,"
        "\"recovered_ms\":T+2005}",
        EV("c-1", "T+1000", "T+1002"), NULL};
    CHECK(run(order) == BIT(NM_RECOVERED));
    CHECK(strstr(out_text, "follows no timeout event"));
    /* a cancel after the return does not withdraw it */
    const char *after[] = {WATCHED, BACK,
                           OP(4, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+3100"),
                           ACK(4, "T+3110"), NULL};
    CHECK(run(after) == 0);
}

TEST(nemesis_duplicates)
{
    /* copies are counted, never a violation in themselves */
    const char *copies[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        EV("c-1", "T+1000", "T+1002"),
        EV("c-1", "T+1000", "T+6002"),
        "F {\"kind\":\"kill9\",\"target\":\"scanner-0\",\"start_ms\":T+1001,"
        "\"end_ms\":T+1500}",
        NULL};
    CHECK(run(copies) == 0);
    CHECK(strstr(out_text, "ok duplicates (1 copies; 0 outside faults, kill9 1)"));
    /* a copy that comes after a cancel won is judged as any event */
    const char *cancelled[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
        ACK(1, "T+10"),
        EV("c-1", "T+1000", "T+1002"),
        OP(2, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+5000,\"sent_ms\":T+3000"),
        ACK(2, "T+3010"),
        OP(3, "\"op\":\"cancel\",\"id\":\"c-1\",\"sent_ms\":T+3020"),
        ACK(3, "T+3030"),
        EV("c-1", "T+5000", "T+5002"),
        EV("c-1", "T+5000", "T+5102"),
        NULL};
    CHECK(run(cancelled) == BIT(NM_CANCEL_WINS));
}

TEST(nemesis_lateness)
{
    const char *late[] = {OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"),
                          ACK(1, "T+10"), EV("c-1", "T+1000", "T+3500"), NULL};
    CHECK(run(late) == BIT(NM_LATENESS));
    CHECK(strstr(out_text, "2500 ms late outside any fault"));
    const char *fault[] = {
        OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+1000,\"sent_ms\":T+0"), ACK(1, "T+10"),
        EV("c-1", "T+1000", "T+3500"),
        "F {\"kind\":\"stop\",\"target\":\"scanner-0\",\"start_ms\":T+900,"
        "\"end_ms\":T+3000}",
        NULL};
    CHECK(run(fault) == 0);
    CHECK(strstr(out_text, "inside 0/0/0/0/1/0/0"));
    /* written past due: late from the write */
    const char *past[] = {OP(1, "\"op\":\"touch\",\"id\":\"c-1\",\"at_ms\":T+0,\"sent_ms\":T+5000"),
                          ACK(1, "T+5010"), EV("c-1", "T+0", "T+5030"), NULL};
    CHECK(run(past) == 0);
}

TEST(nemesis_bad_input)
{
    struct nm_run *r = nm_run_new();
    char err[256];
    REQUIRE(r);
    CHECK(nm_run_history(r, "{\"t\":\"ack\",\"w\":\"client\",\"n\":1,\"ack_ms\":5,\"ok\":true}",
                         err, sizeof err) == -1);
    CHECK(strstr(err, "no op line"));
    CHECK(nm_run_history(r,
                         "{\"t\":\"op\",\"w\":\"client\",\"n\":1,\"op\":\"touch\",\"id\":\"a\","
                         "\"sent_ms\":5}",
                         err, sizeof err) == -1);
    CHECK(nm_run_history(r,
                         "{\"t\":\"op\",\"w\":\"client\",\"n\":1,\"op\":\"touch\",\"id\":\"a\","
                         "\"in_ms\":5,\"sent_ms\":5}",
                         err, sizeof err) == 0);
    CHECK(nm_run_history(r,
                         "{\"t\":\"op\",\"w\":\"client\",\"n\":1,\"op\":\"cancel\",\"id\":\"a\","
                         "\"sent_ms\":5}",
                         err, sizeof err) == -1);
    CHECK(strstr(err, "given twice"));
    CHECK(nm_run_event(r, "{\"type\":\"timeout\",\"id\":\"a\"", err, sizeof err) == -1);
    nm_run_free(r);
}
