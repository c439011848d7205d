#!/usr/bin/env bash
# windows.sh - the Windows build, checked from Linux.
#
# Cross-compiles both MinGW presets (mingw-x64, mingw-i686; warnings are
# errors), runs their CTest suites under Wine, then checks diskmon.exe
# itself: replay output (text, csv, json, both sample traces) byte-identical
# to the native build's, the native csv and json read back the same (-r
# FILE and -r - through a pipe), --metrics files that promtool accepts and that
# equal the native build's, --metrics refusing a directory, NUL and the
# same file twice and leaving no temporary file, --help, a closed pipe
# ending the output quietly (exit 0, no message), and that live capture
# under Wine (whose ETW
# is a stub: OpenTrace fails with access denied) exits 1 with a clear
# message, in time and without crashing, and that the real-Windows live
# check (live_exact.exe) skips under Wine with its reason.
#
# Usage: tests/scripts/windows.sh NATIVE_DISKMON
# Prints one line per check: PASS name / FAIL name / SKIP name: reason.
# Exit 0 when nothing failed, 1 when something did, 77 when nothing could run
# (no wine or mingw-w64). Under CI=true a missing tool is a failure.
# Environment: DM_SHARED_ETL (sample traces), DM_WIN_BUILD_ROOT (default
# build/ in the source tree), DM_WINEPREFIX (default a private prefix in /tmp),
# DM_WIN_CMAKE_ARGS (extra configure arguments), DM_WIN_ALLOW_NO_WINE32=1
# (a machine that cannot install wine32: the i686 run is a skip even under
# CI=true; the i686 build is still checked).
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NATIVE=${1:-}
ETL_DIR=${DM_SHARED_ETL:-$ROOT/../shared/etl}
BUILD_ROOT=${DM_WIN_BUILD_ROOT:-$ROOT/build}
LOG=$BUILD_ROOT/logs
JOBS=2
mkdir -p "$LOG"

export WINEDEBUG=-all
export WINEPREFIX=${DM_WINEPREFIX:-/tmp/diskmon-wine-$(id -u)}
# No Mono/Gecko install prompts while the prefix is created.
export WINEDLLOVERRIDES="mscoree,mshtml="

passed=0 failed=0 skipped=0

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; failed=$((failed + 1)); }
# A check that cannot run here: a skip, but a failure under CI=true, where
# every tool must be present.
skip() {
    if [ "${CI:-}" = true ]; then
        fail "$1" "required under CI=true: $2"
    else
        echo "SKIP $1: $2"
        skipped=$((skipped + 1))
    fi
}

finish() {
    echo "windows.sh: $passed passed, $failed failed, $skipped skipped" >&2
    if [ "$failed" -gt 0 ]; then exit 1; fi
    if [ "$passed" -eq 0 ]; then exit 77; fi
    exit 0
}

# --- tools ---------------------------------------------------------------------
missing=""
for tool in cmake ctest wine wineboot wineserver x86_64-w64-mingw32-gcc i686-w64-mingw32-gcc; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
    skip windows "missing:$missing (Debian: apt-get install mingw-w64 wine wine64)"
    finish
fi

# --- the Wine prefix -------------------------------------------------------------
# A private prefix, created once (the first wineboot takes a while). Wine 8
# reports Windows 7 by default; diskmon's Windows 8+ paths (private system
# logger fallback) are what real users get, so the prefix says win10.
prepare_prefix() {
    if [ ! -f "$WINEPREFIX/system.reg" ]; then
        timeout 600 wineboot -i >"$LOG/windows-wineboot.log" 2>&1 || return 1
        timeout 120 wineserver -w
    fi
    if ! grep -q '"Version"="win10"' "$WINEPREFIX/user.reg" 2>/dev/null; then
        timeout 120 wine reg add 'HKEY_CURRENT_USER\Software\Wine' /v Version \
            /t REG_SZ /d win10 /f >>"$LOG/windows-wineboot.log" 2>&1 || return 1
        timeout 120 wineserver -w
    fi
    return 0
}
if prepare_prefix; then
    # Keep one wineserver for the whole script instead of one per program
    # (each start costs seconds); stopped at the end.
    wineserver -p >/dev/null 2>&1
    pass wine/prefix
