#!/usr/bin/env bash
# 0060-bad-lines: a producer fed a mix of good and bad lines reports each bad
# one on stderr as "line N: reason" with the right N (blank lines count, are
# not errors), exits 1, does not crash, and applies every good line, also
# those after bad ones.
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config
scale init 4 >/dev/null

b=$(($(now_ms) + 600000))
n=0
bad=()          # line numbers that must be reported
declare -A why  # line number -> ERE the reason must match (case-insensitive)
declare -A good # id -> payload ("-" for none)
: >input
# add good ID FORMAT [ARGS]  (LINE_PAYLOAD=the payload it must store, - for none)
# add bad ERE FORMAT [ARGS]  (ERE: what the reason must match, '' for anything)
# add blank - FORMAT
# appends printf FORMAT ARGS as the next input line (FORMAT may hold \t, \0...)
add() {
    local kind=$1 arg=$2 fmt=$3
    shift 3
    printf "$fmt\n" "$@" >>input
    n=$((n + 1))
    case $kind in
    good) good[$arg]=$LINE_PAYLOAD ;;
    bad) bad+=("$n") why[$n]=$arg ;;
    esac
}
x513=$(printf 'x%.0s' {1..513})
p64k=$(head -c 65536 /dev/zero | tr '\0' y)
p64k1=${p64k}y
p200k=$(head -c 200000 /dev/zero | tr '\0' z)

LINE_PAYLOAD=- add good good-1 'touch good-1 +600000'
add bad 'op|command|unknown'    'frobnicate x +1000'
add bad 'when|time|deadline'    'touch bad-when soon'
add bad 'when|time|deadline'    'touch bad-plus +'
add blank - ''
add blank - '   '
LINE_PAYLOAD='payload with  spaces' add good good-2 'touch good-2 +600000 payload with  spaces'
# the spaces before a payload separate it; those inside and at its end are kept
LINE_PAYLOAD='{"a": 1}  ' add good good-2b 'touch good-2b +600000    {"a": 1}  '
add bad 'id|long|512'           'touch %s +1000' "$x513"
add bad 'id|control|byte|char'  'touch tab\there +1000'
LINE_PAYLOAD=- add good good-3 "extend good-3 @$b"
add bad 'payload|long|large|size' 'touch big +1000 %s' "$p64k1"
add bad 'period'                'repeat rep-1 +1000 0'
add bad 'repeat|period'         'repeat rep-1b +1000'
LINE_PAYLOAD='with payload' add good rep-2 'repeat rep-2 +600000 5000 with payload'
add bad ''                      'touch'
add bad ''                      'touch only-id'
add bad ''                      'cancel'
LINE_PAYLOAD=$p64k add good good-4 'touch good-4 +600000 %s' "$p64k"
add bad 'when|time|deadline'    'touch neg-when -5'
add bad 'when|time|deadline'    'extend bad-num +12abc'
add bad 'when|time|deadline'    'touch huge-when +99999999999999999999999'
add bad 'when|time|deadline'    'touch at-float @1.5'
add bad 'id|control|byte|char'  'touch nul\0id +1000'
add bad 'id|control|byte|char'  'touch del\177id +1000'
LINE_PAYLOAD=- add good good-5 'touch good-5 +600000\r'
add bad 'payload|long|large|size' 'touch very-long +1000 %s' "$p200k"
add bad 'op|command|unknown'    'TOUCH upper +1000'
LINE_PAYLOAD='p' add good good-6 "extend good-6 @$b p"
LINE_PAYLOAD='end' add good good-last 'touch good-last +600000 end'

rc=0
timeout 30 "$LAPSE_BIN/lapse-producer" -c "$CONF" <input 2>producer.err >producer.out || rc=$?
assert_eq "$rc" 1 "exit status of a producer that rejected lines"

# exactly the bad lines are reported, each with a reason
grep -oE '(^|: )line [0-9]+: ' producer.err | grep -oE '[0-9]+' | sort -n | uniq >reported
printf '%s\n' "${bad[@]}" | sort -n >expected
diff expected reported >d.diff || {
    cat d.diff >&2
    fail "reported line numbers (>) differ from the bad lines (<)"
}
for l in "${bad[@]}"; do
    msg=$(grep -m 1 -E "(^|: )line $l: " producer.err | cut -c1-300)
    reason=${msg#*line "$l": }
    [[ -n $reason ]] || fail "line $l reported without a reason: '$msg'"
    if [[ -n ${why[$l]} ]]; then
        shopt -s nocasematch
        [[ $reason =~ ${why[$l]} ]] || fail "line $l: reason '$reason' does not match /${why[$l]}/"
        shopt -u nocasematch
    fi
done

# every good line applied, nothing else
for id in "${!good[@]}"; do
    [[ -n $(id_score "$id") ]] || fail "good line for $id not applied"
    if [[ ${good[$id]} == - ]]; then
        ! id_has_payload "$id" || fail "$id has a payload though none was given"
    elif [[ $id == good-4 ]]; then
        assert_eq "$(shard_get HSTRLEN p "$(id_shard good-4)" good-4)" 65536 "length of good-4's 64 KiB payload"
        [[ $(id_payload good-4) == "$p64k" ]] || fail "good-4's payload differs"
    else
        assert_eq "$(id_payload "$id")" "${good[$id]}" "payload of $id"
    fi
done
total=$(rcli EVAL "local c = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1] .. ':z:*')) do
                       c = c + redis.call('ZCARD', k) end return c" 0 "$NS")
assert_eq "$total" "${#good[@]}" "IDs in the namespace (only the good lines')"
assert_eq "$(id_score good-3)" "$b" "good-3 after bad lines"
