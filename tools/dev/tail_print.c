/*
 * tail_print — how lapse-tail prints one message: the value verbatim (json,
 * optionally after its key), or one readable line per lapse event (demo).
 * Apart from tail.c, which finds the partitions and reads them, because
 * this is all of the tool that knows what a lapse event looks like.
 *
 * Invariants (tail.c's top comment): one message, one output; demo prints
 * one line, control bytes escaped; a value that is not a lapse event is
 * shown as such and never stops the tail.
 */
#include "tail_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#define UNPARSABLE_SHOW 80 /* bytes of a bad value shown */
#define PAYLOAD_SHOW 200   /* bytes of a payload shown in demo format */

/* Writes n bytes with control bytes escaped, so the line stays one line. */
static void put_escaped(FILE *f, const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];

        if (ch == '\n')
            fputs("\\n", f);
        else if (ch == '\t')
            fputs("\\t", f);
        else if (ch == '\r')
            fputs("\\r", f);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(f, "\\x%02x", ch);
        else
            fputc(ch, f);
    }
}

/* put_escaped() of at most max bytes, then "..." if there was more. */
static void put_clipped(FILE *f, const char *p, size_t n, size_t max)
{
    put_escaped(f, p, n > max ? max : n);
    if (n > max)
        fputs("...", f);
}

/* Local wall-clock HH:MM:SS.mmm of a Unix time in ms into buf (>= 16). */
static void format_clock(long long unix_ms, char *buf, size_t size)
{
    long long sec = unix_ms / 1000, ms = unix_ms % 1000;
    time_t t;
    struct tm tm;

    if (ms < 0) { /* floor, for times before 1970 */
        ms += 1000;
        sec -= 1;
    }
    t = (time_t)sec;
    if (localtime_r(&t, &tm) == NULL) {
        snprintf(buf, size, "?");
        return;
    }
    snprintf(buf, size, "%02d:%02d:%02d.%03lld", tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

/*
 * Prints one event in demo format. Returns 0, or -1 (nothing printed) when
 * the value is not a lapse event.
 */
static int print_demo_event(const char *val, size_t len)
{
    json_error_t jerr;
    json_t *ev, *id, *dl, *fired, *shard, *ns, *payload, *seq;
    char clock[32];
    json_int_t late;

    ev = json_loadb(val, len, 0, &jerr);
    if (ev == NULL)
        return -1;
    id = json_object_get(ev, "id");
    dl = json_object_get(ev, "deadline_ms");
    fired = json_object_get(ev, "fired_ms");
    shard = json_object_get(ev, "shard");
    ns = json_object_get(ev, "ns");
    payload = json_object_get(ev, "payload");
    seq = json_object_get(ev, "seq");
    if (!json_is_object(ev) || !json_is_string(id) || !json_is_integer(dl) ||
        !json_is_integer(fired) || !json_is_integer(shard) || (ns != NULL && !json_is_string(ns)) ||
        __builtin_sub_overflow(json_integer_value(fired), json_integer_value(dl), &late)) {
        json_decref(ev);
        return -1;
    }

    json_t *type = json_object_get(ev, "type"), *back = json_object_get(ev, "recovered_ms");
    if (json_is_string(type) && strcmp(json_string_value(type), "recovered") == 0 &&
        json_is_integer(back)) {
        /* the ID came back: after how long, counted from the
                 * deadline that fell due */
        format_clock(json_integer_value(back), clock, sizeof(clock));
        fputs("recovered  ", stdout);
        put_escaped(stdout, json_string_value(id), json_string_length(id));
        printf("  at %s  down %.1f s  shard %lld\n", clock,
               (double)(json_integer_value(back) - json_integer_value(dl)) / 1000.0,
               (long long)json_integer_value(shard));
        json_decref(ev);
        return 0;
    }
    format_clock(json_integer_value(dl), clock, sizeof(clock));
    fputs("timeout  ", stdout);
    put_escaped(stdout, json_string_value(id), json_string_length(id));
    printf("  deadline %s  fired %+lld ms late  shard %lld", clock, (long long)late,
           (long long)json_integer_value(shard));
    if (json_is_string(payload)) {
        fputs("  payload=", stdout);
        put_clipped(stdout, json_string_value(payload), json_string_length(payload), PAYLOAD_SHOW);
    } else if (payload != NULL && !json_is_null(payload)) {
        /* Not lapse's own (a string), but show what is there. */
        char *dump = json_dumps(payload, JSON_COMPACT | JSON_ENCODE_ANY);

        if (dump != NULL) {
            fputs("  payload=", stdout);
            put_clipped(stdout, dump, strlen(dump), PAYLOAD_SHOW);
            free(dump);
        }
    }
    if (json_is_integer(seq))
        printf("  seq=%lld", (long long)json_integer_value(seq));
    fputc('\n', stdout);
    json_decref(ev);
    return 0;
}

int print_message(const struct opts *o, const rd_kafka_message_t *m)
{
    const char *val = m->payload ? (const char *)m->payload : "";
    size_t len = m->payload ? m->len : 0;

    if (o->format == FORMAT_DEMO) {
        if (print_demo_event(val, len) == -1) {
            fputs("unparsable event: ", stdout);
            put_escaped(stdout, val, len > UNPARSABLE_SHOW ? UNPARSABLE_SHOW : len);
            fputc('\n', stdout);
        }
    } else {
        if (o->keys) {
            if (m->key != NULL)
                fwrite(m->key, 1, m->key_len, stdout);
            fputc('\t', stdout);
        }
        fwrite(val, 1, len, stdout);
        fputc('\n', stdout);
    }
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
}
