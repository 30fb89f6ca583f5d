#!/usr/bin/env bash
# 0150-stream-idle-flush: a long-running lapse-producer applies what it has
# as soon as no more input is waiting, without EOF: full batches are sent
# while the next is read (their replies read later), and neither they nor a
# short tail, nor a lone line after a pause, wait for more input.
. "$(dirname "$0")/../lib.sh"

redis_start main
write_config "" "producer = { batch = 10; };"
scale init 4 >/dev/null
sp_producer P
fd=${SP_FD[P]}
# started, connected, scripts loaded: the windows below time the applying,
# not the start of a process on a loaded machine
sp_feed P /dev/null
count() { # how many of the IDs s00..s24 are pending (one call: cheap when loaded)
    ids_state $(seq -f 's%02g' 0 24) | awk '$2 != "-"' | wc -l
}

# 25 lines at once: two full batches (sent in flight) and a tail of 5
for i in $(seq -f '%02g' 0 24); do printf 'touch s%s +3600000\n' "$i"; done >&"$fd"
wait_until 2000 '(($(count) == 25))' || fail "$(count) of 25 lines applied 2 s after they were written"

# later, a lone line
sleep 0.3
printf 'extend s00 +7200000\n' >&"$fd"
t=$(rcli TIME | head -n 1)
wait_until 2000 '[[ $(id_score s00) -ge $(( (t + 7000) * 1000 )) ]]' ||
    fail "a lone line was not applied within 2 s: s00 = $(id_score s00)"
