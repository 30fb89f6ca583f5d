#!/usr/bin/env bash
# 0700-install: make install into a DESTDIR with a PREFIX puts exactly the
# documented files there; the man pages render without warnings, name every
# option the programs' --help shows, and name the installation's config and
# doc paths as the units do (also for PREFIX=/usr: /etc/lapse), in their
# examples too; the documentation (docs/*.md) is installed in DOCDIR, and
# every path-like reference in the installed headers and man pages names
# something installed (a document, a header, a path under the prefix) or
# the operator's config, never a file of lapse's source tree or a path of
# another prefix; the shared library has its soname and exports only the
# API, and every global symbol of the static archive is named lapse_*
# (nothing else of lapse's can clash with a program's own); the installed
# headers are producer.h and line.h (the configuration is opaque), so a
# program with a config.h of its own on the include path after lapse's
# builds with its own, and an older install's include/lapse/config.h and
# lapse_config.h are removed;
# producer/examples/watchdog.c builds from the installed headers with
# `pkg-config --cflags --libs lapse-producer` (the prefix overridden to the
# staging dir), against the shared library and statically, and with the
# build lines of docs/library.md as written there (the DESTDIR one with
# nothing but the DESTDIR and PREFIX of the install), and every build
# writes deadlines; the installed lapse-scale,
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

# an older install's headers, which this one must not leave on the include path
mkdir -p "$R/include/lapse" && echo '/* lapse before lapse_config.h */' >"$R/include/lapse/config.h"
echo '/* lapse before 2026-11-28 */' >"$R/include/lapse/lapse_config.h"
make_in install

