#!/usr/bin/env bash
# quickstart.sh - the README's first command, in a fresh clone of this
# repository (git clone into a temporary directory): it installs the build
# tools if missing, builds Release and starts live capture, which -t 1 stops
# after a second, and `cmake --install` of that build works. Needs root
# (live capture; apt-get) and git. Then, as a throwaway user with neither
# root nor sudo: the quickstart still builds, and diskmon's own message
# says what live capture needs.
# Usage: quickstart.sh SOURCE_DIR. Exit 0 pass, 1 fail, 77 skip.
set -u
SRC=$(realpath "${1:?usage: quickstart.sh SOURCE_DIR}")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

skip() {
    if [ "${CI:-}" = true ]; then echo "FAIL quickstart/first_command: $1 (required under CI=true)"; exit 1; fi
    echo "SKIP quickstart/first_command: $1"
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (live capture)"
command -v git >/dev/null || skip "git is not installed (apt-get install git)"
git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 || skip "$SRC is not a git repository"
[ "$(uname -s)" = Linux ] || skip "live capture here is Linux only"

# The command exactly as the README shows it, run from the clone's top.
cmd=$(sed -n 's/^sh docs\/quickstart.sh\(.*\)#.*$/sh docs\/quickstart.sh/p' "$SRC/README.md" | head -1)
if [ -z "$cmd" ]; then
    echo "FAIL quickstart/readme_names_it: the README's first command is not sh docs/quickstart.sh"
    exit 1
fi
git clone -q "$SRC" "$TMP/clone" || { echo "FAIL quickstart/clone: git clone failed"; exit 1; }
(cd "$TMP/clone" && timeout 900 $cmd -t 1) >"$TMP/out" 2>"$TMP/err"
rc=$?
fails=0
# 0, or 3 when the kernel lost events during that second: capture ran.
if [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; then
    echo "PASS quickstart/exit_status"
else
    echo "FAIL quickstart/exit_status: rc=$rc stderr=$(tail -5 "$TMP/err")"
    fails=1
fi
if head -n 1 "$TMP/out" | grep -Eq '^ +# +Time +Duration +Disk +Request'; then
    echo "PASS quickstart/live_capture_started"
else
    echo "FAIL quickstart/live_capture_started: first line [$(head -n 1 "$TMP/out")]"
    fails=1
fi
if grep -qx 'CMAKE_BUILD_TYPE:STRING=Release' "$TMP/clone/build/release/CMakeCache.txt" 2>/dev/null; then
    echo "PASS quickstart/release_build"
else
    echo "FAIL quickstart/release_build: no Release build in build/release"
    fails=1
fi
# What the quickstart built is enough for `cmake --install` (the
# man page was missing), into a temporary prefix.
if cmake --install "$TMP/clone/build/release" --prefix "$TMP/prefix" >"$TMP/install.log" 2>&1 &&
    [ -x "$TMP/prefix/bin/diskmon" ] && [ -s "$TMP/prefix/share/man/man1/diskmon.1.gz" ]; then
    echo "PASS quickstart/install_after_quickstart"
else
    echo "FAIL quickstart/install_after_quickstart: $(tail -3 "$TMP/install.log")"
    fails=1
fi
# Without root and without sudo the quickstart still builds, then diskmon
# itself says what live capture needs (a throwaway user, removed at exit).
if command -v sudo >/dev/null; then
    echo "SKIP quickstart/non_root_builds: sudo is installed here (it would ask the test user for a password)"
elif ! command -v useradd >/dev/null || ! command -v runuser >/dev/null; then
    echo "SKIP quickstart/non_root_builds: useradd or runuser is missing"
else
    user=dmqs$$
    if useradd -M -d /nonexistent -s /bin/sh "$user"; then
        trap 'userdel "$user" 2>/dev/null; rm -rf "$TMP"' EXIT
        git clone -q "$SRC" "$TMP/userclone" && chown -R "$user" "$TMP/userclone" && chmod 755 "$TMP"
        (cd "$TMP/userclone" && timeout 900 runuser -u "$user" -- $cmd -t 1) >"$TMP/uout" 2>"$TMP/uerr"
        rc=$?
        if [ "$rc" -eq 1 ] && [ -x "$TMP/userclone/build/release/diskmon" ] &&
            grep -q "live capture needs root" "$TMP/uerr" &&
            grep -q "setcap cap_perfmon,cap_dac_read_search+ep" "$TMP/uerr"; then
            echo "PASS quickstart/non_root_builds"
        else
            echo "FAIL quickstart/non_root_builds: rc=$rc stderr=$(tail -3 "$TMP/uerr")"
            fails=1
        fi
    else
        echo "SKIP quickstart/non_root_builds: cannot add a test user"
    fi
fi
[ "$fails" -eq 0 ]
