#!/usr/bin/env bash
# findings.sh - one case per finding of a newcomer's review of the CLI,
# each asserting the exit code AND the exact one-line message. Counts are
# worked out from the reference CSV decodings (../shared/etl/reference) with
# awk, never from diskmon's own output. The traces are copied into a
# temporary directory when a case writes next to them; nothing is written
# into the project or into ../shared.
# Usage: findings.sh PATH/TO/diskmon. Exit 0 pass, 1 fail, 77 skip.
set -u
DISKMON=$(realpath "${1:?usage: findings.sh DISKMON}")
HERE=$(cd "$(dirname "$0")" && pwd)
ETL=${DM_SHARED_ETL:-$HERE/../../../shared/etl}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SUITE=findings
# shellcheck source=../lib/results.sh
. "$HERE/../lib/results.sh"

# expect NAME RC MESSAGE -- ARGS...: diskmon ARGS exits RC and writes exactly
# MESSAGE (one line) on stderr.
expect() {
    local name=$1 want_rc=$2 want_msg=$3 rc got
    shift 4
    "$DISKMON" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?
    got=$(cat "$TMP/err")
    if [ "$rc" -eq "$want_rc" ] && [ "$got" = "$want_msg" ] &&
        [ "$(wc -l <"$TMP/err")" -eq 1 ]; then
        pass "$name"
    else
        fail "$name" "rc=$rc (want $want_rc) stderr=[$got] want=[$want_msg]"
    fi
}

# --- command-line findings (no trace needed) -----------------------------------
expect dotetl_argument_hint 2 \
    "diskmon: unexpected argument 'trace.etl': did you mean -r trace.etl? (see diskmon --help)" \
    -- trace.etl
expect empty_replay_name 2 "diskmon: empty file name for -r (see diskmon --help)" -- -r ''
expect empty_output_name 2 "diskmon: empty file name for -o (see diskmon --help)" -- -o ''
expect empty_comm_name 2 "diskmon: empty process name in -c (see diskmon --help)" -- -c ''
expect comm_list_empty_piece 2 "diskmon: empty process name in -c (see diskmon --help)" -- -c a,,b
expect pid_list_bad_piece 2 "diskmon: bad process id 'x' for -p (see diskmon --help)" -- -p 4,x
expect double_dash_then_option 2 "diskmon: unexpected argument '-n' (see diskmon --help)" -- -- -n
expect format_unknown 2 \
    "diskmon: unknown format 'xml' for -f (text, csv or json) (see diskmon --help)" -- -f xml

case "$(uname -s)" in
Linux)
    expect force_on_linux 2 \
        "diskmon: --force is for Windows (it stops a running NT Kernel Logger session); Linux live capture has no such session to take over" \
        -- --force
    ;;
*) echo "SKIP findings/force_on_linux: not Linux" ;;
esac

# Input files that are not traces: one line each, exit 1 (docs/options.md "Exit codes").
mkdir "$TMP/dir.etl"
expect replay_directory 1 "diskmon: $TMP/dir.etl: is a directory, not a trace or capture file" \
    -- -r "$TMP/dir.etl"
: >"$TMP/empty.etl"
# An empty input is no format diskmon reads: exit 2, the formats named
# (docs/replay.md).
formats="etl (Windows event traces (.etl)), json (diskmon -f json lines), csv (diskmon -f csv), systor (SYSTOR '17 block traces), msr (MSR Cambridge block traces), tencent (Tencent CBS block traces)"
expect replay_empty_file 2 \
    "diskmon: $TMP/empty.etl: it is empty; diskmon reads $formats (--input-format NAME picks one)" \
    -- -r "$TMP/empty.etl"
# A named pipe is read as it comes, as -r - is (docs/replay.md): a json row
# written into it comes out.
mkfifo "$TMP/fifo.etl"
# (The writer gives up after 10 s: a diskmon that never opens the pipe
# fails the case instead of hanging the suite.)
timeout 10 bash -c 'printf "%s\n" "$1" >"$2"' _ \
    '{"seq":1,"time":0.5,"duration_ms":1.000000,"disk":0,"request":"Read","offset":0,"bytes":512,"flags":""}' \
    "$TMP/fifo.etl" &
"$DISKMON" -r "$TMP/fifo.etl" -f csv --no-header >"$TMP/out" 2>"$TMP/err"; rc=$?
wait
if [ "$rc" -eq 0 ] && [ "$(cat "$TMP/out")" = "$(printf '1,0.500000000,0.001000000,0,Read,0,1,,,,,0,512,,,,\r')" ]; then
    pass replay_named_pipe_streams
