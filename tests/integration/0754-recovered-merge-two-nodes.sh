#!/usr/bin/env bash
# 0754-recovered-merge-two-nodes: 0753 with the retiring shards on a second
# Redis node: the watch records of IDs written during the merge travel with
# take and drop, the rest with finish's move across the nodes.
SP_TWO_NODES=1
. "$(dirname "$0")/0753-recovered-merge.sh"
