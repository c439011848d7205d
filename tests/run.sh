#!/usr/bin/env bash
# run.sh - diskmon's one test command.
#
# Installs what the tests need (Debian, as root), builds diskmon natively with
# warnings as errors (gcc, clang, and gcc -m32 for the portable suites),
# without the live backend (replay only), again with ASan+UBSan and with
# TSan, every tree from a CMakePresets.json preset; cross-builds the Windows
# executable for x86_64 and i686 with mingw-w64 and runs its tests under
# Wine, lints the GitHub workflow, runs every test and every fuzz target
# (20 s each), and ends with one line
# "N passed, N failed, N skipped".
# Exit status 0 when nothing failed.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc 2>/dev/null || echo 2)
LOG=$ROOT/build/logs
mkdir -p "$LOG"

passed=0 failed=0 skipped=0

note() { printf '== %s\n' "$*"; }

# --- dependencies ----------------------------------------------------------
# python3: clock.sh reads trace headers; groff-base, mandoc, man-db: the man
# page checks (docs.sh); git: the fresh-clone test (quickstart.sh); tmux:
# the --top terminal view (linux_top.sh);
# libtraceevent-dev: the oracle of the ftrace page parser's test; strace:
# the idle wake-up count (linux_idle.sh); libcap2-bin (setcap): the
# non-root advice (linux_nonroot.sh); lintian: the .deb (install.sh);
# qemu-user: the -m32 suites where the kernel runs no 32-bit programs;
# libclang-rt-14-dev: libFuzzer and the sanitizer runtimes for clang 14
# (Debian 12's), which tests/fuzz/run.sh links.
# prometheus (promtool), prometheus-node-exporter, curl: the --metrics
# checks and the real chain (metrics.sh, linux_metrics.sh, metrics_chain.sh).
NEEDED="cmake gcc make clang libclang-rt-14-dev mingw-w64 wine wine64 fio gcc-multilib libtraceevent-dev python3 groff-base mandoc man-db git tmux strace libcap2-bin lintian qemu-user prometheus prometheus-node-exporter curl"
# npm lints the GitHub workflow. Debian's npm package conflicts with the
# nodejs builds that bundle npm (NodeSource), so it is asked for only when
# no npm is on the PATH.
command -v npm >/dev/null 2>&1 || NEEDED="$NEEDED nodejs npm"
missing=""
for pkg in $NEEDED; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        note "installing:$missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >"$LOG/apt.log" 2>&1
        # shellcheck disable=SC2086
        apt-get install -y -qq $missing >>"$LOG/apt.log" 2>&1 ||
            { echo "apt-get install failed; see $LOG/apt.log"; tail -20 "$LOG/apt.log"; }
    else
        note "missing packages:$missing (as root: apt-get install$missing);" \
             "the tests that need them will skip"
    fi
fi

# --- helpers ---------------------------------------------------------------
# Count one result line of the forms PASS name / FAIL name / SKIP name: why.
count_lines() {
    local p f s
    p=$(grep -c '^PASS ' "$1")
    f=$(grep -c '^FAIL ' "$1")
    s=$(grep -c '^SKIP ' "$1")
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    grep -E '^(FAIL|SKIP) ' "$1" | sed 's/^/   /'
}

# Configure (from a CMakePresets.json preset) and build one tree; a failed
# build is one failed test.
build() { # name, preset, extra cmake args...
    local name=$1 preset=$2; shift 2
    note "build $name (preset $preset)"
    if cmake --preset "$preset" -S "$ROOT" -B "$ROOT/build/$name" "$@" >"$LOG/$name-configure.log" 2>&1 &&
        cmake --build "$ROOT/build/$name" -j "$JOBS" >"$LOG/$name-build.log" 2>&1; then
        echo "PASS build/$name" >"$LOG/$name-build.result"
    else
        echo "FAIL build/$name" >"$LOG/$name-build.result"
        tail -30 "$LOG/$name-build.log" "$LOG/$name-configure.log" 2>/dev/null
    fi
    count_lines "$LOG/$name-build.result"
    grep -q '^PASS' "$LOG/$name-build.result"
}