else
    fail replay_named_pipe_streams "rc=$rc out=[$(cat "$TMP/out")] err=[$(cat "$TMP/err")]"
fi
expect replay_missing 1 \
    "diskmon: $TMP/none.etl: cannot open: No such file or directory (check the path and permissions)" \
    -- -r "$TMP/none.etl"

# An existing -o file is left intact when the input cannot be opened.
printf 'precious\n' >"$TMP/keep.txt"
expect output_kept_when_input_fails 1 \
    "diskmon: $TMP/none.etl: cannot open: No such file or directory (check the path and permissions)" \
    -- -r "$TMP/none.etl" -o "$TMP/keep.txt"
if [ "$(cat "$TMP/keep.txt")" = precious ]; then
    pass output_kept_intact
else
    fail output_kept_intact "keep.txt now holds: $(head -c 80 "$TMP/keep.txt")"
fi

# --- findings on the sample traces ----------------------------------------------
# The expected figures come from the reference decodings: a folder with the
# traces alone (DM_SHARED_ETL) cannot check them.
[ -f "$ETL/perfview-net452-x64-win8.etl" ] && [ -f "$ETL/reference/perfview-net452-x64-win8.diskio.csv" ] &&
    [ -f "$ETL/reference/filtrace-diskio-win11.diskio.csv" ] ||
    need traces "sample traces with their reference/ decodings not found at $ETL (set DM_SHARED_ETL)"
win8=$ETL/perfview-net452-x64-win8.etl
win11=$ETL/filtrace-diskio-win11.etl
ref8=$ETL/reference/perfview-net452-x64-win8.diskio.csv
ref11=$ETL/reference/filtrace-diskio-win11.diskio.csv

# -o onto the input trace, in every spelling: refused, trace byte for byte
# unchanged. The trace is a copy in $TMP.
cp "$win11" "$TMP/copy.etl"
ln "$TMP/copy.etl" "$TMP/hard.etl"
ln -s copy.etl "$TMP/sym.etl"
for spelling in "same copy.etl copy.etl" "dot_slash copy.etl ./copy.etl" \
    "other_path ./copy.etl ../${TMP##*/}/copy.etl" "hard_link copy.etl hard.etl" \
    "symlink_in sym.etl copy.etl" "symlink_out copy.etl sym.etl"; do
    set -- $spelling
    name="output_is_input_$1"
    shift
    (cd "$TMP" && "$DISKMON" -r "$1" -o "$2" -n 3 >out 2>err); rc=$?
    want="diskmon: $2 is the input trace $1: not overwriting it (write the output to another file)"
    if [ "$rc" -eq 2 ] && [ "$(cat "$TMP/err")" = "$want" ] && cmp -s "$win11" "$TMP/copy.etl"; then
        pass "$name"
    else
        fail "$name" "rc=$rc stderr=[$(cat "$TMP/err")] unchanged=$(cmp -s "$win11" "$TMP/copy.etl" && echo yes || echo NO)"
    fi
done
# Appending standard output to the trace is refused the same way.
(cd "$TMP" && "$DISKMON" -r copy.etl >>copy.etl 2>err); rc=$?
want="diskmon: standard output is the input trace copy.etl: not overwriting it (write the output to another file)"
if [ "$rc" -eq 2 ] && [ "$(cat "$TMP/err")" = "$want" ] && cmp -s "$win11" "$TMP/copy.etl"; then
    pass output_is_input_stdout_append
else
    fail output_is_input_stdout_append "rc=$rc stderr=[$(cat "$TMP/err")]"
fi

# Completions (Read 10, Write 11, FlushBuffers 14) per request and disk, from
# the reference CSV.
ref_count() { # csv, awk condition on $5 (opcode) and $9 (disk)
    awk -F, "NR > 1 && (\$5 == 10 || \$5 == 11 || \$5 == 14) && ($2)" "$1" | wc -l
}
# Events diskmon prints (no header).
dm_count() {
    "$DISKMON" "$@" --no-header 2>/dev/null | wc -l
}
check_count() { # name, want, got
    if [ "$2" -eq "$3" ] && [ "$2" -gt 0 ]; then pass "$1"; else fail "$1" "want $2, got $3"; fi
}

# --op: repeated and comma lists are the same union.
want=$(ref_count "$ref8" '$5 == 10 || $5 == 14')
check_count op_repeat_union "$want" "$(dm_count -r "$win8" --op read --op flush)"
check_count op_list_union "$want" "$(dm_count -r "$win8" --op Read,FLUSH)"

