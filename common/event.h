/*
 * event — the JSON value of the Kafka message sent for each fire.
 *
 * Exactly the fields of docs/protocol.md, "The event": type ("timeout", since 2026-11-26), ns,
 * id, deadline_ms, fired_ms, shard, payload (only when one was stored), seq
 * (only for repeating IDs, > 0). A "recovered" event (recovered_ms > 0, since
 * 2026-11-27) has type, ns, id, deadline_ms and fired_ms (of the timeout),
 * recovered_ms, down_ms (recovered_ms - deadline_ms) and shard.
 * IDs and payloads are arbitrary bytes; JSON strings are UTF-8. When a value
 * is not valid UTF-8, its string field carries it with U+FFFD for each bad
 * byte and a second field, "id_b64" / "payload_b64", carries the exact bytes
 * in base64. (The Kafka key always carries the ID bytes verbatim.)
 */
#ifndef LAPSE_EVENT_H
#define LAPSE_EVENT_H

#include <stddef.h>
#include <stdint.h>

struct lapse_event {
    const char *ns;
    const char *id; /* not NUL-terminated: id_len bytes */
    size_t id_len;
    int64_t deadline_ms; /* the deadline that fell due */
    int64_t fired_ms;    /* when the scanner handed it to Kafka */
    uint32_t shard;
    const char *payload; /* NULL when none */
    size_t payload_len;
    int64_t seq;          /* 0 = not repeating (field omitted) */
    int64_t recovered_ms; /* > 0: a "recovered" event (no payload, no seq) */
};

/*
 * Encodes `ev` as compact JSON. Returns a malloc'd NUL-terminated string the
 * caller frees with free(), and its length in *len; NULL on allocation
 * failure.
 */
char *lapse_event_encode(const struct lapse_event *ev, size_t *len);

/* The most bytes lapse_event_write can need for `ev`, its NUL included. */
size_t lapse_event_size(const struct lapse_event *ev);

/*
 * Writes the same JSON as lapse_event_encode into buf, which must hold
 * lapse_event_size(ev) bytes (a buffer reused across events: no allocation).
 * Returns its length; buf is NUL-terminated.
 */
size_t lapse_event_write(const struct lapse_event *ev, char *buf);

#endif
