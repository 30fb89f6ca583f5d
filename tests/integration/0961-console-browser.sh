#!/usr/bin/env bash
# 0961-console-browser: lapse-console's pages in a real browser (headless
# Chromium driven by selenium: tests/lib/console_browser.py), against real
# Redis, scanners and lapse-kafka-dev.
# timeout: 300 s
#
# 4 shards split to 8 (the split left under way: IDs ten minutes away still
# in their old shards), a scanner for each, two consoles on the namespace:
# one read-only, one with writes on and a tokens file. In the browser:
#  - each page loads and draws without a script error or a CSP refusal:
#    the namespace (a row per shard, the split in progress and the IDs left
#    to move), the due-time chart, the offline list, one ID;
#  - a watched ID times out while the offline page is open and shows up
#    there, its ID page says since when; written again, it leaves the list
#    and its page says it is not offline (and Kafka got its timeout, then
#    its recovered event);
#  - an ID found through the search box: its shard, payload and a time
#    remaining that counts down; an ID that moves in the split shows its
#    twin in the old shard;
#  - a cancel refused by the read-only console (405) and, on the other, with
#    a wrong token (403); with the token it is done and the page shows the
#    ID gone; a new deadline set from the page;
#  - at 360 px wide no page is wider than the screen;
#  - axe-core finds no serious or critical accessibility violation on any page.
# A missing tool (chromium, chromedriver, selenium, npm) fails the test.
# LAPSE_CONSOLE_SHOTS=DIR saves a screenshot of each page there.
. "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
[[ -x $PY ]] || fail "/usr/bin/python3 is missing"
$PY -c 'import selenium' 2>/dev/null || fail "python3-selenium is missing (scripts/install-deps)"
command -v chromium >/dev/null || fail "chromium is missing (scripts/install-deps)"
command -v chromedriver >/dev/null || fail "chromedriver is missing: chromium-driver (scripts/install-deps)"
AXE_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/lapse/axe
AXE=$AXE_DIR/node_modules/axe-core/axe.min.js
if [[ ! -s $AXE ]]; then
    command -v npm >/dev/null || fail "npm is missing (scripts/install-deps): it fetches axe-core"
    mkdir -p "$AXE_DIR"
    timeout 120 npm install --prefix "$AXE_DIR" axe-core@4 --no-audit --no-fund --silent >npm.log 2>&1 ||
        fail "npm install axe-core into $AXE_DIR failed: $(tail -n 3 npm.log)"
    [[ -s $AXE ]] || fail "npm install left no $AXE"
fi

redis_start main
kafka_start
SCANNER_CFG="poll_ms = 10;"
write_config
scale init 4 >/dev/null
events_follow events.json
scanners_start 4
{
    echo 'touch a-1 +600000 hello'
    echo 'touch c-1 +600000'
    for i in 1 2 3 4 5 6 7 8; do echo "touch far-$i +600000"; done
} | produce 2>/dev/null || fail "producer: exit status $?"
scale split >/dev/null || fail "split: exit status $?"
for s in 4 5 6 7; do scanner_start "$s"; done
MOVER=
for i in 1 2 3 4 5 6 7 8; do
    if [[ $(scale get "far-$i" --json | jq '.twin != null') == true ]]; then MOVER=far-$i && break; fi
done
[[ -n $MOVER ]] || fail "none of far-1..8 moves in the split (1 in 256)"
assert_eq "$(scale status --json | jq -r .state)" splitting "the namespace's state"

console_config "" ro.conf
RO_PORT=$CONSOLE_PORT
console_start ro.conf
TOK=tok-$RANDOM-0123456789abcdef
printf 'ops %s\n' "$TOK" >tokens
chmod 600 tokens
console_config "writes = true; tokens_file = \"$T/tokens\";" rw.conf
console_start rw.conf
RW=$CONSOLE

# a watched ID that times out while the pages look
echo 'watch w-9 +3000' | produce 2>/dev/null || fail "producer: exit status $?"

shots=${LAPSE_CONSOLE_SHOTS:-}
[[ -z $shots ]] || mkdir -p "$shots"
RO_URL=http://127.0.0.1:$RO_PORT RW_URL=http://127.0.0.1:$CONSOLE_PORT TOKEN=$TOK AXE=$AXE \
    PRODUCER="$LAPSE_BIN/lapse-producer -c $CONF" MOVER=$MOVER TIMED=w-9 SHOTS=$shots \
    timeout 240 $PY "$LAPSE_ROOT/tests/lib/console_browser.py" >browser.out 2>&1
rc=$?
cat browser.out
((rc == 0)) || fail "the browser's checks (exit status $rc): $(grep -m1 '^FAIL' browser.out)"
assert_file_match browser.out '^browser: all checks passed$' "the browser's last line"

# Kafka's side of it: w-9's timeout, then its recovered event
wait_until 10000 '[[ $(jq -r "select(.id == \"w-9\") | .type" events.json | paste -sd,) == timeout,recovered ]]' ||
    fail "w-9's events: $(jq -c 'select(.id == "w-9") | .type' events.json | paste -sd,)"
# the writes through the console, logged with the token's name
assert_file_match "$T/$RW.log" '^info lapse-console: cancel by ops: c-1$' "the cancel in the log"
assert_file_match "$T/$RW.log" '^info lapse-console: deadline by ops: a-1 \+3600000$' "the deadline in the log"
assert_eq "$(scale get c-1 --json | jq .found)" false "c-1 after the cancel"