# ---------------------------------------------------------------- the files
want=$(sort <<EOF
bin/lapse-console
bin/lapse-producer
bin/lapse-scale
bin/lapse-scanner
include/lapse/line.h
include/lapse/producer.h
lib/liblapse-producer.a
lib/liblapse-producer.so
lib/liblapse-producer.so.1
lib/liblapse-producer.so.1.0
lib/pkgconfig/lapse-producer.pc
lib/systemd/system/lapse-autoscale.service
lib/systemd/system/lapse-console.service
lib/systemd/system/lapse-ingress@.service
lib/systemd/system/lapse-scanner@.service
share/doc/lapse/lapse.conf.example
share/doc/lapse/lapse.conf.production
share/man/man1/lapse-console.1
share/man/man1/lapse-producer.1
share/man/man1/lapse-scale.1
share/man/man1/lapse-scanner.1
share/man/man5/lapse.conf.5
$(cd "$LAPSE_ROOT/docs" && printf 'share/doc/lapse/%s\n' *.md)
EOF
)
got=$(cd "$D" && find . ! -type d | sed 's|^\./||' | sort)
assert_eq "$got" "$(sed "s|^|${P#/}/|" <<<"$want")" "files installed under DESTDIR"
for p in lapse-producer lapse-scanner lapse-scale lapse-console; do
    [[ -x $R/bin/$p ]] || fail "$R/bin/$p is not executable"
done
assert_eq "$(readlink "$R/lib/liblapse-producer.so")" liblapse-producer.so.1 "development link"
assert_eq "$(readlink "$R/lib/liblapse-producer.so.1")" liblapse-producer.so.1.0 "soname link"

# ---------------------------------------------------------------- man pages
for m in man1/lapse-producer.1 man1/lapse-scanner.1 man1/lapse-scale.1 man1/lapse-console.1 man5/lapse.conf.5; do
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
# the man pages' examples name the installation's config directory too,
# and their SEE ALSO the installation's documents
man_examples() { # STAGE PREFIX SYSCONFDIR
    local m=$1$2/share/man
    assert_file_match "$m/man1/lapse-producer.1" "^lapse\\\\-producer .*-c $3/lapse/devices\\.conf " "lapse-producer(1) EXAMPLES (PREFIX=$2)"
    for f in man1/lapse-producer.1 man1/lapse-scanner.1 man1/lapse-scale.1 man1/lapse-console.1 man5/lapse.conf.5; do
        assert_file_match "$m/$f" "^\\.IR $2/share/doc/lapse/ :\$" "$f SEE ALSO: the installed documentation (PREFIX=$2)"
    done
}

# refs_installed STAGE PREFIX SYSCONFDIR: every path-like reference in the
# installed headers and man pages (their roff fonts and escapes dropped)
# names what the install put in STAGE: an absolute path under PREFIX
# exists there (paths under SYSCONFDIR name the operator's config, which is
# not installed), X.h is an installed header or a system one, X.md an
# installed document; no path of lapse's source tree, no source file (.c,
# .lua), no absolute path outside PREFIX.
refs_installed() {
    local s=$1 p=$2 etc=$3 f ref bad=
    for f in "$s$p"/include/lapse/* "$s$p"/share/man/man*/*; do
        while read -r ref; do
            ref=${ref%.}
            case $ref in
            "$etc"/*) ;;
            "$p"/*) [[ -e $s$ref ]] || bad+="$f: $ref is not installed; " ;;
            /usr/* | /etc/* | /opt/*) bad+="$f: $ref is outside the installation's prefix $p; " ;;
            docs/* | producer/* | common/* | scanner/* | tools/* | scripts/* | deploy/* | examples/* | tests/* | man/*)
                bad+="$f: $ref is in lapse's source tree; " ;;
            *.c | *.lua) bad+="$f: $ref is a source file; " ;;
            *.h) [[ -f $s$p/include/lapse/${ref##*/} ]] || printf '#include <%s>\n' "$ref" | cc -E -x c - >/dev/null 2>&1 ||
                bad+="$f: $ref is neither an installed header nor a system one; " ;;
            *.md) [[ -f $s$p/share/doc/lapse/${ref##*/} ]] || bad+="$f: $ref is not installed documentation; " ;;
            esac
        done < <(sed -E 's/\\f[BIRP]//g; s/\\-/-/g; s/\\\(..//g; s/\\e/\\/g' "$f" |
            grep -oE '(^|[^A-Za-z0-9_.@-])/[A-Za-z0-9_][A-Za-z0-9_./@-]*|[A-Za-z0-9_.@/-]*[A-Za-z0-9_]\.(c|h|lua|md)\b|\b(docs|producer|common|scanner|tools|scripts|deploy|examples|tests|man)/[A-Za-z0-9_./@-]*' |
            sed -E 's|^[^/]/|/|')
    done
    [[ -z $bad ]] || fail "installed references to what is not installed (PREFIX=$p): $bad"
}
man_paths "$D" "$P" "$P/etc"
man_examples "$D" "$P" "$P/etc"
refs_installed "$D" "$P" "$P/etc"
make_in install "$T/stage-usr" /usr
man_paths "$T/stage-usr" /usr /etc
man_examples "$T/stage-usr" /usr /etc
refs_installed "$T/stage-usr" /usr /etc

# ---------------------------------------------------------------- library
so=$R/lib/liblapse-producer.so.1.0
assert_match "$(readelf -d "$so")" 'Library soname: \[liblapse-producer\.so\.1\]' "SONAME"
exports=$(nm -D --defined-only "$so" | awk '{print $3}' | sed 's/@.*//')
grep -qx lapse_producer_open <<<"$exports" || fail "the .so does not export lapse_producer_open"
grep -qx lapse_config_open <<<"$exports" || fail "the .so does not export lapse_config_open"
other=$(grep -v -E '^(lapse_producer_|lapse_config_open$|lapse_config_close$|lapse_line_parse$|lapse_cmd_check$|lapse_quote$|lapse_op_name$|lapse_op_args$|LAPSE_PRODUCER_)' <<<"$exports" || true)
assert_eq "$other" "" "symbols exported beyond the API"
# the archive: every global symbol it defines is named lapse_*
globals=$(nm -g --defined-only "$R/lib/liblapse-producer.a" | awk 'NF == 3 { print $3 }')
grep -qx lapse_producer_open <<<"$globals" || fail "the .a does not define lapse_producer_open"
other=$(grep -v '^lapse_' <<<"$globals" | head -n 5 | paste -sd' ' || true)
assert_eq "$other" "" "global symbols of the .a not named lapse_*"

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
grep -q 'NEEDED.*liblapse-producer\.so\.1\]' <(readelf -d wd-shared) ||
    fail "wd-shared does not need liblapse-producer.so.1"
! grep -q 'liblapse-producer' <(readelf -d wd-static) || fail "wd-static needs the shared library"
assert_match "$(LD_LIBRARY_PATH=$R/lib ldd wd-shared | grep liblapse-producer)" "=> $R/lib/liblapse-producer\.so\.1 " \
    "the library wd-shared loads"

# a program with a config.h of its own (as every autotools project has),
# its directory on the include path after lapse's, gets its own, and
# producer.h gets lapse's
mkdir -p app/src app/build
printf '#define APP_CONFIG_H 1\n' >app/build/config.h
printf '%s\n' '#include "config.h"' '#include "producer.h"' '#ifndef APP_CONFIG_H' \
    '#error "the config.h of lapse, not that of the program"' '#endif' \
    'int main(void) { lapse_producer *p = 0; (void)p; return LAPSE_ID_MAX == 0; }' >app/src/app.c
cc -std=c11 -Wall -Wextra -Werror $sanflags $cflags -Iapp/build -c app/src/app.c -o app.o 2>cc.err ||
    fail "a program with its own config.h does not build against the installed headers: $(head -c 800 cc.err)"
assert_eq "$(grep '^#include "' "$R/include/lapse/producer.h")" '#include "line.h"' "the installed producer.h's includes"

# ---------------------------------------------------------------- the documented build lines
# The lines of docs/library.md for building a program with the library
# (section "Building a program with the library") run as written there, on
# watchdog.c: from the build tree, and after the install with pkg-config,
# shared and static, and for a DESTDIR install. Only app.c and "-o app"
# are replaced, and under a sanitizer its flag and build tree go in; the
# plain pkg-config lines are given the staging dir as prefix (they are for
# an install in place), while the DESTDIR line runs with no more than the
# DESTDIR and PREFIX of this install, and no PKG_CONFIG_PATH.
doc_builds() {
    awk '/^## Building a program with the library/ { sec = 1 } sec && /^```sh$/ { blk = 1; next }
        blk && /^```$/ { exit } blk' "$LAPSE_ROOT/docs/library.md" |
        sed -e ':a' -e '/\\$/ { N; s/\\\n *//; ba' -e '}' | grep '^cc '
}
mapfile -t builds < <(doc_builds)
assert_eq "${#builds[@]}" 4 "cc lines in docs/library.md's build section"
pkg-config() { command pkg-config --define-variable=prefix="$R" "$@"; }
for i in 0 1 2 3; do
    cmd=$(sed -e "s| app\.c | $LAPSE_ROOT/producer/examples/watchdog.c |" -e "s| -o app\$| -o $T/readme-$i|" \
        -e "s|^cc |cc $sanflags |" ${san:+-e "s|build/plain/|build/$san/|g"} <<<"${builds[i]}")
    [[ $cmd == *watchdog.c* && $cmd == *" -o $T/readme-$i" ]] ||
        fail "the documented line is not 'cc ... app.c ... -o app': ${builds[i]}"
    if [[ $cmd == *'$DESTDIR'* ]]; then
        (unset -f pkg-config && unset PKG_CONFIG_PATH && DESTDIR=$D PREFIX=$P && cd "$LAPSE_ROOT" && eval "$cmd")
    else
        (cd "$LAPSE_ROOT" && eval "$cmd")
    fi 2>cc.err || fail "the documented build line fails: ${builds[i]}: $(head -c 800 cc.err)"
done
assert_match "${builds[0]}" 'build/plain/libproducer\.a' "the documented first line: from the build tree"
assert_match "${builds[3]}" 'PKG_CONFIG_PATH="\$DESTDIR\$PREFIX/lib/pkgconfig" pkg-config --define-variable=prefix="\$DESTDIR\$PREFIX" ' \
    "the documented DESTDIR line"
grep -q 'NEEDED.*liblapse-producer\.so\.1\]' <(readelf -d readme-3) ||
    fail "the documented DESTDIR line does not link the shared library"
grep -q 'NEEDED.*liblapse-producer\.so\.1\]' <(readelf -d readme-1) ||
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
for i in 0 1 2 3; do
    printf "readme-$i-%d\n" 1 2 | LD_LIBRARY_PATH=$R/lib "./readme-$i" "$CONF" 2>wd.err ||
        fail "watchdog built by the documented line $((i + 1)) failed: $(cat wd.err)"
done
now=$(now_ms)
for id in wd-shared-{1,2,3} wd-static-{1,2,3} readme-{0,1,2,3}-{1,2}; do
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
