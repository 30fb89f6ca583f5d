#!/usr/bin/python3
"""offline -- an example consumer of lapse's event topic: which devices are
offline now (Debian: python3-confluent-kafka).

  offline.py -b BROKERS -t TOPIC [-g GROUP] [--json] [--idle-ms N] [-X key=value ...]

A "timeout" event says the ID went offline at fired_ms; a "recovered" event
(the ID, written with recovery on, signalled again) says it is back. Only
IDs written with recovery on (watch, an ingress rule's recover = true) get
recovered events: one written with touch or extend stays in this set once
it timed out, so write the IDs you watch with recovery on (lapse-scale
offline lists only those). The consumer keeps the set of IDs offline and,
on SIGTERM or SIGINT (or once nothing new
came for --idle-ms after it got its partitions: for scripts and tests),
prints it -- one line per ID, "id<TAB>since_ms", sorted by ID, or with
--json one array of {"id", "since_ms", "deadline_ms"} -- and exits 0.
examples/offline.c does the same in C; both print the same bytes.

Delivery is at least once and a redelivery may come late, so the state of
an ID is decided by deadline_ms, never by arrival order: per ID it keeps
the latest deadline seen and whether a "recovered" for that deadline came.
An event for an older deadline changes nothing (a late "recovered" of an
older timeout does not clear a newer one), one for the same deadline only
turns offline into online (a redelivered timeout after its recovery, or
twice, changes nothing), and one for a newer deadline starts over. So the
result is the same in any order, and every event is idempotent per (id,
deadline_ms, type). An event without "type" (lapse before 2026-11-26) is a
timeout; another type is skipped.

Offsets are committed after each event is processed (at least once: a crash
redelivers, which the rules above absorb). The set lives in memory here: a
production consumer keeps it where it commits its offsets (one database
transaction), so that a restart resumes both together.
"""
import argparse
import json
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaError


class Offline:
    """Per ID: [deadline_ms, offline, since_ms], keyed by id_b64 when the
    event has one (the exact bytes of an ID that is not UTF-8), else id."""

    def __init__(self):
        self.state = {}

    def apply(self, value):
        """Applies one event; False when it is not an event of lapse."""
        try:
            ev = json.loads(value)
        except ValueError:
            return False
        if not isinstance(ev, dict):
            return False
        kind = ev.get("type", "timeout")
        ident, d, fired = ev.get("id"), ev.get("deadline_ms"), ev.get("fired_ms")
        if not isinstance(ident, str) or not isinstance(d, int) or not isinstance(kind, str):
            return False
        if kind not in ("timeout", "recovered"):
            return True  # a kind this consumer does not know: not its business
        timeout = kind == "timeout"
        if timeout and not isinstance(fired, int):
            return False
        key = ev.get("id_b64") if isinstance(ev.get("id_b64"), str) else ident
        e = self.state.setdefault(key, [-1, False, 0, ident])
        if d > e[0]:  # newer: starts over
            e[0], e[1], e[2] = d, timeout, fired if timeout else 0
        elif d == e[0]:  # the same deadline: only back online
            if not timeout:
                e[1] = False
            elif e[1] and fired < e[2]:
                e[2] = fired
        return True  # older: nothing

    def offline(self):
        """[(id, since_ms, deadline_ms)] sorted by ID (its UTF-8 bytes, as C's strcmp)."""
        rows = [(e[3], e[2], e[0], k) for k, e in self.state.items() if e[1]]
        rows.sort(key=lambda r: (r[0].encode("utf-8", "surrogatepass"), r[3].encode("utf-8", "surrogatepass")))
        return [r[:3] for r in rows]


def main():
    p = argparse.ArgumentParser(description="Keeps the set of IDs offline from lapse's events.")
    p.add_argument("-b", "--brokers", required=True)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-g", "--group", default="lapse-offline")
    p.add_argument("--json", action="store_true")
    p.add_argument("--idle-ms", type=int, default=0)
    p.add_argument("-X", action="append", default=[], metavar="key=value",
                   help="a librdkafka property, passed through (as kcat -X)")
    a = p.parse_args()
    conf = {}
    for kv in a.X:
        if "=" not in kv:
            p.error("-X %s: not key=value" % kv)
        k, v = kv.split("=", 1)
        conf[k] = v
    # commits are ours, after processing; a new group reads from the start
    conf.update({"bootstrap.servers": a.brokers, "group.id": a.group,
                 "enable.auto.commit": False, "auto.offset.reset": "earliest"})

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))

    c = Consumer(conf)
    last = [None]  # when the last event came, or the partitions (for --idle-ms)

    def on_assign(consumer, parts):
        if parts and last[0] is None:  # idle counts from the assignment, not the join
            last[0] = time.monotonic()

    c.subscribe([a.topic], on_assign=on_assign)
    s, skipped = Offline(), 0
    while not stop:
        m = c.poll(0.1)
        if m is None:
            if a.idle_ms and last[0] is not None and (time.monotonic() - last[0]) * 1000 >= a.idle_ms:
                break
            continue
        if m.error():
            if m.error().code() != KafkaError._PARTITION_EOF:
                print("offline.py: %s" % m.error(), file=sys.stderr)
            continue
        last[0] = time.monotonic()
        if not s.apply(m.value() or b"") and skipped < 10:
            skipped += 1
            print("offline.py: partition %d offset %d: not an event of lapse, skipped"
                  % (m.partition(), m.offset()), file=sys.stderr)
        c.commit(message=m, asynchronous=True)  # after processing
    try:
        c.commit(asynchronous=False)  # what is still in flight
    except Exception as e:  # nothing to commit is not a failure
        if "NO_OFFSET" not in str(e):
            print("offline.py: commit: %s" % e, file=sys.stderr)
    c.close()
    rows = s.offline()
    if a.json:
        print(json.dumps([{"id": i, "since_ms": t, "deadline_ms": d} for i, t, d in rows],
                         ensure_ascii=False, separators=(",", ":")))
    else:
        for i, t, _ in rows:
            print("%s\t%d" % (i, t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
