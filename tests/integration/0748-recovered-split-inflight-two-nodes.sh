#!/usr/bin/env bash
# 0748-recovered-split-inflight-two-nodes: 0747 with the new shards on a
# second Redis: the producer's take answers no busy twin for an ID claimed
# out of the zset, and drop.lua leaves the old shard a busy record for it.
SP_TWO_NODES=1
. "$(dirname "$0")/0747-recovered-split-inflight.sh"
