#!/usr/bin/env bash
# run.sh - build every libFuzzer target under clang ASan+UBSan, replay the
# committed regression inputs, then fuzz each target for SECONDS.
#
# Usage: tests/fuzz/run.sh SECONDS [TARGET...]
#        (SECONDS 0: build and replay the regressions only; TARGETs: some of
#        etl lz77 replay ftrace reorder options inputs, default all)
#
# Targets: tests/fuzz/fuzz_NAME.c, each with a seed corpus in
# tests/fuzz/corpus/NAME/ (committed, small) and regression inputs in
# tests/fuzz/regress/NAME/ (every crash found, committed once fixed: each is
# run once and must pass). A run fuzzes a copy of the seeds in
# build/fuzz/corpus/NAME (kept between runs, so coverage accumulates);
# crashes land in build/fuzz/crashes/NAME/, to be fixed and then moved into
# regress/. Prints one line per target (PASS/FAIL/SKIP, with runs, coverage
# and crashes), then "N passed, N failed". Exit 0 when nothing failed, 77
# when clang's libFuzzer is missing.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
SECONDS_EACH=${1:?usage: tests/fuzz/run.sh SECONDS}
OUT=$ROOT/build/fuzz
CC=${DM_FUZZ_CC:-clang}
shift
TARGETS=${*:-etl lz77 replay ftrace reorder options inputs}
passed=0 failed=0

# The product sources the targets use: the portable core, decoders and
# .etl reader and -r's other formats (every file, so a file split out later
# is picked up), the POSIX platform layer without a live backend, and the
# ftrace page parser
# with the tracefs format parser it reads header_page with.
LIB_SOURCES="$(echo src/base/*.c src/cli/*.c src/core/*.c src/output/*.c src/views/*.c src/decode/*.c src/etl/*.c src/input/*.c) src/platform/posix.c src/platform/posix_fence.c
  src/platform/posix_infile.c
  src/unsupported/no_live.c src/linux/ftrace_page.c src/linux/tracefs.c"
CFLAGS="-std=c11 -g -O1 -fno-omit-frame-pointer -D_GNU_SOURCE -Iinclude -Isrc
  -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
  -fsanitize=address,undefined -fno-sanitize-recover=all"

if ! command -v "$CC" >/dev/null 2>&1 ||
    ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n); int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' |
        "$CC" -x c -fsanitize=fuzzer - -o /dev/null >/dev/null 2>&1; then
    echo "SKIP fuzz: $CC with libFuzzer (-fsanitize=fuzzer) is not available (apt-get install clang)"
    exit 77
fi

mkdir -p "$OUT/obj"
# Build the library once, then each target against it.
objs=""
for src in $LIB_SOURCES; do
    obj=$OUT/obj/$(echo "$src" | tr / _).o
    # shellcheck disable=SC2086
    if ! $CC $CFLAGS -fsanitize=fuzzer-no-link -c "$src" -o "$obj" 2>"$OUT/build.log"; then
        echo "FAIL fuzz/build: $src does not build; see $OUT/build.log"
        cat "$OUT/build.log"
        echo "0 passed, 1 failed"
        exit 1
    fi
    objs="$objs $obj"
done
rm -f "$OUT/libdm_fuzz.a"
# shellcheck disable=SC2086
ar rcs "$OUT/libdm_fuzz.a" $objs

for t in $TARGETS; do
    bin=$OUT/fuzz_$t
    # shellcheck disable=SC2086
    if ! $CC $CFLAGS -fsanitize=fuzzer "tests/fuzz/fuzz_$t.c" "$OUT/libdm_fuzz.a" \
        -lpthread -o "$bin" 2>"$OUT/build-$t.log"; then
        echo "FAIL fuzz/$t: does not build; see $OUT/build-$t.log"
        failed=$((failed + 1))
        continue
    fi

    # The committed regression inputs: each run once, each must pass.
    regress_fail=""
    for input in tests/fuzz/regress/"$t"/*; do
        [ -f "$input" ] || continue
        if ! "$bin" "$input" >"$OUT/regress-$t.log" 2>&1; then
            regress_fail="$regress_fail ${input##*/}"
        fi
    done
    nregress=$(find tests/fuzz/regress/"$t" -type f 2>/dev/null | wc -l)
    if [ -n "$regress_fail" ]; then
        echo "FAIL fuzz/$t: regression inputs crash:$regress_fail (see $OUT/regress-$t.log)"
        failed=$((failed + 1))
        continue
    fi
    if [ "$SECONDS_EACH" -eq 0 ]; then
        echo "PASS fuzz/$t: $nregress regression inputs replayed"
        passed=$((passed + 1))
        continue
    fi

    mkdir -p "$OUT/corpus/$t" "$OUT/crashes/$t"
    cp -n tests/fuzz/corpus/"$t"/* "$OUT/corpus/$t/" 2>/dev/null
    before=$(find "$OUT/crashes/$t" -type f | wc -l)
    # -rss_limit_mb: far above the reader's 256 MiB budget plus ASan's
    # overhead; an input that passes it is a finding. -timeout: one input
    # taking 10 s is a hang.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$bin" \
        -max_total_time="$SECONDS_EACH" -max_len=65536 -rss_limit_mb=1536 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$OUT/crashes/$t/" \
        "$OUT/corpus/$t" >"$OUT/fuzz-$t.log" 2>&1
    after=$(find "$OUT/crashes/$t" -type f | wc -l)
    crashes=$((after - before))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/fuzz-$t.log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$OUT/fuzz-$t.log" | tail -1 | cut -d' ' -f2)
    line="$t: ${runs:-0} runs, coverage ${cov:-0}, $crashes crashes, $nregress regression inputs"
    if [ "$crashes" -eq 0 ] && [ -n "$runs" ]; then
        echo "PASS fuzz/$line"
        passed=$((passed + 1))
    else
        echo "FAIL fuzz/$line (see $OUT/fuzz-$t.log and $OUT/crashes/$t/)"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
