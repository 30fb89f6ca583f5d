#!/usr/bin/env bash
# 0710-systemd-units: the units make install writes name the installed
# programs and config directory (PREFIX=/opt/..., and PREFIX=/usr with its
# configs in /etc); `systemd-analyze verify` passes on an instance of each
# with no output at all (the installed units, their paths moved into the
# staging dir so the programs and man pages it checks are the installed
# ones); `systemd-analyze security --offline` rates each exposure at most
# 2.0; each unit carries the sandbox directives; RestartPreventExitStatus
# lists exactly the statuses the installed programs use for "a restart will
# not help" (checked by making them exit so: 2, 78 for a refusal by Redis),
# and not status 1, which they use for what ends by itself (Redis down, the
# namespace not initialised).
. "$(dirname "$0")/../lib.sh"

san=
if [[ $LAPSE_BIN == */build/*/bin ]]; then
    san=${LAPSE_BIN%/bin}
    san=${san##*/}
fi

# install_to DESTDIR PREFIX: make install, one make at a time in the tree
install_to() {
    mkdir -p "$LAPSE_ROOT/build"
    flock -w 300 "$LAPSE_ROOT/build/.install.lock" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
        make -C "$LAPSE_ROOT" --no-print-directory install DESTDIR="$1" PREFIX="$2" \
        ${san:+SANITIZE=$san} >>"$T/make.log" 2>&1 || {
        tail -n 30 "$T/make.log" >&2
        fail "make install DESTDIR=$1 PREFIX=$2 failed"
    }
}

D=$T/stage
P=/opt/lapse-test
R=$D$P
install_to "$D" "$P"
U=$R/lib/systemd/system
scanner_unit=$U/lapse-scanner@.service
ingress_unit=$U/lapse-ingress@.service
autoscale_unit=$U/lapse-autoscale.service
console_unit=$U/lapse-console.service

# ---------------------------------------------------------------- paths
assert_file_match "$scanner_unit" "^ExecStart=$P/bin/lapse-scanner -c \\\$\\{CREDENTIALS_DIRECTORY\\}/lapse.conf --shard %i\$"
assert_file_match "$scanner_unit" "^LoadCredential=lapse.conf:$P/etc/lapse/lapse.conf\$"
assert_file_match "$ingress_unit" "^ExecStart=$P/bin/lapse-producer -c \\\$\\{CREDENTIALS_DIRECTORY\\}/lapse.conf --from-kafka\$"
assert_file_match "$ingress_unit" "^LoadCredential=lapse.conf:$P/etc/lapse/%i.conf\$"
assert_file_match "$autoscale_unit" "^ExecStart=$P/bin/lapse-scale -c \\\$\\{CREDENTIALS_DIRECTORY\\}/lapse.conf autoscale\$"
assert_file_match "$autoscale_unit" "^LoadCredential=lapse.conf:$P/etc/lapse/lapse.conf\$"
assert_file_match "$console_unit" "^ExecStart=$P/bin/lapse-console -c \\\$\\{CREDENTIALS_DIRECTORY\\}/lapse.conf\$"
! grep -n '@[A-Z]*@' "$scanner_unit" "$ingress_unit" "$autoscale_unit" "$console_unit" || fail "a placeholder is left in the installed units"

install_to "$T/stage-usr" /usr
assert_file_match "$T/stage-usr/usr/lib/systemd/system/lapse-scanner@.service" \
    '^LoadCredential=lapse.conf:/etc/lapse/lapse.conf$' "PREFIX=/usr: config under /etc"
assert_file_match "$T/stage-usr/usr/lib/systemd/system/lapse-scanner@.service" \
    '^ExecStart=/usr/bin/lapse-scanner ' "PREFIX=/usr: the program in /usr/bin"

# ---------------------------------------------------------------- verify
# systemd-analyze verify checks that ExecStart's program is executable and
# that the Documentation= man pages exist: the installed files, under DESTDIR.
mkdir -p units
for u in "$scanner_unit" "$ingress_unit" "$autoscale_unit" "$console_unit"; do
    sed "s|$P/|$R/|g" "$u" >"units/$(basename "$u")"
done
for inst in lapse-scanner@0.service lapse-scanner@15.service lapse-ingress@devices.service \
    lapse-autoscale.service lapse-console.service; do
    rc=0
    MANPATH=$R/share/man systemd-analyze verify "units/$inst" >verify.out 2>&1 || rc=$?
    [[ $rc == 0 && ! -s verify.out ]] || fail "systemd-analyze verify $inst (status $rc): $(head -c 1500 verify.out)"
done
# (and it does check the program: without it, it fails)
mv "$R/bin/lapse-scanner" "$T/lapse-scanner.moved"
! MANPATH=$R/share/man systemd-analyze verify units/lapse-scanner@0.service >verify.out 2>&1 ||
    fail "systemd-analyze verify passed without the program"
assert_file_match verify.out 'lapse-scanner.*(not executable|No such file)'
mv "$T/lapse-scanner.moved" "$R/bin/lapse-scanner"

for inst in lapse-scanner@0.service lapse-ingress@devices.service lapse-autoscale.service \
    lapse-console.service; do
    systemd-analyze security --offline=yes --threshold=20 "units/$inst" >security.out 2>&1 ||
        fail "systemd-analyze security $inst: $(tail -n 30 security.out)"
    assert_file_match security.out 'Overall exposure level for .*: (0|1|2)\.[0-9] ' "$inst exposure"
done

# ---------------------------------------------------------------- sandbox
for u in "$scanner_unit" "$ingress_unit" "$autoscale_unit" "$console_unit"; do
    for d in DynamicUser=yes NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes \
        PrivateTmp=yes PrivateDevices=yes ProtectKernelTunables=yes ProtectKernelModules=yes \
        ProtectKernelLogs=yes ProtectControlGroups=yes MemoryDenyWriteExecute=yes \
        'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' 'SystemCallFilter=@system-service' \
        CapabilityBoundingSet= RestrictNamespaces=yes LockPersonality=yes; do
        grep -qxF "$d" "$u" || fail "$(basename "$u") lacks $d"
    done
done
assert_eq "$(grep '^RestartPreventExitStatus=' "$scanner_unit")" 'RestartPreventExitStatus=2 3 78' "scanner unit"
# a scanner's exit 0 (a stop, or its shard retired by a merge) is final;
# the ingress is restarted whatever ended it
assert_eq "$(grep '^Restart=' "$scanner_unit")" 'Restart=on-failure' "scanner unit"
assert_eq "$(grep '^Restart=' "$ingress_unit")" 'Restart=always' "ingress unit"
assert_eq "$(grep '^RestartPreventExitStatus=' "$ingress_unit")" 'RestartPreventExitStatus=2 78' "ingress unit"
assert_eq "$(grep '^RestartPreventExitStatus=' "$autoscale_unit")" 'RestartPreventExitStatus=2 78' "autoscale unit"
assert_eq "$(grep '^Restart=' "$autoscale_unit")" 'Restart=on-failure' "autoscale unit"

# ---------------------------------------------------------------- exit statuses
# (status 3, fatal Kafka errors, is test 0335's)
run_rc() { # CMD...: its exit status, within 30 s
    local rc=0
    timeout 30 "$@" </dev/null >run.out 2>run.err || rc=$?
    echo "$rc"
}
echo 'namespace = "demo"; scanner = { poll_ms = 0; };' >bad.conf
assert_eq "$(run_rc "$R/bin/lapse-scanner" -c bad.conf --shard 0)" 2 "scanner, bad config"
assert_eq "$(run_rc "$R/bin/lapse-scanner" -c bad.conf)" 2 "scanner, no --shard"
assert_eq "$(run_rc "$R/bin/lapse-producer" -c bad.conf --from-kafka)" 2 "ingress, bad config"
echo 'namespace = "demo"; scale = { cooldown_ms = -1; };' >bad.conf
assert_eq "$(run_rc "$R/bin/lapse-scale" -c bad.conf autoscale)" 2 "autoscale, bad config"

redis_start main
KAFKA_BROKERS=127.0.0.1:$(free_port) # nothing listens: nothing here gets that far
write_config
assert_eq "$(run_rc "$R/bin/lapse-producer" -c "$CONF" --from-kafka)" 2 "ingress without ingress.topic"
# the namespace is not initialised yet: a restart helps once it is
assert_eq "$(run_rc "$R/bin/lapse-scanner" -c "$CONF" --shard 0)" 1 "scanner, namespace not initialised"
assert_file_match run.err 'not initialised'
write_config "$CONF" 'ingress = { topic = "lapse.signals"; group = "g"; };'
assert_eq "$(run_rc "$R/bin/lapse-producer" -c "$CONF" --from-kafka)" 1 "ingress, namespace not initialised"
# Redis refuses us (here: it wants a password the config does not give):
# 78, EX_CONFIG, at once; a restart will not help until the config is fixed
rcli CONFIG SET requirepass pw-0710 >/dev/null
assert_eq "$(run_rc "$R/bin/lapse-scanner" -c "$CONF" --shard 0)" 78 "scanner, Redis refuses"
assert_file_match run.err 'NOAUTH|unauthenticated'
assert_eq "$(run_rc "$R/bin/lapse-producer" -c "$CONF" --from-kafka)" 78 "ingress, Redis refuses"
assert_eq "$(run_rc "$R/bin/lapse-scale" -c "$CONF" autoscale)" 78 "autoscale, Redis refuses"
assert_file_match run.err 'NOAUTH|unauthenticated'
