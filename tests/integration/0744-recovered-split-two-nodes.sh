#!/usr/bin/env bash
# 0744-recovered-split-two-nodes: 0743 with the new shards on a second Redis:
# a producer writing a moving ID carries its watch record from the old
# shard (take.lua answers it) to the new one (apply.lua's flag O), and
# drop.lua deletes it in the old shard.
SP_TWO_NODES=1
. "$(dirname "$0")/0743-recovered-split.sh"
