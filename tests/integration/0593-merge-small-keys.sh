#!/usr/bin/env bash
# 0593-merge-small-keys: 0591 on a namespace in small keys: the retiring
# shards' buckets are read by the drain and status, and removed by finish
# (only their epoch fences are left: 0591 checks).
SP_INIT_ARGS=--small-keys
. "$(dirname "$0")/0591-merge-under-load.sh"
for s in 0 1; do
    [[ -n $(rcli GET "$NS:k:$s") ]] || fail "shard $s has no state key: not in small keys"
done
