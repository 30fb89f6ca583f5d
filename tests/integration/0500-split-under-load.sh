#!/usr/bin/env bash
# 0500-split-under-load: `lapse-scale split` 2 -> 4 shards on one Redis while
# producers write and scanners fire; nothing is lost, early or doubled.
#
# Workload (sp_workload, tests/lib.sh): 300 IDs with absolute deadlines
# 2.5-6 s ahead, so the final deadline and payload of every ID is known
# exactly. Producer A (long-running, fed through a FIFO) touches all of them
# before the split and keeps that 2-shard layout in memory; after the split
# a new producer B and then A (its first write after the split, well within
# the 1 s it would go without re-reading the layout, so it can only learn of
# the split from the STALE fence) write touches, extends later and earlier
# (an earlier extend must keep the deadline set before, which still lives in
# the old shard), cancels, touches with and without payload and repeats.
# Every ID is written by one producer at a time. A third of the IDs are
# handed over: B writes them first (into their new shard), then A: had A
# written them into their old shard with its stale layout, its write would
# be lost there. Checked (sp_check): every one-shot ID fires exactly once
# with its final deadline and payload (from its new shard if it was written
# after the split, else from its old one), cancelled IDs never, repeats with
# seq 1, 2, ... on their grid, nothing early. Then `finish` succeeds and no
# data key is left.
. "$(dirname "$0")/../lib.sh"

sp_start

# The hashes of the IDs (and the marker sp_feed leaves with A before the
# split): where each lives before (h % 2) and after (h % 4) the split.
{ seq -f 's%03g' 0 299; echo mk.A.2; } >ids.txt
sp_hashes ids.txt >hashes.txt
assert_eq "$(wc -l <hashes.txt)" 301 "hashed IDs"

SP_LEAD_MS=12000 # the writes take ~1.5 s, 4-5 s on a slow machine running the suite beside a CPU hog, 8.3 s beside a nemesis run and a sanitizer suite
t0=$(now_ms)
sp_workload "$t0" 300 500
note "t0 $t0: $(cut -f2 expect.tsv | sort | uniq -c | tr -s ' \n' ' ')"

tA=$(local_ms)
sp_producer A
sp_feed A pre.txt
# (the members of shard S's zset, or of all its buckets in small keys)
members() {
    rcli EVAL "local r = {}
        for _, pat in ipairs({ ARGV[1], ARGV[1] .. ':*' }) do
            for _, k in ipairs(redis.call('KEYS', pat)) do
                for _, m in ipairs(redis.call('ZRANGE', k, 0, -1)) do r[#r + 1] = m end
            end
        end
        return r" 0 "$NS:z:$1"
}
members 0 >z0.txt
members 1 >z1.txt
stale0=$(rcli INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_STALE:count=//p')
epoch0=$(sp_status .epoch)

# the split; --start-cmd is run once per new shard, each %d its number
scale split --start-cmd "echo %d-%d >>$T/new-shards" >split.out || fail "split: exit status $?"
assert_eq "$(paste -sd' ' new-shards)" "2-2 3-3" "shards --start-cmd was run for"
scanner_start 2
scanner_start 3
sp_status '[.state, .shards, .prev_shards, .epoch, .to_move] | @tsv' >status1.tsv

sp_writes_after_split
stale1=$(rcli INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_STALE:count=//p')

# before the split every ID was in shard h % 2
bad=$(awk 'NR == FNR { sh[$1] = $2 % 2; next }
           /^s[0-9]/ { s = FILENAME == "z0.txt" ? 0 : 1; n++; if (sh[$1] != s) print $1 " in shard " s }
           END { if (n != 300) print n " IDs stored, want 300" }' hashes.txt z0.txt z1.txt)
[[ -z $bad ]] || fail "placement before the split: $bad"

# status during the split: every moving ID still in its old shard
read -r state shards prev epoch to_move <status1.tsv
assert_eq "$state $shards $prev" "splitting 4 2" "state, shards, prev_shards after split"
assert_eq "$epoch" $((epoch0 + 1)) "epoch after split"
assert_eq "$to_move" "$(awk '$2 % 4 >= 2' hashes.txt | wc -l)" "status .to_move right after split"

# A learned of the split from the fence: a script refused its stale epoch
if ((tA1 - tA < 900)); then
    assert_ge "${stale1:-0}" $((${stale0:-0} + 1)) "STALE replies to producer A after the split"
else
    note "A's first write came $((tA1 - tA)) ms after its start: it may have re-read the layout by itself"
fi

sp_wait_delivered events.json expect.tsv

# end the repeats (and the markers); then the split can finish
sp_end_repeats
tc=$(now_ms)
sp_finish 4 $((epoch0 + 2))

sp_stop_producers A B
sp_final_check 2 4
# after the cancel at most the fire already claimed goes out
bad=$(sp_events_tsv events.json | awk -F'\t' -v tc="$tc" '$3 > tc { n[$1]++ } END { for (i in n) if (n[i] > 1) print i, n[i] }')
[[ -z $bad ]] || fail "fired more than once after the cancel returned (id, fires): $bad"