# Run ctest in one tree; every CTest test is one result.
run_ctest() { # name, ctest args...
    local name=$1; shift
    note "test $name"
    (cd "$ROOT/build/$name" && ctest --output-on-failure --timeout 600 "$@") \
        >"$LOG/$name-ctest.log" 2>&1
    # Every test's own output, skipped and passed ones too (the ctest log
    # has only the failures'): its SKIP lines say why.
    cp "$ROOT/build/$name/Testing/Temporary/LastTest.log" "$LOG/$name-ctest-all.log" 2>/dev/null ||
        : >"$LOG/$name-ctest-all.log"
    # "NAME<TAB>reason" for each SKIP line a test printed ("SKIP: why",
    # "SKIP suite/case: why").
    awk '/^[0-9]+\/[0-9]+ Test: / { name = $3; next }
         /^SKIP/ && name != "" { r = $0; sub(/^SKIP:? */, "", r); print name "\t" r }' \
        "$LOG/$name-ctest-all.log" >"$LOG/$name-skips.txt"
    # "  3/12 Test  #3: filter ....   Passed    0.01 sec" (or ***Failed,
    # ***Skipped, ***Timeout, ***Exception, Not Run)
    awk -v tree="$name" -F'\t' 'FILENAME == ARGV[1] { if (!($1 in why)) why[$1] = $2; next }
        { split($0, f, " ") }
        f[1] ~ /^[0-9]+\/[0-9]+$/ && f[2] == "Test" && f[3] ~ /^#[0-9]+:$/ {
            if ($0 ~ /Skipped/)
                print "SKIP " tree "/" f[4] ": " (f[4] in why ? why[f[4]] \
                    : "no reason printed (build/logs/" tree "-ctest-all.log)")
            else if ($0 ~ / Passed /) print "PASS " tree "/" f[4]
            else print "FAIL " tree "/" f[4] }' \
        "$LOG/$name-skips.txt" "$LOG/$name-ctest.log" >"$LOG/$name-ctest.result"
    if [ ! -s "$LOG/$name-ctest.result" ]; then
        echo "FAIL $name/ctest: no tests ran" >"$LOG/$name-ctest.result"
    fi
    count_lines "$LOG/$name-ctest.result"
    # Parts skipped inside tests that passed: one line each, with the reason.
    awk -v tree="$name" -F'\t' 'FILENAME == ARGV[1] { skipped[$0] = 1; next }
        !(("SKIP " tree "/" $1) in skipped) { print "   skipped inside " tree "/" $1 ": " $2 }' \
        <(sed -n 's/^SKIP \([^:]*\):.*/\1/p' "$LOG/$name-ctest.result" | sed 's/^/SKIP /') \
        "$LOG/$name-skips.txt" | head -40
    grep -E '^(SKIP|FAIL) ' "$LOG/$name-ctest.log" | sed 's/^/   /' | head -40
    grep -B2 -A30 'FAIL\|Failed\|Error' "$LOG/$name-ctest.log" | head -80 >"$LOG/$name-fail-excerpt.log"
    if grep -q '^FAIL' "$LOG/$name-ctest.result"; then cat "$LOG/$name-fail-excerpt.log"; fi
}

# --- native, warnings as errors ----------------------------------------------
if build native default; then
    run_ctest native
fi

# --- clang, warnings as errors: a second compiler's warnings -----------------
if command -v clang >/dev/null 2>&1; then
    if build clang clang; then
        run_ctest clang -E '^(linux_load|quickstart)$'
    fi
else
    echo "SKIP build/clang: clang is not installed (apt-get install clang)" >"$LOG/clang.result"
    count_lines "$LOG/clang.result"
fi

# --- replay only (-DDM_LIVE=OFF): the build with no live backend, as htop
# builds its unsupported/ platform; every test it registers must pass -------
if build replay-only replay-only; then
    run_ctest replay-only
fi

# --- ASan + UBSan: the whole suite but the timing-sensitive load test --------
if build asan asan; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        run_ctest asan -E '^(linux_load|quickstart)$'
fi

# --- TSan: the threaded parts (ring, pipeline through replay, and the Linux
# live source: its reader thread against stop() and the printer) ------------
if build tsan tsan; then
    TSAN_OPTIONS=halt_on_error=1 run_ctest tsan -R '^(ring|replay|pipeline|top|cli|findings|top_replay|linux_live|linux_tracefs|linux_top|metrics_replay|linux_metrics|linux_threads|linux_idle|linux_signals)$'
