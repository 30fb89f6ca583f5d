#!/usr/bin/env bash
# 0015-readme-tour: the README's five-minute tour, run as written.
#
# Its shell blocks (```sh) and the commands of its sample sessions (lines
# "$ ...") run in order in one `bash -e`, started in the checkout, with only
# the Redis port changed (6390 -> a free one), `make` left out (make test
# built everything) and, in a sanitized build, its bin/ for the checkout's.
# After step 2 the test waits for the events the tour shows.
#  - every command succeeds (finish --drain and check too): exit 0;
#  - lapse-tail shows order-17 with its payload and report-7's second fire;
#  - the tour cancels report-7 once it was seen to fire: right after that
#    block, `get report-7` finds no deadline (it used to fire every 2 s into
#    the user's shell for the rest of the tour);
#  - each sample session's output ("$ lapse-scale ... status", "$ ... get")
#    is what the command prints at that step, line for line and column for
#    column, with only what changes from run to run masked (scanner IDs,
#    times, deadlines, memory sizes, the Redis port);
#  - the count of IDs left to move that the README names is the count
#    finish --drain moves;
#  - sensor-3 (watch) is offline after its timeout, and its recovered event
#    shows once it signals again;
#  - the checkout is left as it was: nothing at its top level created or
#    written (the tour used to leave kafka.addr, tour.conf, scanners.log);
#  - the tour's scratch directory is gone and its Redis shut down.
. "$(dirname "$0")/../lib.sh"

P=$(free_port)
# (the tour daemonizes its Redis: shut it down also when the test fails)
trap 'rc=$?; set +e; redis-cli -p '"$P"' shutdown nosave >/dev/null 2>&1; (exit $rc); _cleanup' EXIT

mkdir blocks want sessions
{
    echo 'tour_step() { # N: after the tour'"'"'s code block N'
    echo '    if (($1 == 2)); then'
    echo '        for ((i = 0; i < 150; i++)); do grep -q "report-7 .*seq=2" "$TOUR_OUT" && return 0; sleep 0.1; done'
    echo '        echo "no second report-7 event within 15 s" >&2; return 1'
    echo '    fi'
    echo '    if grep -qs "cancel report-7" "$TOUR_BLOCKS/$1"; then'
    echo '        lapse-scale -c tour.conf get report-7 >"$TOUR_BLOCKS/cancelled"'
    echo '    fi'
    echo '}'
    # sh blocks run as they are (each also kept in blocks/N); a sample
    # session's "$ CMD" runs with its output to sessions/N, and the lines
    # the README shows after it go to want/N
    awk -v dir="$T" '/^## A five-minute tour/ { on = 1; next }
         on && /^## / { exit }
         on && /^```sh/ { sh = 1; blk++; next }
         on && /^```/ && !sh && !plain { plain = 1; blk++; next }
         on && /^```/ { if (sh) print "tour_step " blk; sh = plain = want = 0; next }
         sh { print; print > (dir "/blocks/" blk) }
         plain && /^\$ / { n++; print "{ " substr($0, 3) "; } >\"$TOUR_SESSIONS/" n "\""; want = 1; next }
         plain && want { print > (dir "/want/" n) }
         END { if (!on) exit 1 }' "$LAPSE_ROOT/README.md" |
        grep -v '^make$' | sed "s/6390/$P/g"
} >tour.sh || fail "no tour in the README"
if [[ $LAPSE_BIN != "$LAPSE_ROOT/bin" ]]; then
    sed -i "s|PATH=\$lapse/bin:|PATH=$LAPSE_BIN:|" tour.sh
    grep -qF "PATH=$LAPSE_BIN:" tour.sh || fail "the tour sets no PATH=\$lapse/bin:...: $(head -n 8 tour.sh)"
fi
grep -q 'finish --drain' tour.sh || fail "the tour has no finish --drain: $(cat tour.sh)"

[[ -s want/1 ]] || fail "no sample session with output in the tour"

touch marker
sleep 0.01 # (so what the tour writes is newer than the marker)
rc=0
mkdir scratch # (the tour's mktemp -d goes there: the test's dir is removed also when it fails)
(cd "$LAPSE_ROOT" && TMPDIR=$T/scratch TOUR_OUT=$T/tour.out TOUR_BLOCKS=$T/blocks TOUR_SESSIONS=$T/sessions timeout 60 bash -e "$T/tour.sh" >"$T/tour.out" 2>"$T/tour.err") || rc=$?
assert_eq "$rc" 0 "the tour's exit status ($(tail -n 5 tour.err))"
[[ -f blocks/cancelled ]] || fail "the tour's block that cancels report-7 did not run"
assert_file_match blocks/cancelled '^deadline +none' "report-7 right after the tour cancels it ($(cat blocks/cancelled))"

# what changes from run to run, masked; runs of spaces are one
mask() {
    sed -E -e "s/:($P|6390)\b/:PORT/g" -e 's/[^ ]+:[0-9]+:[0-9a-f]{16}/SCANNER/g' \
        -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z/TIME/g' -e 's/\b[0-9]{13}\b/MS/g' \
        -e 's/\(in [0-9.]+ s\)/(in S)/g' -e 's/[0-9.]+ (B|kB|KB|MB|GB|KiB|MiB|GiB)\b/SIZE/g' \
        -e 's/ +/ /g' -e 's/ +$//' "$1"
}
for w in want/*; do
    n=${w#want/}
    [[ -f sessions/$n ]] || fail "sample session $n of the tour did not run"
    diff <(mask "$w") <(mask "sessions/$n") >"session-$n.diff" ||
        fail "the tour's sample session $n prints otherwise than the README shows (README <, real >): $(tr "\n" " " <"session-$n.diff")"
done
assert_file_match tour.out 'timeout +order-17 .*payload=\{"user":42\}' "order-17's event"
iso='20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z'
assert_file_match tour.out "^sensor-3 +2 +$iso +$iso +[0-9]+\\.[0-9] s\$" "lapse-scale offline: sensor-3"
assert_file_match tour.out '^recovered +sensor-3 +at .* down [0-9.]+ s +shard 2$' "sensor-3's recovered event"
assert_file_match tour.out 'split finished: 8 shards' "finish --drain"
# the count the README says finish alone would refuse with is the count drained
said=$(tr '\n' ' ' <"$LAPSE_ROOT/README.md" | grep -oE 'finish: [0-9]+ IDs +in old shards' | grep -oE '[0-9]+' || true)
drained=$(grep -oE 'drained [0-9]+ IDs' tour.out | grep -oE '[0-9]+' || true)
assert_eq "$said" "$drained" "the IDs left to move the README names (finish: N IDs ...), against those finish --drain moved"
assert_file_match tour.out '^ok: namespace tour, 8 shards' "check"
left=$(find "$LAPSE_ROOT" -maxdepth 1 -newer marker -type f)
assert_eq "$left" "" "files the tour wrote in the checkout"
assert_eq "$(ls scratch)" "" "what is left of the tour's scratch directory"
! redis-cli -p "$P" ping >/dev/null 2>&1 || fail "the tour's Redis still runs"
