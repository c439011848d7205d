#!/usr/bin/env bash
# top.sh - diskmon --top on the real sample traces: every interval and group
# of --top 1 --by process|file|disk -f json recomputed by top_check.py from
# the per-event json (an independent reading of docs/output.md), the
# plain blocks and csv of a non-terminal, -t and -s beside --top, the bad
# usages of --top/--by, and the --top examples of the README and
# docs/output.md. Usage: top.sh PATH/TO/diskmon.
# Exit 0 pass, 1 fail, 77 skip.
set -u
DISKMON=${1:?usage: top.sh DISKMON}
HERE=$(cd "$(dirname "$0")" && pwd)
ETL=${DM_SHARED_ETL:-$HERE/../../../shared/etl}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SUITE=top
# shellcheck source=../lib/results.sh
. "$HERE/../lib/results.sh"

# --- bad usage: refused with exit 2, one line on stderr, nothing on stdout ---
for args in "--top 0" "--top abc" "--top -1" "--top 86401" "--top -n 5" \
    "--top 2 -n 5" "--by disk" "--top --by thread" "--top --by"; do
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

# --by file is for replay (and Windows live): not refused with -r. On Linux
# live it is a usage error, checked in linux_top.sh (this script also runs
# in a build without a live backend).
"$DISKMON" -r /nonexistent.etl --top --by file >/dev/null 2>&1; rc=$?
check by_file_replay_not_refused test "$rc" -eq 1

[ -f "$ETL/perfview-net452-x64-win8.etl" ] && [ -f "$ETL/filtrace-diskio-win11.etl" ] ||
    need replay "sample traces not found at $ETL (set DM_SHARED_ETL)"
command -v python3 >/dev/null || need python3 "python3 is not installed (tests/run.sh installs it)"

# --- json: every interval and group against the per-event json ---------------
top_case() { # name trace SEC BY [filter args...]
    local name=$1 etl=$2 sec=$3 by=$4
    shift 4
    "$DISKMON" -r "$etl" "$@" -f json >"$TMP/ev.json" &&
        "$DISKMON" -r "$etl" "$@" --top "$sec" --by "$by" -f json >"$TMP/top.json"; rc=$?
    if [ "$rc" -eq 0 ] && [ -s "$TMP/top.json" ] &&
        python3 "$HERE/../oracles/top_check.py" "$TMP/ev.json" "$TMP/top.json" "$sec" "$by" \
            >"$TMP/check"; then
        pass "$name ($(tail -n 1 "$TMP/check"))"
    else
        fail "$name" "rc=$rc $(cat "$TMP/check" 2>/dev/null | head -5)"
    fi
}

for trace in perfview-net452-x64-win8 filtrace-diskio-win11; do
    for by in process file disk; do
        top_case "${trace}_${by}_json" "$ETL/$trace.etl" 1 "$by"
    done
done
win8=$ETL/perfview-net452-x64-win8.etl
top_case win8_disk_quarter_second "$win8" 0.25 disk
top_case win8_process_filtered "$win8" 1 process -c system --op read,write
top_case win8_file_min_latency "$win8" 0.5 file -m 5

# The checker can fail: the 1 s rows are not what 0.5 s intervals give.
"$DISKMON" -r "$win8" -f json >"$TMP/ev.json"
"$DISKMON" -r "$win8" --top 1 --by disk -f json >"$TMP/top.json"
python3 "$HERE/../oracles/top_check.py" "$TMP/ev.json" "$TMP/top.json" 0.5 disk >/dev/null
check checker_catches_wrong_interval test $? -eq 1
intervals=$(wc -l <"$TMP/top.json")
check win8_has_intervals test "$intervals" -ge 5

# --- not a terminal: plain blocks, csv -----------------------------------------
"$DISKMON" -r "$win8" --top 1 --by disk >"$TMP/blocks" 2>"$TMP/err"; rc=$?
check blocks_exit_0 test "$rc" -eq 0
check blocks_no_escape_codes test "$(grep -c $'\033' "$TMP/blocks")" -eq 0
# One block per interval: a time line first, the titles, the disk's row, an
# empty line.
check blocks_one_per_interval test "$(grep -c ' lost$' "$TMP/blocks")" -eq "$intervals"
check blocks_time_line_first grep -Eq '^1\.000-2\.000 s: [0-9.]+ reads/s' <(head -n 1 "$TMP/blocks")
check blocks_titles test "$(sed -n 2p "$TMP/blocks" | tr -s ' ')" = \
    "Disk r/s w/s rMB/s wMB/s r_await w_await aqu-sz %util"
"$DISKMON" -r "$win8" --top 1 --by disk -f csv >"$TMP/top.csv"
check csv_header test "$(head -n 1 "$TMP/top.csv" | tr -d '\r')" = \
    "interval_start,interval_end,disk,reads,writes,flushes,read_bytes,write_bytes,avg_ms,max_ms,r_await_ms,w_await_ms,aqu_sz,util_pct"
