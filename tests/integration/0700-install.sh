#!/usr/bin/env bash
# 0700-install: make install into a DESTDIR with a PREFIX puts exactly the
# documented files there; the man pages render without warnings, name every
# option the programs' --help shows, and name the installation's config and
# doc paths as the units do (also for PREFIX=/usr: /etc/lapse); the shared
# library has its soname and exports only the API;
# producer/examples/watchdog.c builds from the installed headers with
# `pkg-config --cflags --libs lapse-producer` (the prefix overridden to the
# staging dir), against the shared library and statically, and with the
# build lines of docs/library.md as written there, and every build writes deadlines; the installed lapse-scale,
# lapse-producer and lapse-scanner run end to end (init, produce, fire to
# Kafka). make uninstall with the same variables removes every file install
# put there and nothing else.
#
# The programs installed are the build LAPSE_BIN points at: bin/ (plain) or
# build/SANITIZER/bin, whose SANITIZE= is passed on to make.
. "$(dirname "$0")/../lib.sh"

san=
if [[ $LAPSE_BIN == */build/*/bin ]]; then
    san=${LAPSE_BIN%/bin}
    san=${san##*/}
fi
D=$T/stage
P=/opt/lapse-test # PREFIX: not the default, so nothing can come from /usr/local
R=$D$P            # where the files land

# make_in TARGET [DESTDIR PREFIX]: make in the repo with the test's DESTDIR
# and PREFIX (not the jobserver of a make that may have started the tests;
# one make at a time in the tree, since tests run side by side)
make_in() {
    local dest=${2:-$D} prefix=${3:-$P}
    mkdir -p "$LAPSE_ROOT/build"
    flock -w 300 "$LAPSE_ROOT/build/.install.lock" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
        make -C "$LAPSE_ROOT" --no-print-directory "$1" DESTDIR="$dest" PREFIX="$prefix" \
        ${san:+SANITIZE=$san} >>"$T/make.log" 2>&1 || {
        tail -n 30 "$T/make.log" >&2
        fail "make $1 DESTDIR=$dest PREFIX=$prefix failed"
    }
}

make_in install

# ---------------------------------------------------------------- the files
want=$(sort <<EOF
bin/lapse-producer
bin/lapse-scale
bin/lapse-scanner
include/lapse/config.h
include/lapse/line.h
include/lapse/producer.h
lib/liblapse-producer.a
lib/liblapse-producer.so
lib/liblapse-producer.so.0
lib/liblapse-producer.so.0.1
lib/pkgconfig/lapse-producer.pc
lib/systemd/system/lapse-ingress@.service
lib/systemd/system/lapse-scanner@.service
share/doc/lapse/lapse.conf.example
share/doc/lapse/lapse.conf.production
share/man/man1/lapse-producer.1
share/man/man1/lapse-scale.1
share/man/man1/lapse-scanner.1
share/man/man5/lapse.conf.5
EOF
)
got=$(cd "$D" && find . ! -type d | sed 's|^\./||' | sort)
assert_eq "$got" "$(sed "s|^|${P#/}/|" <<<"$want")" "files installed under DESTDIR"
for p in lapse-producer lapse-scanner lapse-scale; do
    [[ -x $R/bin/$p ]] || fail "$R/bin/$p is not executable"
done
assert_eq "$(readlink "$R/lib/liblapse-producer.so")" liblapse-producer.so.0 "development link"
assert_eq "$(readlink "$R/lib/liblapse-producer.so.0")" liblapse-producer.so.0.1 "soname link"

# ---------------------------------------------------------------- man pages
for m in man1/lapse-producer.1 man1/lapse-scanner.1 man1/lapse-scale.1 man5/lapse.conf.5; do
    f=$R/share/man/$m
    LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$f" 2>"$T/groff.err"
    [[ ! -s $T/groff.err ]] || fail "groff warns about $m: $(head -c 600 "$T/groff.err")"
    LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" >"$T/man.txt" 2>"$T/man.err" ||
        fail "man -l $m failed: $(head -c 600 "$T/man.err")"
    [[ ! -s $T/man.err ]] || fail "man -l warns about $m: $(head -c 600 "$T/man.err")"
    for s in NAME SYNOPSIS DESCRIPTION 'SEE ALSO'; do
        grep -q "^$s\$" "$T/man.txt" || fail "$m has no $s section"
    done
    if [[ $m == man1/* ]]; then
        prog=$(basename "$m" .1)
        for s in 'EXIT STATUS' OPTIONS; do
            grep -q "^$s\$" "$T/man.txt" || fail "$m has no $s section"
        done
        # every option --help shows is documented (man renders \- as -)
        for opt in $("$R/bin/$prog" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
            grep -qF -- "$opt" "$T/man.txt" || fail "$m does not document $opt (in $prog --help)"
        done
    fi
done
grep -qF 'LAPSE-SCANNER(1)' <(MANPATH=$R/share/man LC_ALL=C.UTF-8 man lapse-scanner 2>&1) ||
    fail "man finds no lapse-scanner page under $R/share/man"

# the installed pages name the installation's paths, as its units do: here
# PREFIX/etc/lapse; with PREFIX=/usr, /etc/lapse (a second install)
man_paths() { # STAGE PREFIX SYSCONFDIR
    local m=$1$2/share/man u=$1$2/lib/systemd/system
    grep -rl '/usr/local' "$m" && fail "installed man pages name /usr/local (PREFIX=$2): $(grep -rh '/usr/local' "$m")"
    assert_file_match "$m/man1/lapse-scanner.1" "^\\.I $3/lapse/lapse\\.conf\$" "lapse-scanner(1) FILES (PREFIX=$2)"
    assert_file_match "$m/man1/lapse-producer.1" "^\\.I $3/lapse/NAME\\.conf\$" "lapse-producer(1) FILES (PREFIX=$2)"
    assert_file_match "$m/man5/lapse.conf.5" "^\\.I $3/lapse/lapse\\.conf\$" "lapse.conf(5) FILES (PREFIX=$2)"
    assert_file_match "$m/man5/lapse.conf.5" "^\\.I $2/share/doc/lapse/lapse\\.conf\\.production\$" "lapse.conf(5) FILES, the docs (PREFIX=$2)"
    assert_file_match "$u/lapse-scanner@.service" "^LoadCredential=lapse\\.conf:$3/lapse/lapse\\.conf\$" "the scanner unit's config (PREFIX=$2)"
}
man_paths "$D" "$P" "$P/etc"
make_in install "$T/stage-usr" /usr
man_paths "$T/stage-usr" /usr /etc

# ---------------------------------------------------------------- library
so=$R/lib/liblapse-producer.so.0.1
assert_match "$(readelf -d "$so")" 'Library soname: \[liblapse-producer\.so\.0\]' "SONAME"
exports=$(nm -D --defined-only "$so" | awk '{print $3}' | sed 's/@.*//')
grep -qx lapse_producer_open <<<"$exports" || fail "the .so does not export lapse_producer_open"
grep -qx lapse_config_load <<<"$exports" || fail "the .so does not export lapse_config_load"
other=$(grep -v -E '^(lapse_producer_|lapse_config_|lapse_line_parse$|lapse_cmd_check$|lapse_quote$|lapse_op_name$|lapse_op_args$|lapse_node_name$|LAPSE_PRODUCER_)' <<<"$exports" || true)
assert_eq "$other" "" "symbols exported beyond the API"

export PKG_CONFIG_PATH=$R/lib/pkgconfig
pc() { pkg-config --define-variable=prefix="$R" "$@" lapse-producer; }
assert_eq "$(pkg-config --variable=prefix lapse-producer)" "$P" "the .pc's prefix (as installed)"
cflags=$(pc --cflags) || fail "pkg-config --cflags lapse-producer failed"
libs=$(pc --libs) || fail "pkg-config --libs lapse-producer failed"
slibs=$(pc --libs --static) || fail "pkg-config --libs --static lapse-producer failed"
assert_match "$cflags" "-I$R/include/lapse" "pkg-config --cflags"
assert_match "$libs" "-L$R/lib -llapse-producer" "pkg-config --libs"
sanflags=${san:+-fsanitize=$san}
# the installed headers alone: no -I into the source tree
cc -std=c11 -Wall -Wextra -Werror $sanflags $cflags -c "$LAPSE_ROOT/producer/examples/watchdog.c" \
    -o watchdog.o 2>cc.err || fail "watchdog.c does not compile against the installed headers: $(head -c 800 cc.err)"
cc $sanflags watchdog.o $libs -o wd-shared 2>ld.err ||
    fail "watchdog does not link against the shared library: $(head -c 800 ld.err)"
cc $sanflags watchdog.o ${slibs/-llapse-producer/-l:liblapse-producer.a} -o wd-static 2>ld.err ||
    fail "watchdog does not link against the static library: $(head -c 800 ld.err)"
grep -q 'NEEDED.*liblapse-producer\.so\.0\]' <(readelf -d wd-shared) ||
    fail "wd-shared does not need liblapse-producer.so.0"
! grep -q 'liblapse-producer' <(readelf -d wd-static) || fail "wd-static needs the shared library"
assert_match "$(LD_LIBRARY_PATH=$R/lib ldd wd-shared | grep liblapse-producer)" "=> $R/lib/liblapse-producer\.so\.0 " \
    "the library wd-shared loads"

# ---------------------------------------------------------------- the documented build lines
# The lines of docs/library.md for building a program with the library
# (section "Building a program with the library") run as written there, on
# watchdog.c: from the build tree, and after the install with pkg-config,
# shared and static. Only app.c and "-o app" are replaced, pkg-config is
# given the staging dir as prefix, and under a sanitizer its flag and build
# tree go in.
doc_builds() {
    awk '/^## Building a program with the library/ { sec = 1 } sec && /^```sh$/ { blk = 1; next }
        blk && /^```$/ { exit } blk' "$LAPSE_ROOT/docs/library.md" |
        sed -e ':a' -e '/\\$/ { N; s/\\\n *//; ba' -e '}' | grep '^cc '
}
mapfile -t builds < <(doc_builds)
assert_eq "${#builds[@]}" 3 "cc lines in docs/library.md's build section"
pkg-config() { command pkg-config --define-variable=prefix="$R" "$@"; }
for i in 0 1 2; do
    cmd=$(sed -e "s| app\.c | $LAPSE_ROOT/producer/examples/watchdog.c |" -e "s| -o app\$| -o $T/readme-$i|" \
        -e "s|^cc |cc $sanflags |" ${san:+-e "s|build/plain/|build/$san/|g"} <<<"${builds[i]}")
    [[ $cmd == *watchdog.c* && $cmd == *" -o $T/readme-$i" ]] ||
        fail "the documented line is not 'cc ... app.c ... -o app': ${builds[i]}"
    (cd "$LAPSE_ROOT" && eval "$cmd") 2>cc.err || fail "the documented build line fails: ${builds[i]}: $(head -c 800 cc.err)"
done
assert_match "${builds[0]}" 'build/plain/libproducer\.a' "the documented first line: from the build tree"
grep -q 'NEEDED.*liblapse-producer\.so\.0\]' <(readelf -d readme-1) ||
    fail "the documented pkg-config line does not link the shared library"
! grep -q 'liblapse-producer' <(readelf -d readme-0) <(readelf -d readme-2) ||
    fail "the documented build-tree or static line links the shared library"
unset -f pkg-config

# ---------------------------------------------------------------- end to end
redis_start main
kafka_start
write_config
"$R/bin/lapse-scale" -c "$CONF" init 2 $(small_keys_on && echo --small-keys) >scale.out 2>&1 || fail "installed lapse-scale init: $(cat scale.out)"
assert_match "$(cat scale.out)" 'initialised with 2 shards' "lapse-scale init"

printf 'wd-shared-%d\n' 1 2 3 | LD_LIBRARY_PATH=$R/lib ./wd-shared "$CONF" 2>wd.err ||
    fail "watchdog (shared) failed: $(cat wd.err)"
printf 'wd-static-%d\n' 1 2 3 | ./wd-static "$CONF" 2>wd.err || fail "watchdog (static) failed: $(cat wd.err)"
for i in 0 1 2; do
    printf "readme-$i-%d\n" 1 2 | LD_LIBRARY_PATH=$R/lib "./readme-$i" "$CONF" 2>wd.err ||
        fail "watchdog built by the documented line $((i + 1)) failed: $(cat wd.err)"
done
now=$(now_ms)
for id in wd-shared-{1,2,3} wd-static-{1,2,3} readme-{0,1,2}-{1,2}; do
    s=$(id_score "$id")
    [[ -n $s ]] || fail "$id (written by the watchdog example) is not in Redis"
    assert_ge "${s%.*}" $((now + 50000)) "$id's deadline (60 s ahead)"
done

: >ids
for i in 1 2 3 4 5 6; do echo "inst-$i" >>ids; done
sed 's/^/touch /; s/$/ +300/' ids | "$R/bin/lapse-producer" -c "$CONF" 2>producer.err ||
    fail "installed lapse-producer failed: $(cat producer.err)"
spawn scanner-0 "$R/bin/lapse-scanner" -c "$CONF" --shard 0
spawn scanner-1 "$R/bin/lapse-scanner" -c "$CONF" --shard 1
events_read 6 20000 >events.json || fail "only $(_lines events.json) of 6 events arrived within 20 s"
assert_eq "$(events_ids events.json | sort | tr '\n' ' ')" "$(sort ids | tr '\n' ' ')" "IDs fired"
assert_never_early events.json
for s in 0 1; do
    proc_stop scanner-$s 15
    assert_eq "$PROC_RC" 0 "installed scanner $s's exit status after SIGTERM"
done

# ---------------------------------------------------------------- uninstall
mkdir -p "$R/bin" && echo keep >"$R/bin/not-lapse" # someone else's file
make_in uninstall
left=$(cd "$D" && find . ! -type d | sed 's|^\./||')
assert_eq "$left" "${P#/}/bin/not-lapse" "files left after make uninstall"
[[ ! -e $R/include/lapse && ! -e $R/share/doc/lapse ]] || fail "uninstall left lapse's own directories"
