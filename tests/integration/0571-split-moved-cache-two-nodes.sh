#!/usr/bin/env bash
# 0571-split-moved-cache-two-nodes: 0570 with the new shards on a second
# Redis node, where producers move twins with take.lua, seed.lua and
# drop.lua instead of apply.lua alone (producer/lib/send.c).
SP_TWO_NODES=1
. "$(dirname "$0")/0570-split-moved-cache.sh"
