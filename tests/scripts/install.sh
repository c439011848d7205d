#!/usr/bin/env bash
# install.sh - `cmake --install` into a temporary prefix puts diskmon in bin/,
# diskmon.1 in share/man/man1 and README.md/LICENSE in share/doc/diskmon;
# `cpack -G TGZ` and `cpack -G DEB` make packages (written to a temporary
# directory, not the build tree) and `dpkg-deb -c` lists the binary and the
# man page. Usage: install.sh BUILD_DIR. Exit 0 pass, 1 fail, 77 skip.
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
for f in bin/diskmon share/man/man1/diskmon.1 share/doc/diskmon/README.md \
    share/doc/diskmon/LICENSE share/bash-completion/completions/diskmon; do
    if [ -s "$TMP/prefix/$f" ]; then pass "installed_${f//\//_}"; else fail "installed_${f//\//_}" "missing"; fi
done
# The installed program runs and is the one just built.
if [ -x "$TMP/prefix/bin/diskmon" ] &&
    cmp -s <("$TMP/prefix/bin/diskmon" --version) <("$BUILD/diskmon" --version); then
    pass installed_binary_runs
else
    fail installed_binary_runs "bin/diskmon --version differs or fails"
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
    tar tzf "$tgz" | grep -q '/share/man/man1/diskmon.1$'; then
    pass tgz_lists_binary_and_man_page
else
    fail tgz_lists_binary_and_man_page "${tgz:-no .tar.gz}"
fi
if ! command -v dpkg-deb >/dev/null; then
    echo "SKIP install/deb_contents: dpkg-deb is not installed (not a Debian system)"
elif [ -n "$deb" ] && dpkg-deb -c "$deb" >"$TMP/deb.list" &&
    grep -q ' \./usr/bin/diskmon$' "$TMP/deb.list" &&
    grep -q ' \./usr/share/man/man1/diskmon.1$' "$TMP/deb.list"; then
    pass deb_lists_binary_and_man_page
else
    fail deb_lists_binary_and_man_page "${deb:-no .deb}: $(cat "$TMP/deb.list" 2>/dev/null | head -5)"
fi
[ "$fails" -eq 0 ]
