#!/usr/bin/env bash
# run.sh - diskmon's test command, whole or in parts.
#
# Usage: tests/run.sh [GROUP] [--dry-run]
#   all      (the default; what CI runs, .ci/run) installs what the tests
#            need (tests/deps.sh), builds diskmon natively with warnings as
#            errors (gcc, clang, and gcc -m32 for the portable suites),
#            without the live backend (replay only), again with ASan+UBSan
#            and with TSan, for 64-bit ARM with clang (its unit suites under
#            qemu-aarch64), every tree from a CMakePresets.json preset;
#            cross-builds the Windows executable for x86_64 and i686 with
#            mingw-w64 and runs its tests under Wine, checks the Windows
#            code under clang's conversion warnings, lints the GitHub
#            workflow, runs every test and every fuzz target (20 s each),
#            the benchmark's short run and the hostile-names check.
#   quick    the native build, then its unit and replay tests (ctest -L)
#   unit     the native build, then ctest -L unit (the C suites and the
#            checks that need neither traces nor root)
#   replay   the native build, then ctest -L replay (the executable on the
#            sample and generated traces)
#   linux    the native build, then ctest -L linux (live Linux: root,
#            tracefs, loop devices; the packages)
#   windows  the native build, the mingw-w64 builds under Wine, and clang's
#            conversion warnings on the Windows code
#   fuzz     every fuzz target: its regressions, then 20 s of fuzzing
#   bench    the native build, the benchmark's short run, hostile names
# --dry-run prints the steps the group would take and runs none.
#
# Prints one line per test (PASS, FAIL or SKIP with its reason: from CTest's
# JUnit report, tests/lib/junit.py, or the lines the scripts print) and ends
# with one line "N passed, N failed, N skipped". Exit status 0 when nothing
# failed. Logs: build/logs. tests/README.md says how to run one test.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc 2>/dev/null || echo 2)
LOG=$ROOT/build/logs
GROUP=all DRY=0 PAR=$JOBS
for arg in "$@"; do
    case $arg in
        all|quick|unit|replay|linux|windows|fuzz|bench) GROUP=$arg ;;
        --dry-run) DRY=1 ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "tests/run.sh: unknown argument '$arg' (see tests/run.sh --help)" >&2; exit 2 ;;
    esac
done
mkdir -p "$LOG"

passed=0 failed=0 skipped=0

note() { printf '== %s\n' "$*"; }

# --dry-run: say what a step would do instead of doing it. Returns 0 when
# the step is to run.
would() {
    [ "$DRY" -eq 1 ] || return 0
    note "would: $*"
    return 1
}

# --- helpers ---------------------------------------------------------------
# Count the result lines of a file, PASS name / FAIL name / SKIP name: why,
# and print them, one per test (with any indented detail lines after them).
count_lines() {
    local p f s
    p=$(grep -c '^PASS ' "$1")
    f=$(grep -c '^FAIL ' "$1")
    s=$(grep -c '^SKIP ' "$1")
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    grep -E '^(PASS|FAIL|SKIP) |^   ' "$1" | sed 's/^/   /'
}