fi

# --- 32-bit Linux (-m32): the portable decoder and reader at 32 bits ----------
# The payload layouts follow each record's pointer size, not the build's;
# a 32-bit build runs the portable suites (and replay's CLI test) to show it.
# Some kernels are built or booted without 32-bit x86 support (exec then
# fails with "Exec format error"): there the 32-bit binaries run under
# qemu-user's i386 emulator, registered with binfmt_misc for this run only
# (the kernel's admin-guide/binfmt-misc.rst; the magic and mask are the i386
# ELF header's, as qemu's own binfmt configuration has them).
I386_BINFMT=/proc/sys/fs/binfmt_misc/dm-qemu-i386
i386_can_run() { # a 32-bit command to try
    "$@" >/dev/null 2>&1 && return 0
    [ "$(id -u)" -eq 0 ] && command -v qemu-i386 >/dev/null || return 1
    [ -e /proc/sys/fs/binfmt_misc/register ] ||
        mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || return 1
    [ -e "$I386_BINFMT" ] ||
        printf '%s' ':dm-qemu-i386:M::\x7fELF\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x03\x00:\xff\xff\xff\xff\xff\xfe\xfe\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:'"$(command -v qemu-i386)"':F' \
            >/proc/sys/fs/binfmt_misc/register 2>/dev/null || return 1
    I386_REGISTERED=1
    trap i386_unregister EXIT
    "$@" >/dev/null 2>&1
}
I386_REGISTERED=0
i386_unregister() {
    [ "$I386_REGISTERED" -eq 1 ] && echo -1 >"$I386_BINFMT" 2>/dev/null
    I386_REGISTERED=0
}
if dpkg -s gcc-multilib >/dev/null 2>&1; then
    if build m32 m32; then
        if i386_can_run "$ROOT/build/m32/diskmon" --version; then
            [ -e "$I386_BINFMT" ] && note "32-bit binaries run under qemu-i386 (this kernel runs none itself)"
            run_ctest m32 -R '^(ring|format|filter|options|stats|lz77|diskio|etl|replay|reorder|forward|files|pipeline|top|cli|findings|clock|top_replay)$'
            i386_unregister # nothing after this step is a 32-bit Linux program
        else
            echo "SKIP m32/ctest: this kernel cannot run 32-bit programs and qemu-i386 with binfmt_misc is not available (apt-get install qemu-user, as root)" >"$LOG/m32.result"
            count_lines "$LOG/m32.result"
        fi
    fi
else
    echo "SKIP build/m32: gcc-multilib is not installed (apt-get install gcc-multilib)" >"$LOG/m32.result"
    count_lines "$LOG/m32.result"
fi

# --- fuzzing: every parser under libFuzzer (clang, ASan+UBSan): the committed
# regression inputs replayed, then 20 s per target (tests/fuzz/run.sh) -------
note "fuzz (20 s per target)"
bash "$ROOT/tests/fuzz/run.sh" 20 >"$LOG/fuzz.log" 2>&1
grep -E '^(PASS|FAIL|SKIP) ' "$LOG/fuzz.log" >"$LOG/fuzz.result" ||
    echo "FAIL fuzz: tests/fuzz/run.sh printed no result; see $LOG/fuzz.log" >"$LOG/fuzz.result"
count_lines "$LOG/fuzz.result"

# --- Windows: mingw-w64 cross builds, tests under Wine -----------------------
note "windows (mingw-w64 + wine)"
# Debian's i386 package index here is out of step with amd64, so wine32 (which
# runs the i686 build) cannot be installed: the i686 build is still checked
# with warnings as errors, and running it under Wine is a reported skip.
DM_WIN_ALLOW_NO_WINE32=1 bash "$ROOT/tests/scripts/windows.sh" "$ROOT/build/native/diskmon" >"$LOG/windows.log" 2>&1
count_lines "$LOG/windows.log"

