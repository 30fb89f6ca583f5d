#!/usr/bin/env bash
# 0072-arguments: what the programs say about their arguments.
#  - lapse-producer --help lists every op of the line protocol, watch
#    included, and each op it lists is one the parser knows;
#  - a word left over after the options is named in the error, one line,
#    exit 2: lapse-producer, lapse-scanner, lapse-tail, lapse-kafka-put,
#    lapse-kafka-get, lapse-scale, the examples (watchdog, offline);
#    lapse-scale also names an unknown command; lapse-kafka-dev
#    takes its words as topics and names the one it cannot use;
#  - the watchdog example answers --help with its usage (exit 0) and
#    refuses an option it does not know instead of reading it as a config.
. "$(dirname "$0")/../lib.sh"

if [[ $LAPSE_BIN == */build/*/bin ]]; then EX=${LAPSE_BIN%/bin}/examples; else EX=$LAPSE_ROOT/build/plain/examples; fi
[[ -x $EX/watchdog && -x $EX/offline ]] || fail "$EX/watchdog and $EX/offline are not built (make)"

redis_start main
write_config
scale init 1 >/dev/null

# --help: the ops, each "  NAME ARGS" under the line that announces them
"$LAPSE_BIN/lapse-producer" --help >help.out
ops=$(sed -n '/applies them:$/,/^[^ ]/{/^  [a-z]/p}' help.out | awk '{ printf "%s ", $1 }')
assert_eq "$ops" "touch extend repeat cancel watch " "ops listed by lapse-producer --help"
for op in $ops; do
    rc=0
    echo "$op" | produce 2>op.err || rc=$?
    assert_eq "$rc" 1 "exit status of a bare '$op' line"
    assert_file_match op.err "^line 1: $op needs <id>" "the parser's answer to a bare '$op'"
done
assert_file_match help.out '^  watch  <id> <when> \[<payload>\]$' "watch's line in --help"

# expect_named NAME CMD...: CMD exits 2 with one line on stderr naming "extra"
expect_named() {
    local name=$1 rc=0
    shift
    timeout 10 "$@" </dev/null >"$name.out" 2>"$name.err" || rc=$?
    assert_eq "$rc" 2 "$name: exit status ($(head -c 300 "$name.err"))"
    assert_file_match "$name.err" 'unexpected argument "extra"' "$name's error"
    assert_eq "$(_lines "$name.err")" 1 "$name: lines on stderr"
}
expect_named producer "$LAPSE_BIN/lapse-producer" -c "$CONF" extra
expect_named producer-first "$LAPSE_BIN/lapse-producer" extra
expect_named scanner "$LAPSE_BIN/lapse-scanner" -c "$CONF" --shard 0 extra
expect_named tail "$LAPSE_BIN/lapse-tail" -b 127.0.0.1:1 -t t extra
expect_named kafka-put "$LAPSE_BIN/lapse-kafka-put" -b 127.0.0.1:1 -t t extra
expect_named kafka-get "$LAPSE_BIN/lapse-kafka-get" -b 127.0.0.1:1 -t t extra
expect_named offline "$EX/offline" -b 127.0.0.1:1 -t t extra
expect_named scale "$LAPSE_BIN/lapse-scale" -c "$CONF" status extra
expect_named scale-init "$LAPSE_BIN/lapse-scale" -c "$CONF" init 2 extra
rc=0
"$LAPSE_BIN/lapse-scale" -c "$CONF" stauts >scale.out 2>scale.err || rc=$?
assert_eq "$rc" 2 "lapse-scale with an unknown command: exit status"
assert_file_match scale.err '^lapse-scale: unknown command "stauts"' "lapse-scale's error for an unknown command"

rc=0
timeout 10 "$LAPSE_BIN/lapse-kafka-dev" 'no topic' </dev/null >dev.out 2>dev.err || rc=$?
assert_ne "$rc" 0 "lapse-kafka-dev with a bad topic: exit status"
assert_file_match dev.err "'no topic'" "lapse-kafka-dev's error"

# the watchdog example: --help, an unknown option, a second argument
rc=0
timeout 10 "$EX/watchdog" --help </dev/null >wd.out 2>wd.err || rc=$?
assert_eq "$rc" 0 "watchdog --help: exit status ($(head -c 300 wd.err))"
assert_file_match wd.out '^usage: watchdog ' "watchdog --help's usage"
assert_eq "$(cat wd.err)" "" "watchdog --help's stderr"
rc=0
timeout 10 "$EX/watchdog" --verbose </dev/null >wd.out 2>wd.err || rc=$?
assert_eq "$rc" 2 "watchdog --verbose: exit status ($(head -c 300 wd.err))"
assert_file_match wd.err '^watchdog: unknown option "--verbose"$' "watchdog's error for --verbose"
rc=0
timeout 10 "$EX/watchdog" "$CONF" extra </dev/null >wd.out 2>wd.err || rc=$?
assert_eq "$rc" 2 "watchdog CONF extra: exit status ($(head -c 300 wd.err))"
assert_file_match wd.err '^watchdog: unexpected argument "extra"$' "watchdog's error for a second argument"
