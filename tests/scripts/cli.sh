#!/usr/bin/env bash
# cli.sh - the diskmon executable as a user meets it: --help, --version, bad
# usage, replay of the real sample traces in every format (checked against
# the reference decodings in ../shared/etl/reference, not against our own
# output), filters, -n, -o, the summary, pipes that close early, and corrupt
# input. Usage: cli.sh PATH/TO/diskmon. Exit 0 pass, 1 fail, 77 skip.
set -u
DISKMON=${1:?usage: cli.sh DISKMON}
HERE=$(cd "$(dirname "$0")" && pwd)
ETL=${DM_SHARED_ETL:-$HERE/../../../shared/etl}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SUITE=cli
# shellcheck source=../lib/results.sh
. "$HERE/../lib/results.sh"

# --- help, version, usage errors -------------------------------------------
"$DISKMON" --help >"$TMP/help" 2>"$TMP/err"; rc=$?
check help_exit_0 test "$rc" -eq 0
check help_on_stdout grep -q -- "--replay FILE" "$TMP/help"
check help_no_stderr test ! -s "$TMP/err"
"$DISKMON" -V >"$TMP/ver"; rc=$?
check version test "$rc" -eq 0 -a "$(head -n 1 "$TMP/ver" | cut -d' ' -f1)" = diskmon
# The second line names the build: compiler and target: this machine's, or
# i686 for a 32-bit build on x86_64 (the ELF header's class byte, 1: 32-bit).
cpu=$(uname -m)
[ "$cpu" = x86_64 ] && [ "$(od -An -tu1 -j4 -N1 "$DISKMON" | tr -d ' ')" = 1 ] && cpu=i686
check version_build grep -Eqx "built with (GNU|Clang) [0-9.]+ for $(uname -s) $cpu" "$TMP/ver"

for args in "--bogus" "-f xml" "-n 0" "-r" "extra"; do
    # shellcheck disable=SC2086
    "$DISKMON" $args >"$TMP/out" 2>"$TMP/err"; rc=$?
    name="usage_${args// /_}"
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && [ ! -s "$TMP/out" ] &&
        grep -q "^diskmon: " "$TMP/err"; then
        pass "$name"
    else
        fail "$name" "rc=$rc stderr=$(cat "$TMP/err")"
    fi
done

# --top's SEC is optional, yet a negative one is a bad interval, not an
# unknown option "-1" (no option is spelt with a digit).
"$DISKMON" --top -1 >"$TMP/out" 2>"$TMP/err"; rc=$?
check top_negative_interval test "$rc" -eq 2 -a "$(cat "$TMP/err")" = \
    "diskmon: bad interval '-1' for --top (seconds, at least 0.001, at most 86400) (see diskmon --help)"

"$DISKMON" -r "$TMP/no-such.etl" >"$TMP/out" 2>"$TMP/err"; rc=$?
check missing_file_exit_1 test "$rc" -eq 1
check missing_file_message grep -q "no-such.etl" "$TMP/err"

head -c 4096 /dev/urandom >"$TMP/noise.etl"
"$DISKMON" -r "$TMP/noise.etl" >"$TMP/out" 2>"$TMP/err"; rc=$?
# No format recognises it (docs/replay.md): exit 2, the formats named,
# nothing on stdout. Read as .etl all the same, the reader names the offset.
check not_recognised_exit_2 test "$rc" -eq 2
check not_recognised_names_formats grep -q "diskmon reads etl" "$TMP/err"
check not_recognised_no_stdout test ! -s "$TMP/out"
"$DISKMON" -r "$TMP/noise.etl" --input-format etl >"$TMP/out" 2>"$TMP/err"; rc=$?
check not_etl_exit_1 test "$rc" -eq 1
check not_etl_names_offset grep -q "offset" "$TMP/err"

# --- replay of the real traces ---------------------------------------------
[ -f "$ETL/perfview-net452-x64-win8.etl" ] && [ -f "$ETL/filtrace-diskio-win11.etl" ] ||
    need replay "sample traces (perfview-net452-x64-win8.etl, filtrace-diskio-win11.etl) not found at $ETL (set DM_SHARED_ETL)"

