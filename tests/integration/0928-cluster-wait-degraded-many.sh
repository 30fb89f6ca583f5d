#!/usr/bin/env bash
# 0928-cluster-wait-degraded-many: 0927's producer with 200,000 lines: it
# still gives up on the primary without a replica within retry_timeout_ms
# + 10 s, reporting only that primary's lines, every other applied.
# Catches: batches sent one at a time while a primary is short, each
# waiting out its WAIT, so that the run grows with the input.
# timeout: 240 s
DEGRADED_LINES=200000 DEGRADED_EXTRA_MS=10000 DEGRADED_PROBE=0
. "$(dirname "$0")/0927-cluster-wait-degraded-layout.sh"