# -d: the Windows 11 trace has disks 6 and 9.
want=$(ref_count "$ref11" '$9 == 6 || $9 == 9')
check_count disk_repeat_union "$want" "$(dm_count -r "$win11" -d 6 -d 9)"
check_count disk_list_union "$want" "$(dm_count -r "$win11" -d 6,9)"
check_count disk_single "$(ref_count "$ref11" '$9 == 9')" "$(dm_count -r "$win11" -d 9)"

# -p: the reference names no process per completion, but the Init records'
# headers name thread and process; a completion's IssuingThreadId gives its
# process. Pids 3676, 980 and 712 issue only from threads seen there.
pid_count() { # csv, pid...
    local csv=$1; shift
    awk -F, -v want=" $* " 'NR > 1 && $7 != "" { pid[$7] = $8 }
        NR > 1 && ($5 == 10 || $5 == 11 || $5 == 14) && ($17 in pid) &&
            index(want, " " pid[$17] " ") { n++ }
        END { print n + 0 }' "$csv"
}
want=$(pid_count "$ref8" 3676 980 712)
check_count pid_list_union "$want" "$(dm_count -r "$win8" -p 3676,980,712)"
check_count pid_repeat_union "$want" "$(dm_count -r "$win8" -p 3676 -p 980 --pid 712)"
check_count pid_single "$(pid_count "$ref8" 980)" "$(dm_count -r "$win8" -p 980)"

# -c: the union of two names is the sum of each, repeated or listed (the
# finding: "-c msmpeng,system silently matches nothing").
a=$(dm_count -r "$win8" -c svchost)
b=$(dm_count -r "$win8" -c system)
check_count comm_list_union "$((a + b))" "$(dm_count -r "$win8" -c svchost,system)"
check_count comm_repeat_union "$((a + b))" "$(dm_count -r "$win8" -c SVCHOST -c System)"
# And -c system is pid 4 (the System process is pid 4 on Windows).
check_count comm_system_is_pid_4 "$(dm_count -r "$win8" -p 4)" "$b"

# Enumerated values in any case: -f JSON is -f json.
"$DISKMON" -r "$win11" -f JSON >"$TMP/J" 2>"$TMP/err"; rc=$?
"$DISKMON" -r "$win11" -f json >"$TMP/j"
if [ "$rc" -eq 0 ] && [ ! -s "$TMP/err" ] && [ -s "$TMP/j" ] && cmp -s "$TMP/J" "$TMP/j"; then
    pass format_any_case
else
    fail format_any_case "rc=$rc"
fi
# -- ends the options.
"$DISKMON" -r "$win11" -n 1 --no-header -- >"$TMP/out" 2>"$TMP/err"; rc=$?
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$TMP/out")" -eq 1 ] && [ ! -s "$TMP/err" ]; then
    pass double_dash_accepted
else
    fail double_dash_accepted "rc=$rc stderr=$(cat "$TMP/err")"
fi

# Replay: a -d entry that matches no disk of the finished trace is the usage
# mistake live refuses at the start (exit 2, as a Linux -d of a disk that
# does not exist), said with the trace's disks (from the reference CSV, in
# order of first appearance in time); the entries that match still print.
trace_disks() { # reference csv
    awk -F, 'NR > 1 && ($5 == 10 || $5 == 11 || $5 == 14) { print $6, $9 }' "$1" |
        sort -n -k1,1 | awk '!seen[$2]++ { printf "%s%s", sep, $2; sep = ", " }'
}
disks=$(trace_disks "$ref11")
expect disk_matches_nothing 2 \
    "diskmon: -d sda, 99 matched no disk in $win11; its disks are: $disks" \
    -- -r "$win11" -d sda,6 -d 99
if [ "$(wc -l <"$TMP/out")" -eq "$(($(ref_count "$ref11" '$9 == 6') + 1))" ]; then
    pass disk_matches_nothing_still_prints_disk_6
else
    fail disk_matches_nothing_still_prints_disk_6 "$(wc -l <"$TMP/out") lines"
fi
# The newcomer's case: a disk number the trace does not have, alone. Only
# the header line comes out, and exit 2 as live would give.
disks=$(trace_disks "$ref8")
case $disks in *,*) are="disks are" ;; *) are="disk is" ;; esac
expect disk_absent_from_trace 2 "diskmon: -d 5 matched no disk in $win8; its $are: $disks" \
    -- -r "$win8" -d 5
if [ "$(wc -l <"$TMP/out")" -eq 1 ]; then
    pass disk_absent_from_trace_header_only
else
    fail disk_absent_from_trace_header_only "$(wc -l <"$TMP/out") lines"
fi