# The reference CSV's Read/Write/FlushBuffers rows as
# "request disk offset bytes duration_ns" (HighResResponseTime ticks at the
# traces' 10 MHz PerfFreq are 100 ns each).
reference_tuples() {
    awk -F, 'NR > 1 && ($5 == 10 || $5 == 11 || $5 == 14) {
        req = ($5 == 10) ? "Read" : ($5 == 11) ? "Write" : "Flush"
        off = ($13 == "") ? 0 : $13; len = ($11 == "") ? 0 : $11
        printf "%s %s %s %s %.0f\n", req, $9, off, len, $16 * 100 }' "$1" | sort
}

# diskmon's CSV as the same tuples. offset and bytes come after the file
# and before flags, priority, partition and cgroup (never quoted on these
# traces), so a file name with a comma cannot shift them; duration is
# seconds with 9 decimals = exact nanoseconds.
diskmon_tuples() {
    tr -d '\r' <"$1" | awk -F, 'NR > 1 {
        split($3, d, "."); printf "%s %s %s %s %.0f\n", $5, $4, $(NF-5), $(NF-4), d[1] * 1000000000 + d[2] }' | sort
}

for trace in perfview-net452-x64-win8 filtrace-diskio-win11; do
    etl=$ETL/$trace.etl
    ref=$ETL/reference/$trace.diskio.csv
    "$DISKMON" -r "$etl" -f csv >"$TMP/$trace.csv" 2>"$TMP/err"; rc=$?
    check "${trace}_csv_exit_0" test "$rc" -eq 0
    diskmon_tuples "$TMP/$trace.csv" >"$TMP/dm.tuples"
    # DM_SHARED_ETL may name a folder with the traces alone.
    if [ ! -f "$ref" ]; then
        echo "SKIP ${SUITE}/${trace}_csv_matches_reference: the reference decoding $ref is not there"
    elif reference_tuples "$ref" >"$TMP/ref.tuples" && [ -s "$TMP/ref.tuples" ] &&
        cmp -s "$TMP/ref.tuples" "$TMP/dm.tuples"; then
        pass "${trace}_csv_matches_reference"
    else
        fail "${trace}_csv_matches_reference" \
            "$(diff "$TMP/ref.tuples" "$TMP/dm.tuples" | head -5)"
    fi
    # The flags and priority: the oracle decodes the reference's IrpFlags
    # column itself (Microsoft's IRP_* bits, bits 17-19 the priority).
    if [ -f "$ref" ]; then
        check "${trace}_flags_match_reference" \
            python3 "$HERE/../oracles/irp_flags.py" "$ref" "$TMP/$trace.csv"
    fi

    "$DISKMON" -r "$etl" -f json >"$TMP/$trace.json"; rc=$?
    "$DISKMON" -r "$etl" >"$TMP/$trace.txt"; rc2=$?
    n_csv=$(($(wc -l <"$TMP/$trace.csv") - 1))
    n_json=$(wc -l <"$TMP/$trace.json")
    n_txt=$(($(wc -l <"$TMP/$trace.txt") - 1))
    check "${trace}_formats_same_count" test "$rc" -eq 0 -a "$rc2" -eq 0 \
        -a "$n_csv" -eq "$n_json" -a "$n_csv" -eq "$n_txt" -a "$n_csv" -gt 0
    # The same offsets, in the same order, in json as in csv.
    tr -d '\r' <"$TMP/$trace.csv" | awk -F, 'NR > 1 { print $(NF-5) }' >"$TMP/csv.off"
    sed 's/.*"offset":\([0-9]*\).*/\1/' "$TMP/$trace.json" >"$TMP/json.off"
    check "${trace}_json_same_events" cmp -s "$TMP/csv.off" "$TMP/json.off"
    # Text: sectors = offset / 512 in the same order.
    awk 'NR > 1 { print $6 }' "$TMP/$trace.txt" >"$TMP/txt.sec"
    awk '{ printf "%.0f\n", ($1 - $1 % 512) / 512 }' "$TMP/csv.off" >"$TMP/csv.sec"
    check "${trace}_text_same_sectors" cmp -s "$TMP/csv.sec" "$TMP/txt.sec"
done