# --- the GitHub Actions workflow: schema lint ---------------------------------
# .github/workflows/ci.yml runs on GitHub only; here it is checked against
# the workflow schema with @action-validator/cli (npm; a WebAssembly build,
# runs offline once installed), pinned, installed into build/tools/npm.
# --- the Windows code under clang's conversion warnings ------------------------
# MSVC's /W4 narrowing warnings cannot run here; clang targeting mingw-w64
# with -Wconversion and -Wshorten-64-to-32 stands in for them, on the code
# only Windows builds: src/etw, src/platform/win32*.c, tests/windows.
note "clang windows (x86_64-w64-mingw32 -Wconversion -Wshorten-64-to-32)"
: >"$LOG/clang-windows.log"
if ! command -v clang >/dev/null 2>&1 || [ ! -f /usr/x86_64-w64-mingw32/include/windows.h ]; then
    echo "SKIP clang-windows: needs clang and the mingw-w64 headers (apt-get install clang mingw-w64)" >>"$LOG/clang-windows.log"
else
    for src in src/etw/*.c src/platform/win32*.c tests/windows/*.c; do
        if clang --target=x86_64-w64-mingw32 -std=c11 -fsyntax-only -Wall -Wextra \
            -Werror -Wshorten-64-to-32 -Wconversion \
            -isystem /usr/x86_64-w64-mingw32/include -Iinclude -Isrc \
            -D_WIN32_WINNT=0x0602 -DWIN32_LEAN_AND_MEAN -DUNICODE -D_UNICODE \
            "$src" >"$LOG/clang-windows-$(basename "$src").log" 2>&1; then
            echo "PASS clang-windows/$src" >>"$LOG/clang-windows.log"
        else
            echo "FAIL clang-windows/$src: $(grep -m1 -E 'error|warning' "$LOG/clang-windows-$(basename "$src").log")" >>"$LOG/clang-windows.log"
        fi
    done
fi
count_lines "$LOG/clang-windows.log"

note "lint .github/workflows/ci.yml"
lint_workflow() {
    local dir=$ROOT/build/tools/npm v=$ROOT/build/tools/npm/node_modules/.bin/action-validator
    local bad=$ROOT/build/tools/bad-workflow.yml
    if ! command -v npm >/dev/null 2>&1; then
        echo "SKIP lint/ci.yml: npm is not installed (apt-get install nodejs npm)"
        return
    fi
    if [ ! -x "$v" ]; then
        mkdir -p "$dir"
        (cd "$dir" && npm install --no-audit --no-fund --prefix "$dir" \
            @action-validator/cli@0.6.0 @action-validator/core@0.6.0) >"$LOG/npm.log" 2>&1 ||
            { echo "FAIL lint/ci.yml: npm install failed; see $LOG/npm.log"; return; }
    fi
    # The linter must reject a broken workflow, or its PASS means nothing.
    printf 'name: bad\non: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    stepz: []\n' >"$bad"
    if "$v" "$bad" >"$LOG/lint-bad.log" 2>&1; then
        echo "FAIL lint/ci.yml: the linter accepted a broken workflow"
    elif "$v" "$ROOT/.github/workflows/ci.yml" >"$LOG/lint.log" 2>&1; then
        echo "PASS lint/ci.yml"
    else
        echo "FAIL lint/ci.yml: see $LOG/lint.log"
        head -40 "$LOG/lint.log"
    fi
}
lint_workflow >"$LOG/lint.result" 2>&1
count_lines "$LOG/lint.result"

# --- the benchmark's short run: generated traces replayed to the generator's
# own counts and requests, perf script's input, bench_callback; times are not
# checked (tests/bench/run.sh without --short is the benchmark) -------------
note "bench --short"
if [ -x "$ROOT/build/native/diskmon" ]; then
    bash "$ROOT/tests/bench/run.sh" --short --build "$ROOT/build/native" >"$LOG/bench.result" 2>&1
else
    echo "FAIL bench/short: no native build to run it with" >"$LOG/bench.result"
fi
count_lines "$LOG/bench.result"

# --- names with control bytes: a generated trace (gen_etl, built by the
# bench above) with its file and process names patched; text and --top
# blocks must show them as escapes, one line per event --------------------
note "hostile names"
python3 "$ROOT/tests/scripts/hostile_names.py" "$ROOT/build/native/diskmon" \
    "$ROOT/build/native/gen_etl" >"$LOG/hostile_names.result" 2>&1
count_lines "$LOG/hostile_names.result"

echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
