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
#  - sensor-3 (watch) is offline after its timeout, and its recovered event
#    shows once it signals again;
#  - the checkout is left as it was: nothing at its top level created or
#    written (the tour used to leave kafka.addr, tour.conf, scanners.log);
#  - the tour's scratch directory is gone and its Redis shut down.
. "$(dirname "$0")/../lib.sh"

P=$(free_port)
# (the tour daemonizes its Redis: shut it down also when the test fails)
trap 'rc=$?; set +e; redis-cli -p '"$P"' shutdown nosave >/dev/null 2>&1; (exit $rc); _cleanup' EXIT

{
    echo 'tour_step() { # N: after the tour'"'"'s code block N'
    echo '    (($1 == 2)) || return 0'
    echo '    for ((i = 0; i < 150; i++)); do grep -q "report-7 .*seq=2" "$TOUR_OUT" && return 0; sleep 0.1; done'
    echo '    echo "no second report-7 event within 15 s" >&2; return 1'
    echo '}'
    awk '/^## A five-minute tour/ { on = 1; next }
         on && /^## / { exit }
         on && /^```sh/ { sh = 1; blk++; next }
         on && /^```/ && !sh && !plain { plain = 1; blk++; next }
         on && /^```/ { if (sh) print "tour_step " blk; sh = plain = 0; next }
         sh { print }
         plain && /^\$ / { print substr($0, 3) }
         END { if (!on) exit 1 }' "$LAPSE_ROOT/README.md" |
        grep -v '^make$' | sed "s/6390/$P/g"
} >tour.sh || fail "no tour in the README"
if [[ $LAPSE_BIN != "$LAPSE_ROOT/bin" ]]; then
    sed -i "s|PATH=\$PWD/bin:|PATH=$LAPSE_BIN:|" tour.sh
fi
grep -q 'finish --drain' tour.sh || fail "the tour has no finish --drain: $(cat tour.sh)"

touch marker
sleep 0.01 # (so what the tour writes is newer than the marker)
rc=0
mkdir scratch # (the tour's mktemp -d goes there: the test's dir is removed also when it fails)
(cd "$LAPSE_ROOT" && TMPDIR=$T/scratch TOUR_OUT=$T/tour.out timeout 60 bash -e "$T/tour.sh" >"$T/tour.out" 2>"$T/tour.err") || rc=$?
assert_eq "$rc" 0 "the tour's exit status ($(tail -n 5 tour.err))"
assert_file_match tour.out 'timeout +order-17 .*payload=\{"user":42\}' "order-17's event"
iso='20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z'
assert_file_match tour.out "^sensor-3 +2 +$iso +$iso +[0-9]+\\.[0-9] s\$" "lapse-scale offline: sensor-3"
assert_file_match tour.out '^recovered +sensor-3 +at .* down [0-9.]+ s +shard 2$' "sensor-3's recovered event"
assert_file_match tour.out 'split finished: 8 shards' "finish --drain"
assert_file_match tour.out '^ok: namespace tour, 8 shards' "check"
left=$(find "$LAPSE_ROOT" -maxdepth 1 -newer marker -type f)
assert_eq "$left" "" "files the tour wrote in the checkout"
assert_eq "$(ls scratch)" "" "what is left of the tour's scratch directory"
! redis-cli -p "$P" ping >/dev/null 2>&1 || fail "the tour's Redis still runs"