# The summary rounds like the text. The Windows 8 trace's two flushes took
# HighResResponseTime ticks of 100 ns (PerfFreq 10 MHz) each: p50 is the
# shorter (nearest rank 1 of 2), max the longer; the text shows seconds
# rounded to the microsecond, the summary the same microseconds as ms.
read -r f1 f2 < <(awk -F, 'NR > 1 && $5 == 14 { print $16 }' "$ref8" | sort -n | tr '\n' ' ')
ms() { awk -v t="$1" 'BEGIN { us = int((t * 100 + 500) / 1000); printf "%d.%03d", us / 1000, us % 1000 }'; }
secs() { awk -v t="$1" 'BEGIN { us = int((t * 100 + 500) / 1000); printf "%d.%06d", us / 1000000, us % 1000000 }'; }
"$DISKMON" -r "$win8" --op flush -s >"$TMP/flush.txt" 2>"$TMP/sum"; rc=$?
row=$(grep -E '^0 +Flush ' "$TMP/sum")
set -- $row
if [ "$rc" -eq 0 ] && [ "$7" = "$(ms "$f1")" ] && [ "${10}" = "$(ms "$f2")" ] &&
    awk 'NR > 1 { print $3 }' "$TMP/flush.txt" | grep -qx "$(secs "$f1")"; then
    pass summary_rounds_like_text
else
    fail summary_rounds_like_text "row=[$row] want p50 $(ms "$f1") max $(ms "$f2"); text=$(awk 'NR > 1 { print $3 }' "$TMP/flush.txt" | tr '\n' ' ')"
fi

# Ctrl+C while the output pipe is blocked: the summary still comes (stderr
# is not the blocked stream) with a line saying how many events were never
# printed. The reader takes the first 16 KiB (so events are being printed),
# then stops reading; SIGINT is sent once diskmon's written byte count
# (/proc/PID/io wchar) has stopped growing for half a second. The text of
# this trace is ~185 KB, more than a pipe holds (64 KiB), so by then the
# printer is stuck in a write, however slow the build (sanitizers). The
# reader drains the pipe only after diskmon has exited.
total=$(ref_count "$ref8" 1)
("$DISKMON" -r "$win8" -s 2>"$TMP/int.err" & pid=$!
 for _ in $(seq 600); do [ -e "$TMP/int.read" ] && break; sleep 0.1; done
 last=-1 same=0
 for _ in $(seq 300); do
     w=$(sed -n 's/^wchar: //p' "/proc/$pid/io" 2>/dev/null)
     if [ "${w:-0}" = "$last" ]; then same=$((same + 1)); else same=0; fi
     last=${w:-0}
     [ "$same" -ge 5 ] && break
     sleep 0.1
 done
 kill -INT "$pid"; wait "$pid"; echo "$?" >"$TMP/int.rc.tmp"; mv "$TMP/int.rc.tmp" "$TMP/int.rc") |
    (head -c 16384 >/dev/null; touch "$TMP/int.read"
     while [ ! -e "$TMP/int.rc" ]; do sleep 0.1; done; cat >/dev/null)
rc=$(cat "$TMP/int.rc")
if [ "$rc" -eq 0 ] && grep -Eq '^0 +Read +[0-9]+ ' "$TMP/int.err" &&
    grep -Eq "^diskmon: the output was blocked: [0-9]+ of [0-9]+ events decoded were never printed\$" "$TMP/int.err"; then
    pass summary_after_ctrl_c_blocked_pipe
else
    fail summary_after_ctrl_c_blocked_pipe "rc=$rc stderr=$(cat "$TMP/int.err")"
fi
# The numbers add up: printed (the summary's event count) + never printed =
# decoded, and no more were decoded than the trace holds (reference CSV).
printed=$(sed -n 's/^\([0-9]*\) events in .*/\1/p' "$TMP/int.err")
never=$(sed -n 's/^diskmon: the output was blocked: \([0-9]*\) of .*/\1/p' "$TMP/int.err")
decoded=$(sed -n 's/^diskmon: the output was blocked: [0-9]* of \([0-9]*\) .*/\1/p' "$TMP/int.err")
if [ -n "$printed" ] && [ -n "$never" ] && [ -n "$decoded" ] &&
    [ "$((printed + never))" -eq "$decoded" ] && [ "$decoded" -le "$total" ] &&
    [ "$never" -gt 0 ] && [ "$printed" -gt 0 ]; then
    pass blocked_counts_add_up
else
    fail blocked_counts_add_up "printed=$printed never=$never decoded=$decoded total=$total"
fi

[ "$fails" -eq 0 ]