# Configure (from a CMakePresets.json preset) and build one tree; a failed
# build is one failed test.
build() { # name, preset, extra cmake args...
    local name=$1 preset=$2; shift 2
    note "build $name (preset $preset)"
    would "cmake --preset $preset -B build/$name $*; cmake --build build/$name -j $JOBS" || return 0
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

# Run ctest in one tree; every CTest test is one result, read from CTest's
# JUnit report (each test's whole output is in it, so a SKIP keeps its
# reason). PAR tests at a time: 1 for `all`, as CI has always run them;
# the parts run JOBS at once (RUN_SERIAL keeps the live tests apart).
run_ctest() { # name, ctest args...
    local name=$1; shift
    note "test $name${*:+ ($*)}"
    would "(cd build/$name && ctest -j $PAR --timeout 600 --output-junit ... $*)" || return 0
    rm -f "$LOG/$name-junit.xml"
    (cd "$ROOT/build/$name" && ctest -j "$PAR" --output-on-failure --timeout 600 \
        --test-output-size-passed 1048576 --test-output-size-failed 1048576 \
        --output-junit "$LOG/$name-junit.xml" "$@") >"$LOG/$name-ctest.log" 2>&1
    python3 "$ROOT/tests/lib/junit.py" "$name" "$LOG/$name-junit.xml" >"$LOG/$name-ctest.result"
    count_lines "$LOG/$name-ctest.result"
    if grep -q '^FAIL' "$LOG/$name-ctest.result"; then
        grep -B2 -A30 'FAIL\|Failed\|Error' "$LOG/$name-ctest.log" | head -80
    fi
}

# A script that prints its own PASS/FAIL/SKIP lines, counted as they are.
run_script() { # name, command...
    local name=$1; shift
    would "$*" || return 0
    "$@" >"$LOG/$name.log" 2>&1
    grep -E '^(PASS|FAIL|SKIP) ' "$LOG/$name.log" >"$LOG/$name.result" ||
        echo "FAIL $name: printed no result; see $LOG/$name.log" >"$LOG/$name.result"
    count_lines "$LOG/$name.result"
}

# --- the steps ----------------------------------------------------------------
step_deps() {
    note "dependencies (tests/deps.sh)"
    if [ "$DRY" -eq 1 ]; then bash "$ROOT/tests/deps.sh" --dry-run; else bash "$ROOT/tests/deps.sh"; fi
}

# --- clang, warnings as errors: a second compiler's warnings -----------------
step_clang() {
    if command -v clang >/dev/null 2>&1; then
        if build clang clang; then
            run_ctest clang -E '^(linux_load|linux_load_pictures|quickstart)$'
        fi
    else
        echo "SKIP build/clang: clang is not installed (apt-get install clang)" >"$LOG/clang.result"
        count_lines "$LOG/clang.result"
    fi
}

# --- replay only (-DDM_LIVE=OFF): the build with no live backend, as htop
# builds its unsupported/ platform; every test it registers must pass -------
step_replay_only() {
    if build replay-only replay-only; then
        run_ctest replay-only
    fi
}

# --- ASan + UBSan: the whole suite but the timing-sensitive load test --------
step_asan() {
    if build asan asan; then
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
            run_ctest asan -E '^(linux_load|linux_load_pictures|quickstart)$'
    fi
}

# --- TSan: the threaded parts (ring, pipeline through replay, and the Linux
# live source: its reader thread against stop() and the printer) ------------
step_tsan() {
    if build tsan tsan; then
        TSAN_OPTIONS=halt_on_error=1 run_ctest tsan -R '^(ring|replay|pipeline|top|cli|findings|top_replay|linux_live|linux_tracefs|linux_top|metrics_replay|linux_metrics|linux_threads|linux_idle|linux_signals)$'
    fi
}

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
M32_TESTS='^(ring|format|filter|options|stats|lz77|diskio|etl|replay|reorder|forward|files|pipeline|top|cli|findings|clock|top_replay)$'
step_m32() {
    if dpkg -s gcc-multilib >/dev/null 2>&1; then
        if build m32 m32; then
            if [ "$DRY" -eq 1 ]; then
                run_ctest m32 -R "$M32_TESTS"
            elif i386_can_run "$ROOT/build/m32/diskmon" --version; then
                [ -e "$I386_BINFMT" ] && note "32-bit binaries run under qemu-i386 (this kernel runs none itself)"
                run_ctest m32 -R "$M32_TESTS"
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
}

# --- 64-bit ARM Linux: the unit suites cross-built with clang (preset aarch64,
# tests/toolchains/aarch64-linux.cmake) and run under qemu-aarch64 ----------
# ARM64 is weakly ordered, and the ring's memory orders (ring.h) are meant
# for it. qemu-user cannot show that: it runs the guest's threads on this
# x86 host, whose stronger order its translated loads and stores keep, so a
# reordering an ARM processor may make never happens here. This step proves
# that the ring and the rest build for ARM64 (LDAR/STLR, DMB ISH) with
# warnings as errors and that their logic holds there; the ordering on a
# real ARM64 processor rests on the proof in ring.h. The unit suites only:
# the script tests run diskmon itself, which is not an x86 program here.
AARCH64_TESTS='^(ring|format|filter|options|stats|lz77|diskio|etl|replay|reorder|forward|files|pipeline|top|kmerge|metrics|busy|top_cache|partmap|ftrace_page|linux_requests|cgroups|sysfs_partitions)$'
step_aarch64() {
    local why="" pkg
    # The packages tests/deps.sh installs for this step, and what each gives.
    for pkg in clang:clang qemu-user:qemu-aarch64 binutils-aarch64-linux-gnu:aarch64-linux-gnu-ld; do
        command -v "${pkg#*:}" >/dev/null 2>&1 || why="$why ${pkg%%:*}"
    done
    [ -f /usr/aarch64-linux-gnu/lib/libc.a ] || why="$why libc6-dev-arm64-cross"
    ls /usr/lib/gcc-cross/aarch64-linux-gnu/*/libgcc.a >/dev/null 2>&1 ||
        why="$why libgcc-12-dev-arm64-cross"
    if [ -n "$why" ]; then
        echo "SKIP build/aarch64: missing:$why (as root: apt-get install$why)" >"$LOG/aarch64.result"
        count_lines "$LOG/aarch64.result"
        return
    fi
    if build aarch64 aarch64; then
        run_ctest aarch64 -R "$AARCH64_TESTS"
    fi
}

# --- fuzzing: every parser under libFuzzer (clang, ASan+UBSan): the committed
# regression inputs replayed, then 20 s per target (tests/fuzz/run.sh) -------
step_fuzz() {
    note "fuzz (20 s per target)"
    run_script fuzz bash "$ROOT/tests/fuzz/run.sh" 20
}

# --- Windows: mingw-w64 cross builds, tests under Wine -----------------------
step_windows() {
    note "windows (mingw-w64 + wine)"
    # Debian's i386 package index here is out of step with amd64, so wine32
    # (which runs the i686 build) cannot be installed: the i686 build is
    # still checked with warnings as errors, and running it under Wine is a
    # reported skip.
    DM_WIN_ALLOW_NO_WINE32=1 run_script windows bash "$ROOT/tests/scripts/windows.sh" \
        "$ROOT/build/native/diskmon"
}

# --- the Windows code under clang's conversion warnings ------------------------
# MSVC's /W4 narrowing warnings cannot run here; clang targeting mingw-w64
# with -Wconversion and -Wshorten-64-to-32 stands in for them, on the code
# only Windows builds: src/etw, src/platform/win32*.c, src/selftest/selftest_win32*.c,
# tests/windows.
step_clang_windows() {
    note "clang windows (x86_64-w64-mingw32 -Wconversion -Wshorten-64-to-32)"
    would "clang --target=x86_64-w64-mingw32 -fsyntax-only on src/etw/*.c src/platform/win32*.c src/selftest/selftest_win32*.c tests/windows/*.c" || return 0
    : >"$LOG/clang-windows.log"
    if ! command -v clang >/dev/null 2>&1 || [ ! -f /usr/x86_64-w64-mingw32/include/windows.h ]; then
        echo "SKIP clang-windows: needs clang and the mingw-w64 headers (apt-get install clang mingw-w64)" >>"$LOG/clang-windows.log"
    else
        for src in src/etw/*.c src/platform/win32*.c src/selftest/selftest_win32*.c tests/windows/*.c; do
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
}

# --- the GitHub Actions workflow: schema lint ---------------------------------
# .github/workflows/ci.yml runs on GitHub only; here it is checked against
# the workflow schema with @action-validator/cli (npm; a WebAssembly build,
# runs offline once installed), pinned, installed into build/tools/npm.
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
step_lint() {
    note "lint .github/workflows/ci.yml"
    would "npm: @action-validator/cli on .github/workflows/ci.yml" || return 0
    lint_workflow >"$LOG/lint.result" 2>&1
    count_lines "$LOG/lint.result"
}

# --- the benchmark's short run: generated traces replayed to the generator's
# own counts and requests, perf script's input, bench_callback; times are not
# checked (tests/bench/run.sh without --short is the benchmark) -------------
step_bench() {
    note "bench --short"
    if [ "$DRY" -eq 1 ] || [ -x "$ROOT/build/native/diskmon" ]; then
        run_script bench bash "$ROOT/tests/bench/run.sh" --short --build "$ROOT/build/native"
    else
        echo "FAIL bench/short: no native build to run it with" >"$LOG/bench.result"
        count_lines "$LOG/bench.result"
    fi
}

# --- names with control bytes: a generated trace (gen_etl, built by the
# bench above) with its file and process names patched; text and --top
# blocks must show them as escapes, one line per event --------------------
step_hostile() {
    note "hostile names"
    run_script hostile_names python3 "$ROOT/tests/scripts/hostile_names.py" \
        "$ROOT/build/native/diskmon" "$ROOT/build/native/gen_etl"
}

# Every CTest test carries one of the group labels, or `run.sh GROUP` would
# never run it: one result line saying which tests have none.
step_labels() {
    local all labelled
    [ -d "$ROOT/build/native" ] || return 0
    all=$(cd "$ROOT/build/native" && ctest -N | sed -n 's/^ *Test *#[0-9]*: //p' | sort)
    labelled=$(cd "$ROOT/build/native" && ctest -N -L '^(unit|replay|linux|windows)$' |
        sed -n 's/^ *Test *#[0-9]*: //p' | sort)
    if [ "$all" = "$labelled" ]; then
        echo "PASS labels/every-test" >"$LOG/labels.result"
    else
        echo "FAIL labels/every-test: no group label on: $(comm -23 <(echo "$all") <(echo "$labelled") | tr '\n' ' ')" >"$LOG/labels.result"
    fi
    count_lines "$LOG/labels.result"
}

# --- the groups ---------------------------------------------------------------
case $GROUP in
    all)
        PAR=1
        step_deps
        if build native default; then run_ctest native; step_labels; fi
        step_clang
        step_replay_only
        step_asan
        step_tsan
        step_m32
        step_aarch64
        step_fuzz
        step_windows
        step_clang_windows
        step_lint
        step_bench
        step_hostile
        ;;
    quick) if build native default; then run_ctest native -L '^(unit|replay)$'; step_labels; fi ;;
    unit|replay|linux) if build native default; then run_ctest native -L "^$GROUP\$"; fi ;;
    windows)
        if build native default; then step_windows; fi
        step_clang_windows
        ;;
    fuzz) step_fuzz ;;
    bench)
        if build native default; then
            step_bench
            step_hostile
        fi
        ;;
esac

echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
