#!/usr/bin/env bash
# 0016-producer-ops-documented: the operations of the line protocol are the
# same in the three places a user reads them: `lapse-producer --help`,
# lapse-producer(1)'s PROTOCOL section and docs/protocol.md's "The producer
# protocol" (touch, extend, repeat, cancel, watch), each shown with the
# same fields.
. "$(dirname "$0")/../lib.sh"

# each source as "op <fields...>" lines (docs/protocol.md's descriptions
# cut off), sorted, spaces squeezed
"$LAPSE_BIN/lapse-producer" --help >help.txt 2>&1 || fail "lapse-producer --help: exit status $?"
grep -E '^ +[a-z]+ +<id>' help.txt | sed -E 's/^ +//; s/ +/ /g' | sort >help.ops
awk '/^\.SH PROTOCOL/ { sec = 1; next } sec && /^\.SH/ { exit } sec && /^\.nf/ { nf = 1; next }
     nf && /^\.fi/ { exit } nf' "$LAPSE_ROOT/man/lapse-producer.1" |
    sed -E 's/\\-/-/g; s/ +/ /g' | sort >man.ops
awk '/^## The producer protocol/ { sec = 1; next } sec && /^## / { exit } sec && /^```/ { if (blk) exit; blk = 1; next }
     blk' "$LAPSE_ROOT/docs/protocol.md" | sed -E 's/^([a-z]+) +/\1 /; s/([]>]) {2,}.*/\1/; s/ +/ /g' | sort >doc.ops

want=$(printf '%s\n' touch extend repeat cancel watch | sort)
for f in help man doc; do
    assert_eq "$(cut -d' ' -f1 "$f.ops")" "$want" "the operations $f lists"
done
diff man.ops doc.ops >man-doc.diff || fail "lapse-producer(1) and docs/protocol.md differ (man <, doc >): $(tr '\n' ' ' <man-doc.diff)"
diff help.ops doc.ops >help-doc.diff ||
    fail "lapse-producer --help and docs/protocol.md differ (help <, doc >): $(tr '\n' ' ' <help-doc.diff)"
