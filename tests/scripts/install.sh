#!/usr/bin/env bash
# install.sh - `cmake --install` into a temporary prefix puts diskmon in bin/,
# diskmon.1 in share/man/man1 and README.md/LICENSE in share/doc/diskmon,
# docs/ beside them (the installed tree listed against the source's, and
# the README's docs/ links resolving there);
# `cpack -G TGZ` and `cpack -G DEB` make packages (written to a temporary
# directory, not the build tree) and `dpkg-deb -c` lists the binary and the
# man page (gzipped, as Debian wants), and lintian finds no error or warning
# in the .deb; the installed systemd unit names the installed diskmon and
# passes systemd-analyze verify. Usage: install.sh BUILD_DIR. Exit 0 pass, 1 fail, 77 skip.
set -u
BUILD=$(realpath "${1:?usage: install.sh BUILD_DIR}")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0

pass() { echo "PASS install/$1"; }
fail() { echo "FAIL install/$1: $2"; fails=$((fails + 1)); }

if cmake --install "$BUILD" --prefix "$TMP/prefix" >"$TMP/install.log" 2>&1; then
    pass cmake_install
else
    fail cmake_install "$(tail -5 "$TMP/install.log")"
fi
for f in bin/diskmon share/man/man1/diskmon.1.gz share/doc/diskmon/README.md \
    share/doc/diskmon/LICENSE share/doc/diskmon/copyright share/doc/diskmon/changelog.gz \
    share/bash-completion/completions/diskmon; do
    if [ -s "$TMP/prefix/$f" ]; then pass "installed_${f//\//_}"; else fail "installed_${f//\//_}" "missing"; fi
done
# docs/ is installed beside the README (share/doc/diskmon/docs), every
# file of it but the unit's template (installed configured, below): the
# installed tree listed against the source's folder.
SRC=$(cd "$(dirname "$0")/../.." && pwd)
(cd "$SRC/docs" && find . -type f ! -name '*.in' | sort) >"$TMP/docs.want"
(cd "$TMP/prefix/share/doc/diskmon/docs" 2>/dev/null && find . -type f | sort) >"$TMP/docs.got"
if [ -s "$TMP/docs.want" ] && cmp -s "$TMP/docs.want" "$TMP/docs.got"; then
    pass installed_docs_tree
else
    fail installed_docs_tree "$(diff "$TMP/docs.want" "$TMP/docs.got" | grep '^[<>]' | head -5 | tr '\n' ' ')"
fi
# The installed README's links into docs/ lead to installed files.
missing=""
for link in $(grep -o '](docs/[^)#]*' "$TMP/prefix/share/doc/diskmon/README.md" 2>/dev/null |
    cut -c3- | sort -u); do
    [ -s "$TMP/prefix/share/doc/diskmon/$link" ] || missing="$missing $link"
done
if [ -z "$missing" ] && grep -q '](docs/' "$TMP/prefix/share/doc/diskmon/README.md" 2>/dev/null; then
    pass installed_readme_links
else
    fail installed_readme_links "not installed:${missing:- (no README or no docs/ links)}"
fi

# The installed program runs and is the one just built.
if [ -x "$TMP/prefix/bin/diskmon" ] &&
    cmp -s <("$TMP/prefix/bin/diskmon" --version) <("$BUILD/diskmon" --version); then
    pass installed_binary_runs
else
    fail installed_binary_runs "bin/diskmon --version differs or fails"
fi

# The systemd unit names the diskmon this install put in place, lets the
# unit start where tracefs or debugfs is not mounted ("-"), and systemd
# accepts it (its man page found in the prefix).
unit=$TMP/prefix/share/doc/diskmon/diskmon-metrics.service
if grep -qx "ExecStart=$TMP/prefix/bin/diskmon --metrics [^ ]*" "$unit" 2>/dev/null; then
    pass unit_names_installed_binary