else
    fail wine/prefix "wineboot failed; see $LOG/windows-wineboot.log"
    finish
fi

# --- build and test one preset -------------------------------------------------------
# Runs a Windows program under Wine with a time limit.
wine_run() { # timeout_s, program, args...
    local t=$1
    shift
    timeout "$t" wine "$@"
}

# Can this Wine run the preset's programs? An i686 build needs wine32; a
# 64-bit-only Wine prints "wine32 is missing" and still exits 0, so the
# check is that the program printed its version.
wine_runs() { # exe
    timeout 120 wine "$1" --version 2>/dev/null | grep -q '^diskmon '
}

# Maps a Unix path to the Windows path Wine sees (Z: is /).
winpath() {
    printf 'Z:%s' "${1//\//\\}"
}

compare_replay() { # preset, exe
    local preset=$1 exe=$2 etl fmt base a b rca rcb
    if [ -z "$NATIVE" ] || [ ! -x "$NATIVE" ]; then
        skip "$preset/replay-identical" "no native diskmon given (argument 1)"
        return
    fi
    if ! ls "$ETL_DIR"/*.etl >/dev/null 2>&1; then
        skip "$preset/replay-identical" "sample traces not found in $ETL_DIR"
        return
    fi
    for etl in "$ETL_DIR"/*.etl; do
        base=$(basename "$etl" .etl)
        # top-KEY: --top 1 --by KEY -f json , exact figures too.
        for fmt in text csv json top-process top-file top-disk; do
            local args=(-f "$fmt")
            case $fmt in top-*) args=(--top 1 --by "${fmt#top-}" -f json) ;; esac
            a=$LOG/windows-$preset-$base.$fmt.native
            b=$LOG/windows-$preset-$base.$fmt.exe
            "$NATIVE" -r "$etl" "${args[@]}" >"$a" 2>"$a.err"
            rca=$?
            wine_run 300 "$exe" -r "$(winpath "$etl")" "${args[@]}" >"$b" 2>"$b.err"
            rcb=$?
            if [ $rca -ne $rcb ]; then
                fail "$preset/replay-identical/$base/$fmt" "exit $rcb, native $rca (see $b.err)"
            elif [ ! -s "$a" ]; then
                fail "$preset/replay-identical/$base/$fmt" "native output is empty"
            elif cmp -s "$a" "$b"; then
                pass "$preset/replay-identical/$base/$fmt"
            else
                fail "$preset/replay-identical/$base/$fmt" \
                    "differs from native: $(cmp "$a" "$b" 2>&1 | head -1)"
            fi
        done
        # -r's own lines (docs/replay.md): the native build's csv and json
        # read back by this build, from a file and through a pipe (a POSIX
        # pipe under Wine: ReadFile without PeekNamedPipe), the same bytes.
        for fmt in csv json; do
            a=$LOG/windows-$preset-$base.$fmt.native
            b=$LOG/windows-$preset-$base.$fmt.reread
            wine_run 300 "$exe" -r "$(winpath "$a")" -f "$fmt" >"$b" 2>"$b.err"
            if [ -s "$a" ] && cmp -s "$a" "$b"; then
                pass "$preset/read-back/$base/$fmt"
            else
                fail "$preset/read-back/$base/$fmt" "$(cmp "$a" "$b" 2>&1 | head -1) (see $b.err)"
            fi
            wine_run 300 "$exe" -r - -f "$fmt" <"$a" >"$b.pipe" 2>"$b.err"
            if [ -s "$a" ] && cmp -s "$a" "$b.pipe"; then
                pass "$preset/read-back-stdin/$base/$fmt"
            else
                fail "$preset/read-back-stdin/$base/$fmt" "$(cmp "$a" "$b.pipe" 2>&1 | head -1)"
            fi
        done
    done
}

# --metrics under Wine: the file is written through MoveFileExW (twice, so
# the second replaces an existing file), promtool accepts it, and it is the
# native build's file but for the time it was written.
check_metrics() { # preset, exe
    local preset=$1 exe=$2 etl base a b rc
    if [ -z "$NATIVE" ] || [ ! -x "$NATIVE" ] || [ ! -f "$ETL_DIR/README.md" ]; then
        skip "$preset/metrics" "no native diskmon or no sample traces"
        return
    fi
    if ! command -v promtool >/dev/null; then
        skip "$preset/metrics" "promtool is not installed (apt-get install prometheus)"
        return
    fi
    for etl in "$ETL_DIR"/*.etl; do
        base=$(basename "$etl" .etl)
        a=$LOG/windows-$preset-$base.native.prom
        b=$LOG/windows-$preset-$base.exe.prom
        rm -f "$a" "$b"
        "$NATIVE" -r "$etl" --metrics "$a" 2>/dev/null
        wine_run 300 "$exe" -r "$(winpath "$etl")" --metrics "$(winpath "$b")" >/dev/null 2>"$b.err" &&
            wine_run 300 "$exe" -r "$(winpath "$etl")" --metrics "$(winpath "$b")" >"$b.out" 2>>"$b.err"
        rc=$?
        if [ $rc -ne 0 ] || [ ! -s "$b" ] || [ -s "$b.out" ] ||
            [ -n "$(find "$(dirname "$b")" -name "$(basename "$b").*.tmp")" ]; then
            fail "$preset/metrics/$base" "exit $rc; see $b.err"
        elif ! promtool check metrics <"$b" >"$b.promtool" 2>&1; then
            fail "$preset/metrics/$base" "promtool: $(head -c 300 "$b.promtool")"
        elif ! cmp -s <(grep -v '^diskmon_last_update_timestamp_seconds ' "$a") \
            <(grep -v '^diskmon_last_update_timestamp_seconds ' "$b"); then
            fail "$preset/metrics/$base" "differs from the native build's $a"
        else
            pass "$preset/metrics/$base"
        fi
    done
}

# --metrics refuses what is not a regular file it may replace, and leaves
# no temporary file, under Wine: a directory, NUL (and nul.prom,
# the same device in any folder), the same file given as -o and --metrics
# (spelled in another case, and through a hard link), --metrics the input
# trace; a folder that does not exist exits 1 with one line; after the
# runs no *.tmp is left. (Wine shows a Unix symbolic link as the file it
# points to, not as a reparse point, so the link case is Linux's only:
# tests/scripts/metrics_safety.sh.)
check_metrics_safety() { # preset, exe
    local preset=$1 exe=$2 etl=$ETL_DIR/filtrace-diskio-win11.etl d rc n
    if [ ! -f "$etl" ]; then
        skip "$preset/metrics-safety" "sample traces not found in $ETL_DIR"
        return
    fi
    d=$(mktemp -d "$LOG/windows-$preset-safety.XXXXXX")
    mkdir "$d/dir.prom"
    echo lines >"$d/out.txt"
    ln "$d/out.txt" "$d/hard.txt"
    cp "$etl" "$d/t.etl"
    # refused NAME ARGS...: exit 2 and one line on stderr
    refused() {
        local name=$1
        shift
        wine_run 120 "$exe" "$@" >"$d/out" 2>"$d/err"
        rc=$?
        n=$(wc -l <"$d/err")
        if [ "$rc" -eq 2 ] && [ "$n" -eq 1 ]; then
            pass "$preset/metrics-safety/$name"
        else
            fail "$preset/metrics-safety/$name" "exit $rc, $n lines: $(head -c 200 "$d/err")"
        fi
    }
    refused directory -r "$(winpath "$etl")" --metrics "$(winpath "$d/dir.prom")"
    [ -d "$d/dir.prom" ] || fail "$preset/metrics-safety/directory-untouched" "dir.prom is gone"
    refused nul -r "$(winpath "$etl")" --metrics NUL
    refused nul_in_folder -r "$(winpath "$etl")" --metrics "$(winpath "$d/nul.prom")"
    refused same_new_name -r "$(winpath "$etl")" -o "$(winpath "$d/new.txt")" \
        --metrics "$(winpath "$d/NEW.TXT")"
    refused same_file -r "$(winpath "$etl")" -o "$(winpath "$d/out.txt")" \
        --metrics "$(winpath "$d/out.txt")"
    refused same_hard_link -r "$(winpath "$etl")" -o "$(winpath "$d/hard.txt")" \
        --metrics "$(winpath "$d/out.txt")"
    refused metrics_is_input -r "$(winpath "$d/t.etl")" --metrics "$(winpath "$d/t.etl")"
    if [ "$(cat "$d/out.txt")" = lines ] && cmp -s "$etl" "$d/t.etl" && [ ! -e "$d/new.txt" ]; then
        pass "$preset/metrics-safety/files-untouched"
    else
        fail "$preset/metrics-safety/files-untouched" "$(ls -l "$d")"
    fi
    wine_run 120 "$exe" -r "$(winpath "$etl")" --metrics 'Z:\nonexistent\x.prom' >/dev/null 2>"$d/err"
    rc=$?
    n=$(wc -l <"$d/err")
    if [ "$rc" -eq 1 ] && [ "$n" -eq 1 ] && ! grep -q 'trying again' "$d/err"; then
        pass "$preset/metrics-safety/unwritable-exit-1"
    else
        fail "$preset/metrics-safety/unwritable-exit-1" "exit $rc, $n lines: $(head -c 200 "$d/err")"
    fi
    wine_run 120 "$exe" -r "$(winpath "$etl")" --metrics "$(winpath "$d/m.prom")" 2>"$d/err" &&
        wine_run 120 "$exe" -r "$(winpath "$etl")" --metrics "$(winpath "$d/m.prom")" 2>>"$d/err"
    rc=$?
    if [ "$rc" -eq 0 ] && [ -s "$d/m.prom" ] && [ -z "$(find "$d" -name '*.tmp')" ]; then
        pass "$preset/metrics-safety/no-tmp-left"
    else
        fail "$preset/metrics-safety/no-tmp-left" "exit $rc: $(find "$d" -name '*.tmp' | head -3) $(head -c 200 "$d/err")"
    fi
    rm -rf "$d"
}

check_help() { # preset, exe
    local out rc
    out=$(wine_run 120 "$2" --help 2>/dev/null)
    rc=$?
    if [ $rc -eq 0 ] && printf '%s' "$out" | grep -qi 'usage'; then
        pass "$1/help"
    else
        fail "$1/help" "exit $rc, usage text $(printf '%s' "$out" | grep -qi usage && echo found || echo missing)"
    fi
}

# Live capture under Wine: StartTrace is a stub that "succeeds", OpenTrace
# fails with ERROR_ACCESS_DENIED (docs/etw.md §5). diskmon must say so and
# exit 1 promptly, not hang in ProcessTrace and not crash.
check_live() { # preset, exe
    local err=$LOG/windows-$1-live.err rc
    wine_run 60 "$2" >"$LOG/windows-$1-live.out" 2>"$err"
    rc=$?
    if [ $rc -eq 124 ]; then
        fail "$1/live-fails-cleanly" "no exit within 60 s"
    elif [ $rc -ne 1 ]; then
        fail "$1/live-fails-cleanly" "exit $rc, want 1: $(head -c 300 "$err")"
    elif ! grep -q 'OpenTrace' "$err" || ! grep -q 'elevated' "$err"; then
        fail "$1/live-fails-cleanly" "unclear message: $(head -c 300 "$err")"
    else
        pass "$1/live-fails-cleanly"
    fi
}

# --self-test under Wine: the live source cannot start, so the first check
# fails with one clear line naming it, nothing after it but the summary,
# exit 1, and the temporary file (made before the source) is gone.
check_selftest() { # preset, exe
    local out=$LOG/windows-$1-selftest.out rc first temp
    wine_run 60 "$2" --self-test >"$out" 2>"$out.err"
    rc=$?
    first=$(head -n 1 "$out")
    temp=$WINEPREFIX/drive_c/windows/temp
    if [ $rc -ne 1 ]; then
        fail "$1/self-test-fails-cleanly" "exit $rc, want 1: $(head -c 300 "$out")"
    elif [ "${first#FAIL live source: }" = "$first" ] || ! printf '%s' "$first" | grep -q 'Wine'; then
        fail "$1/self-test-fails-cleanly" "first line: $(printf '%s' "$first" | head -c 300)"
    elif [ "$(grep -c '^PASS\|^FAIL' "$out")" != 1 ] || ! tail -n 1 "$out" | grep -q '0 passed, 1 failed'; then
        fail "$1/self-test-fails-cleanly" "more than the first step: $(head -c 300 "$out")"
    elif find "$temp" -maxdepth 1 -name 'diskmon-selftest.*' 2>/dev/null | grep -q .; then
        fail "$1/self-test-fails-cleanly" "its file was left in $temp"
    else
        pass "$1/self-test-fails-cleanly"
    fi
}

# The end of a pipe is the end of output, as `| head -1` on Linux: exit 0,
# nothing on stderr. Through a Unix pipe whose reader exits early (Wine's
# WriteFile then fails with 233; Windows says 232 or 109: the unit tests of
# suite win32_io play those), and through Wine's cmd as the issue's user
# would type it (Wine's cmd joins a pipe through a file, so there the
# reader's early exit is not exercised; the check still sees no message).
# --top too (it drew through stdio, whose CRT turns the closed
# pipe into EINVAL, "Invalid argument").
check_closed_pipe() { # preset, exe
    local etl=$ETL_DIR/perfview-net452-x64-win8.etl err=$LOG/windows-$1-pipe.err rc
    local mode name args
    if [ ! -f "$etl" ]; then
        skip "$1/closed-pipe" "sample traces not found in $ETL_DIR"
        return
    fi
    for mode in lines top; do
        name=closed-pipe
        args=""
        if [ "$mode" = top ]; then
            name=closed-pipe-top
            args="--top 1"
        fi
        # shellcheck disable=SC2086 # args: words on purpose
        wine_run 120 "$2" -r "$(winpath "$etl")" $args 2>"$err" | head -c 100 >/dev/null
        rc=${PIPESTATUS[0]}
        if [ "$rc" -eq 0 ] && [ ! -s "$err" ]; then
            pass "$1/$name"
        else
            fail "$1/$name" "exit $rc, stderr: $(head -c 200 "$err")"
        fi
        wine_run 120 cmd /c "$(winpath "$2") -r $(winpath "$etl") $args | cmd /c exit" \
            >/dev/null 2>"$err"
        rc=$?
        if [ "$rc" -eq 0 ] && [ ! -s "$err" ]; then
            pass "$1/$name-cmd"
        else
            fail "$1/$name-cmd" "exit $rc, stderr: $(head -c 200 "$err")"
        fi
    done
}

# The real-Windows live check (tests/windows/live_exact.c) is built for every
# preset; under Wine it must skip (exit 77) and say why, never touch ETW.
check_live_exact_skips() { # preset, exe dir
    local exe=$2/live_exact.exe out rc
    if [ ! -f "$exe" ]; then
        fail "$1/live_exact-skips-under-wine" "live_exact.exe was not built"
        return
    fi
    out=$(wine_run 60 "$exe" "$(winpath "$2/diskmon.exe")" 2>&1)
    rc=$?
    if [ $rc -eq 77 ] && printf '%s' "$out" | grep -q 'Wine'; then
        pass "$1/live_exact-skips-under-wine"
    else
        fail "$1/live_exact-skips-under-wine" "exit $rc, want 77 and a reason naming Wine: $(printf '%s' "$out" | head -c 200)"
    fi
}

run_preset() { # preset
    local preset=$1 bdir=$BUILD_ROOT/$1 exe built=1
    exe=$bdir/diskmon.exe
    rm -f "$exe"
    # shellcheck disable=SC2086 # DM_WIN_CMAKE_ARGS is a list of arguments
    if cmake --preset "$preset" -S "$ROOT" -B "$bdir" ${DM_WIN_CMAKE_ARGS:-} >"$LOG/windows-$preset-configure.log" 2>&1 &&
        cmake --build "$bdir" -j "$JOBS" >"$LOG/windows-$preset-build.log" 2>&1; then
        pass "$preset/build"
    else
        fail "$preset/build" "see $LOG/windows-$preset-build.log"
        grep -E 'error|Error' "$LOG/windows-$preset-configure.log" "$LOG/windows-$preset-build.log" |
            head -n 20 >&2
        built=0
        # Still check diskmon.exe if it was built (only the tests failed).
        [ -f "$exe" ] || return
    fi
    if ! wine_runs "$exe"; then
        local why="this Wine cannot run $preset programs (i686 needs wine32: dpkg --add-architecture i386 && apt-get install wine32:i386)"
        # A machine where wine32 cannot be installed may waive this one
        # check explicitly; the i686 build itself was still checked above.
        if [ "$preset" = mingw-i686 ] && [ "${DM_WIN_ALLOW_NO_WINE32:-}" = 1 ]; then
            echo "SKIP $preset/wine: $why; waived by DM_WIN_ALLOW_NO_WINE32=1"
            skipped=$((skipped + 1))
        else
            skip "$preset/wine" "$why"
        fi
        return
    fi

    check_help "$preset" "$exe"
    compare_replay "$preset" "$exe"
    check_metrics "$preset" "$exe"
    check_metrics_safety "$preset" "$exe"
    check_live "$preset" "$exe"
    check_selftest "$preset" "$exe"
    check_closed_pipe "$preset" "$exe"
    check_live_exact_skips "$preset" "$bdir"
    [ $built -eq 1 ] || return

    # One line per CTest test, from CTest's own summary lines:
    # "  3/12 Test  #3: etw ......   Passed    0.51 sec" (or ***Failed, ...).
    (cd "$bdir" && ctest --output-on-failure --timeout 600) >"$LOG/windows-$preset-ctest.log" 2>&1
    awk -v p="$preset" '$1 ~ /^[0-9]+\/[0-9]+$/ && $2 == "Test" && $3 ~ /^#[0-9]+:$/ {
            if ($0 ~ /Skipped/) print "SKIP " p "/ctest/" $4 ": every case skipped (see log)"
            else if ($0 ~ / Passed /) print "PASS " p "/ctest/" $4
            else print "FAIL " p "/ctest/" $4 }' "$LOG/windows-$preset-ctest.log" \
        >"$LOG/windows-$preset-ctest.result"
    if [ ! -s "$LOG/windows-$preset-ctest.result" ]; then
        fail "$preset/ctest" "no tests ran; see $LOG/windows-$preset-ctest.log"
    else
        while IFS= read -r line; do
            case $line in
            PASS\ *) pass "${line#PASS }" ;;
            FAIL\ *) fail "${line#FAIL }" ;;
            SKIP\ *)
                echo "$line"
                skipped=$((skipped + 1))
                ;;
            esac
        done <"$LOG/windows-$preset-ctest.result"
        # Failed cases, for the log reader.
        grep -E '^(FAIL|SKIP) [a-z0-9_]+/' "$LOG/windows-$preset-ctest.log" | sed 's/^/   /' >&2
    fi
}

run_preset mingw-x64
run_preset mingw-i686
timeout 60 wineserver -k >/dev/null 2>&1
finish