# PerfView's COUNT lines for the Windows 8 trace: Read 1208, Write 21,
# FlushBuffers 2 (reference/perfview-net452-x64-win8.baseline.txt).
t=$TMP/perfview-net452-x64-win8.txt
for pair in Read:1208 Write:21 Flush:2; do
    req=${pair%%:*} want=${pair##*:}
    got=$(awk -v r="$req" 'NR > 1 && $5 == r' "$t" | wc -l)
    check "win8_count_$req" test "$got" -eq "$want"
done

# Filters and stop conditions.
win8=$ETL/perfview-net452-x64-win8.etl
"$DISKMON" -r "$win8" --op write --no-header >"$TMP/w"
check op_write_only test "$(awk '$5 != "Write"' "$TMP/w" | wc -l)" -eq 0 -a "$(wc -l <"$TMP/w")" -eq 21
"$DISKMON" -r "$win8" -n 5 --no-header >"$TMP/n5"; rc=$?
check count_5 test "$rc" -eq 0 -a "$(wc -l <"$TMP/n5")" -eq 5
"$DISKMON" -r "$win8" -m 20 -f csv --no-header | tr -d '\r' >"$TMP/slow"
check min_latency test "$(awk -F, '$3 < 0.020' "$TMP/slow" | wc -l)" -eq 0 -a -s "$TMP/slow"
"$DISKMON" -r "$win8" -o "$TMP/o.txt" >"$TMP/stdout"; rc=$?
check output_file test "$rc" -eq 0 -a ! -s "$TMP/stdout" -a "$(wc -l <"$TMP/o.txt")" -eq 1232
"$DISKMON" -r "$win8" -c system --no-header >"$TMP/sys"
check comm_filter test -s "$TMP/sys" -a "$(awk '$9 != "System"' "$TMP/sys" | wc -l)" -eq 0

# Summary: on stderr, a row per disk and request with PerfView's counts.
"$DISKMON" -r "$win8" -s >/dev/null 2>"$TMP/sum"; rc=$?
check summary_exit_0 test "$rc" -eq 0
check summary_read_row grep -Eq '^0 +Read +1208 ' "$TMP/sum"
check summary_write_row grep -Eq '^0 +Write +21 ' "$TMP/sum"
check summary_no_loss grep -q "lost 0 (ring full 0, source 0)" "$TMP/sum"
# -t 1 of the Windows 8 trace, which has no I/O in its first second: the
# summary spans the 1 s of trace time asked for, not 0 s.
"$DISKMON" -r "$win8" -t 1 -s >/dev/null 2>"$TMP/sum1"; rc=$?
check summary_t1_span test "$rc" -eq 0 -a "$(grep -c '^0 events in 1.000 s;' "$TMP/sum1")" -eq 1
# -o onto a file that refuses writes: the message names it.
"$DISKMON" -r "$win8" -o /proc/version 2>"$TMP/err" >/dev/null; rc=$?
check output_error_names_file test "$rc" -eq 1 -a "$(grep -c 'cannot write output file /proc/version: ' "$TMP/err")" -eq 1
"$DISKMON" -r "$win8" --hist >/dev/null 2>"$TMP/hist"
check hist_drawn grep -q "usecs" "$TMP/hist"

# A reader that goes away: quiet end, exit 0, no message.
"$DISKMON" -r "$win8" 2>"$TMP/err" | head -n 2 >/dev/null
rc=${PIPESTATUS[0]}
check closed_pipe_quiet test "$rc" -eq 0 -a ! -s "$TMP/err"

# Corrupt input: cut the file in the middle of a buffer. The error names an
# offset, the exit code is 1, and events before the fault are printed.
size=$(wc -c <"$win8")
head -c $((size / 2 + 1000)) "$win8" >"$TMP/cut.etl"
"$DISKMON" -r "$TMP/cut.etl" --no-header >"$TMP/cut.out" 2>"$TMP/err"; rc=$?
check truncated_exit_1 test "$rc" -eq 1
check truncated_names_offset grep -q "offset" "$TMP/err"
check truncated_prints_earlier test -s "$TMP/cut.out"

# Flip bytes inside a compressed buffer (after the 512-byte header buffer
# and the next buffer's 72-byte header): never a crash, exit 0 or 1.
cp "$win8" "$TMP/flip.etl"
printf '\377\377\377\377\377\377\377\377' |
    dd of="$TMP/flip.etl" bs=1 seek=700 conv=notrunc status=none
"$DISKMON" -r "$TMP/flip.etl" >/dev/null 2>"$TMP/err"; rc=$?
check corrupt_no_crash test "$rc" -eq 0 -o "$rc" -eq 1 -o "$rc" -eq 3

[ "$fails" -eq 0 ]
