#!/usr/bin/env bash
# 0501-split-small-keys: 0500 (a split 2 -> 4 under load: nothing lost,
# early or doubled) on a namespace in small keys; the new shards start in
# small keys too.
SP_INIT_ARGS=--small-keys
. "$(dirname "$0")/0500-split-under-load.sh"
for s in 0 1 2 3; do
    [[ -n $(rcli GET "$NS:k:$s") ]] || fail "shard $s has no state key: not in small keys"
done