# The csv rows carry the json's values in the same order.
python3 - "$TMP/top.csv" "$TMP/top.json" <<'PY' && pass csv_same_as_json || fail csv_same_as_json "differs"
import csv, json, sys
from decimal import Decimal
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
objs = [json.loads(l, parse_float=Decimal) for l in open(sys.argv[2])]
assert len(rows) == len(objs) > 0
for r, o in zip(rows, objs):
    for k, v in o.items():
        assert (Decimal(r[k]) if not isinstance(v, str) else r[k]) == v, (k, r[k], v)
PY
"$DISKMON" -r "$win8" --top 1 --by process -f csv --no-header >"$TMP/nohdr.csv"
check csv_no_header grep -q '^1\.000000000,' <(head -n 1 "$TMP/nohdr.csv")
# Text --top with --no-header: the interval lines and rows, no column titles.
"$DISKMON" -r "$win8" --top 1 --no-header >"$TMP/nohdr.txt"
check text_no_header test "$(grep -c 'Reads/s  Writes/s' "$TMP/nohdr.txt")" -eq 0 -a \
    "$(grep -c '^[0-9.]*-[0-9.]* s: ' "$TMP/nohdr.txt")" -gt 0
"$DISKMON" -r "$win8" --top 1 >"$TMP/hdr.txt"
check text_header_by_default test "$(grep -c 'Reads/s  Writes/s' "$TMP/hdr.txt")" -eq \
    "$(grep -c '^[0-9.]*-[0-9.]* s: ' "$TMP/hdr.txt")"

# -t: intervals of trace time up to SEC; -s still prints at exit.
"$DISKMON" -r "$win8" --top 1 --by disk -f json -t 3 -s >"$TMP/t3.json" 2>"$TMP/sum"; rc=$?
check duration_exit_0 test "$rc" -eq 0
check duration_last_interval test "$(tail -n 1 "$TMP/t3.json" | sed 's/.*"interval_end":\([0-9.]*\),.*/\1/')" = 3.000000000
check summary_beside_top grep -Eq '^0 +Read ' "$TMP/sum"
# -t inside an interval: the last interval ends at -t, and its rates are
# over that half second (the json's counts over 0.5 s).
"$DISKMON" -r "$win8" --top 1 --by disk -f json -t 2.5 >"$TMP/cut.json"
"$DISKMON" -r "$win8" --top 1 --by disk -t 2.5 >"$TMP/cut.txt"
cut_writes=$(tail -n 1 "$TMP/cut.json" | sed 's/.*"writes":\([0-9]*\),.*/\1/')
check cut_interval_end test "$(tail -n 1 "$TMP/cut.json" | sed 's/.*"interval_end":\([0-9.]*\),.*/\1/')" = 2.500000000
check cut_interval_rates grep -q "^2\.000-2\.500 s: .* $(awk -v w="$cut_writes" 'BEGIN { printf "%.1f", w / 0.5 }') writes/s" "$TMP/cut.txt"

# A last interval cut to under a tenth of SEC (-t 3.012: 3.000-3.012 s)
# shows its counts, not rates (one request in 12 ms is not 83 requests/s):
# the reads the per-event json has in [3, 3.012), and no "/s" in its block.
"$DISKMON" -r "$win8" -f json -t 3.012 >"$TMP/stub-ev.json"
"$DISKMON" -r "$win8" --top 1 -t 3.012 >"$TMP/stub.txt"
stub_reads=$(python3 -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) for e in [json.loads(l)]
          if e["time"] >= 3 and e["request"] == "Read"))' "$TMP/stub-ev.json")
awk '/^3\.000-3\.012 s: / { on = 1 } on' "$TMP/stub.txt" >"$TMP/stub.block"
check stub_interval_counts grep -q "^3\.000-3\.012 s: $stub_reads reads, .*(the last 0\.012 s" "$TMP/stub.block"
check stub_interval_no_rates test "$stub_reads" -gt 0 -a -s "$TMP/stub.block" -a \
    "$(grep -c '/s' "$TMP/stub.block")" -eq 0

# The --top examples of the README's tour and of docs/output.md are this
# build's real output: each "$ diskmon -r perfview-net452-x64-win8.etl --top
# ..." block is run again and compared line for line.
n=0
for doc in README.md docs/output.md; do
    while IFS= read -r cmdline; do
        n=$((n + 1))
        awk -v c="$cmdline" '$0 == c { on = 1; next } on && /^```/ { exit } on' \
            "$HERE/../../$doc" >"$TMP/readme.$n"
        cmd=${cmdline#\$ diskmon }
        cmd=${cmd//perfview-net452-x64-win8.etl/\"\$win8\"}
        win8=$win8 DISKMON=$DISKMON bash -c "\"\$DISKMON\" $cmd" >"$TMP/real.$n" 2>/dev/null
        if [ -s "$TMP/readme.$n" ] && cmp -s "$TMP/readme.$n" "$TMP/real.$n"; then
            pass "readme_example_$n"
        else
            fail "readme_example_$n" "$doc '$cmdline': $(diff "$TMP/readme.$n" "$TMP/real.$n" | head -4)"
        fi
    done < <(grep '^\$ diskmon -r perfview-net452-x64-win8.etl --top' "$HERE/../../$doc")
done
check readme_examples_found test "$n" -ge 5

[ "$fails" -eq 0 ] || exit 1
exit 0
