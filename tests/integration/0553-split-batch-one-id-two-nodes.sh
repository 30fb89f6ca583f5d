#!/usr/bin/env bash
# 0553-split-batch-one-id-two-nodes: 0552 with the new shards on a second
# Redis: take, seed, apply and drop across nodes, where the nemesis found
# the defect.
SP_TWO_NODES=1
. "$(dirname "$0")/0552-split-batch-one-id.sh"