else
    fail unit_names_installed_binary "$(grep -s '^ExecStart' "$unit" || echo "no $unit")"
fi
if grep -q '^ReadWritePaths=.* -/sys/kernel/tracing -/sys/kernel/debug/tracing$' "$unit" 2>/dev/null; then
    pass unit_tracefs_optional
else
    fail unit_tracefs_optional "$(grep -s '^ReadWritePaths' "$unit")"
fi
if ! command -v systemd-analyze >/dev/null; then
    echo "SKIP install/unit_verifies: systemd-analyze is not installed (apt-get install systemd)"
elif out=$(MANPATH=$TMP/prefix/share/man systemd-analyze verify "$unit" 2>&1) && [ -z "$out" ]; then
    pass unit_verifies
else
    fail unit_verifies "$(printf '%s' "$out" | head -c 300)"
fi

if ! command -v cpack >/dev/null; then
    echo "SKIP install/cpack: cpack is not installed (apt-get install cmake)"
    [ "$fails" -eq 0 ] && exit 77
    exit 1
fi
for gen in TGZ DEB; do
    if (cd "$TMP" && cpack --config "$BUILD/CPackConfig.cmake" -G "$gen" -B "$TMP/pkg") \
        >"$TMP/cpack-$gen.log" 2>&1; then
        pass "cpack_$gen"
    else
        fail "cpack_$gen" "$(tail -5 "$TMP/cpack-$gen.log")"
    fi
done
tgz=$(ls "$TMP"/pkg/diskmon-*.tar.gz 2>/dev/null | head -1)
deb=$(ls "$TMP"/pkg/diskmon_*.deb 2>/dev/null | head -1)
if [ -n "$tgz" ] && tar tzf "$tgz" | grep -q '/bin/diskmon$' &&
    tar tzf "$tgz" | grep -q '/share/man/man1/diskmon.1.gz$'; then
    pass tgz_lists_binary_and_man_page
else
    fail tgz_lists_binary_and_man_page "${tgz:-no .tar.gz}"
fi
if ! command -v dpkg-deb >/dev/null; then
    echo "SKIP install/deb_contents: dpkg-deb is not installed (not a Debian system)"
elif [ -n "$deb" ] && dpkg-deb -c "$deb" >"$TMP/deb.list" &&
    grep -q ' \./usr/bin/diskmon$' "$TMP/deb.list" &&
    grep -q ' \./usr/share/man/man1/diskmon.1.gz$' "$TMP/deb.list" &&
    grep -q ' \./usr/share/doc/diskmon/copyright$' "$TMP/deb.list"; then
    pass deb_lists_binary_and_man_page
else
    fail deb_lists_binary_and_man_page "${deb:-no .deb}: $(cat "$TMP/deb.list" 2>/dev/null | head -5)"
fi
# The man page as man(1) reads it: gzip, and the same text as docs/diskmon.1.
if [ -s "$TMP/prefix/share/man/man1/diskmon.1.gz" ] &&
    cmp -s <(gzip -dc "$TMP/prefix/share/man/man1/diskmon.1.gz") "$(dirname "$0")/../../docs/diskmon.1"; then
    pass man_page_gzip
else
    fail man_page_gzip "share/man/man1/diskmon.1.gz is not docs/diskmon.1 gzipped"
fi
# Debian's own checker: no errors (E:) and no warnings (W:).
if ! command -v lintian >/dev/null; then
    echo "SKIP install/lintian: lintian is not installed (apt-get install lintian)"
elif [ -n "$deb" ]; then
    lintian --no-tag-display-limit "$deb" >"$TMP/lintian.txt" 2>&1
    if grep -qE '^[EW]: ' "$TMP/lintian.txt"; then
        fail lintian "$(grep -E '^[EW]: ' "$TMP/lintian.txt" | head -5 | tr '\n' ' ')"
    else
        pass lintian
    fi
fi
[ "$fails" -eq 0 ]
