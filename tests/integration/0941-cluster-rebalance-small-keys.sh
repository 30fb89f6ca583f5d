#!/usr/bin/env bash
# 0941-cluster-rebalance-small-keys: 0940 (a fourth primary joins and
# `rebalance` moves slots under load: nothing lost, early or doubled) on a
# namespace in small keys, with 40,000 more IDs an hour away, so each shard
# is dozens of keys that move one at a time: a script that finds its
# shard's slot migrating ends whole and is tried again (lib/bucket.lua),
# and afterwards every one of the 40,000 is still pending (cluster_bulk_end).
# timeout: 240 s
SP_INIT_ARGS=--small-keys
CLUSTER_BULK=40000
REBALANCE_LEAD_MS=40000 # (the 40,000 keys make a round of writes slow: 25 s were not enough in CI)
. "$(dirname "$0")/0940-cluster-rebalance.sh"
