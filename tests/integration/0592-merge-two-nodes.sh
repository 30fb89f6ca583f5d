#!/usr/bin/env bash
# 0592-merge-two-nodes: 0591 with the retiring shards on a second Redis
# node: producers move twins with take, seed and drop across the two nodes
# (producer/lib/send.c), and finish removes the retiring shards' keys there.
SP_TWO_NODES=1
. "$(dirname "$0")/0591-merge-under-load.sh"
