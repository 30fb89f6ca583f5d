#!/usr/bin/env bash
# 0551-split-reset-inflight-two-nodes: 0550 with the new shards on a second
# Redis node, where producers meet busy twins through take.lua instead of
# apply.lua alone (producer/lib/send.c).
SP_TWO_NODES=1
. "$(dirname "$0")/0550-split-reset-inflight.sh"
