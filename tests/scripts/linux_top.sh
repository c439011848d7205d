#!/bin/bash
# linux_top.sh DISKMON DM_DIO - diskmon --top, live on Linux.
#
# 1. On a loop device, two helper processes (copies of dm_dio named
#    dm_top_reader and dm_top_writer) issue known numbers of O_DIRECT reads
#    and writes, a second apart; `--top 1 -f json` must show both, with
#    their pids and names, and exactly those counts and bytes summed over
#    the intervals.
# 2. The terminal view under tmux: after three intervals capture-pane shows
#    one header and a redrawn screen, the scroll-back stays empty (no screen
#    per interval), the cursor is hidden while drawing and visible again
#    after Ctrl+C, and the last screen stays on the terminal.
# 3. -t 2.5 with --top 1 on a quiet disk: the empty intervals are drawn,
#    and the last one is cut where the run stopped (2-2.5, not 2-3).
# 4. In that run (-d LOOP), the Cache-W figure, which is the whole
#    machine's, is said to be so under each time line and in a note.
# Needs root (loop devices, tracefs/perf); otherwise prints "SKIP: why" and
# exits 77, except under CI=true, where that is a failure.
set -u

DISKMON=${1:?usage: linux_top.sh DISKMON DM_DIO}
DM_DIO=${2:?usage: linux_top.sh DISKMON DM_DIO}

# shellcheck source=../lib/loop_common.sh
. "$(dirname "$0")/../lib/loop_common.sh"

# --by file: Linux block events carry no file names, so it is refused before
# anything opens (exit 2, one line saying why), root or not.
"$DISKMON" --top --by file >/dev/null 2>"${TMPDIR:-/tmp}/dm_top_by_file.$$"; rc=$?
why=$(cat "${TMPDIR:-/tmp}/dm_top_by_file.$$"); rm -f "${TMPDIR:-/tmp}/dm_top_by_file.$$"
[ "$rc" = 2 ] && [ "$(printf '%s\n' "$why" | wc -l)" = 1 ] && grep -q -- '--by file' <<<"$why" ||
    fail "--by file on Linux live: exit $rc, stderr: $why"
echo "ok: --by file refused on Linux live: $why"

make_loop 64M top

TMUX_SOCK="diskmon_top_$$"
# tmux 3.3 leaves its socket file behind after kill-server: remove it too.
TMUX_SOCK_PATH="${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$TMUX_SOCK"
tmux_cleanup() {
    command -v tmux >/dev/null && tmux -L "$TMUX_SOCK" kill-server 2>/dev/null
    rm -f "$TMUX_SOCK_PATH"
    loop_cleanup
}
trap tmux_cleanup EXIT

# Two helpers with names of their own (the kernel's comm is the file name).
cp "$DM_DIO" "$work/dm_top_reader" && cp "$DM_DIO" "$work/dm_top_writer" ||
    fail "cannot copy $DM_DIO"

# reader: 6 reads of 4 KiB and 1 write of 8 KiB; writer: 5 writes of 16 KiB
# and 2 reads of 4 KiB. Distinct offsets, one request each (O_DIRECT).
reader_ops=(r:0:4096 r:65536:4096 r:131072:4096 r:196608:4096 r:262144:4096
            r:327680:4096 w:4194304:8192)
writer_ops=(w:8388608:16384 w:8454144:16384 w:8519680:16384 w:8585216:16384
            w:8650752:16384 r:12582912:4096 r:12648448:4096)

# --- 1. json: both processes, exact counts over the intervals -----------------
out=$work/top.json err=$work/top.err
"$DISKMON" --top 1 -f json -d "$name" -o "$out" 2>"$err" &
dm=$!
bg="$bg $dm"
wait_started "$dm" "$err" test -e "$out"
sleep 0.5
"$work/dm_top_reader" "$loop" "${reader_ops[@]}" >"$work/reader.out" || fail "reader failed"
sleep 1.2
"$work/dm_top_writer" "$loop" "${writer_ops[@]}" >"$work/writer.out" || fail "writer failed"
sleep 1.5
interrupt "$dm"
[ "$rc" = 0 ] || fail "diskmon --top exit code $rc after SIGINT: $(cat "$err")"
reader_pid=$(awk '/^pid / { print $2 }' "$work/reader.out")
writer_pid=$(awk '/^pid / { print $2 }' "$work/writer.out")

python3 - "$out" "$reader_pid" "$writer_pid" <<'PY' || fail "json rows: see above"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
want = {int(sys.argv[2]): ("dm_top_reader", 6, 1, 6 * 4096, 8192),
        int(sys.argv[3]): ("dm_top_writer", 2, 5, 2 * 4096, 5 * 16384)}
sums, names, intervals = {}, {}, set()
for r in rows:
    assert list(r)[:4] == ["interval_start", "interval_end", "pid", "process"], list(r)
    if r["pid"] in want:
        s = sums.setdefault(r["pid"], [0, 0, 0, 0])
        for i, k in enumerate(("reads", "writes", "read_bytes", "write_bytes")):
            s[i] += r[k]
        names.setdefault(r["pid"], set()).add(r["process"])
        intervals.add(r["interval_start"])
ok = True
for pid, (name, reads, writes, rb, wb) in want.items():
    got = sums.get(pid)
    if got != [reads, writes, rb, wb] or names.get(pid) != {name}:
        print(f"pid {pid}: {got} named {names.get(pid)}, want "
              f"{[reads, writes, rb, wb]} named {name}")
        ok = False
# A second apart: the two helpers' I/O is in at least two intervals.
if len(intervals) < 2:
    print(f"the helpers' I/O is in {len(intervals)} interval(s), want 2 or more")
    ok = False
print(f"ok: json: reader and writer summed over {len(intervals)} intervals")
sys.exit(0 if ok else 1)
PY
echo "ok: live json: pids $reader_pid and $writer_pid with their names and exact counts"

# --- 2. the terminal view under tmux ---------------------------------------------
if ! command -v tmux >/dev/null; then
    skip "tmux is not installed (tests/run.sh installs it; apt-get install tmux)"
fi
t() { tmux -L "$TMUX_SOCK" "$@"; }
rows=24
# bash stays after diskmon (it ignores the Ctrl+C its child handled), so the
# terminal is read while the pane is alive: tmux 3.3 may mark a dead pane
# before it has parsed the last bytes written to it.
t -f /dev/null new-session -d -x 120 -y "$rows" -s top \
    "bash -c \"'$DISKMON' --top 1 -d '$name' 2>'$work/tmux.err'; echo \\\$? >'$work/tmux.rc'; sleep 600\"" ||
    fail "tmux new-session failed"
# Some I/O to draw while three intervals pass (each drawn 0.3 s after its end).
sleep 1
"$work/dm_top_reader" "$loop" "${reader_ops[@]}" >/dev/null || fail "reader failed"
sleep 3
screen=$(t capture-pane -p -t top)
history=$(t display-message -p -t top '#{history_size}')
cursor=$(t display-message -p -t top '#{cursor_flag}')
echo "$screen" | head -n 5
headers=$(grep -c ' lost$' <<<"$screen")
titles=$(grep -c '^ *PID Process' <<<"$screen")
[ "$headers" = 1 ] && [ "$titles" = 1 ] ||
    fail "the screen shows $headers time lines and $titles title lines, want 1 each"
first=$(head -n 1 <<<"$screen" | cut -d- -f1)
# Three intervals have passed: the screen shows interval 2 or later.
python3 -c "import sys; sys.exit(0 if float('$first') >= 2 else 1)" ||
    fail "the screen was not redrawn: it still shows $first s"
[ "$history" = 0 ] || fail "the scroll-back grew by $history lines"
[ "$cursor" = 0 ] || fail "the cursor is visible while --top draws (cursor_flag $cursor)"
echo "ok: tmux: one header, redrawn in place (interval from ${first} s), no scroll-back"

t send-keys -t top C-c
for _ in $(seq 200); do
    [ -s "$work/tmux.rc" ] && break
    sleep 0.05
done
[ -s "$work/tmux.rc" ] || fail "diskmon did not stop within 10 s of Ctrl+C"
sleep 0.3 # let tmux parse the last bytes diskmon wrote
status=$(cat "$work/tmux.rc")
cursor=$(t display-message -p -t top '#{cursor_flag}')
after=$(t capture-pane -p -t top)
[ "$status" = 0 ] || fail "diskmon exit code $status after Ctrl+C: $(cat "$work/tmux.err")"
[ "$cursor" = 1 ] || fail "the cursor is hidden after Ctrl+C"
# The time line, found by its start: a Ctrl+C within a tenth of an interval
# after its start ends the run on a short interval, whose time line gives
# counts and says so after "lost" (docs/output.md), and is wider than the pane.
grep -qE '^[0-9]+\.[0-9]{3}-[0-9]+\.[0-9]{3} s: ' <<<"$after" || fail "the last screen is gone after Ctrl+C"
echo "ok: tmux: after Ctrl+C the cursor is visible and the last screen stays"

# 3. A run that stops inside an interval, on a quiet disk: -t 2.5 with
# --top 1 draws 0-1 and 1-2 (empty, as every live interval is) and then the
# cut-short 2-2.5, labelled with where it stopped, not 2-3.
"$DISKMON" -d "$name" --top 1 -t 2.5 >"$work/cut.txt" 2>"$work/cut.err" ||
    fail "--top 1 -t 2.5: exit $?: $(cat "$work/cut.err")"
labels=$(grep -o '^[0-9.]*-[0-9.]* s:' "$work/cut.txt" | tr '\n' ' ')
last=$(grep -o '^[0-9.]*-[0-9.]* s:' "$work/cut.txt" | tail -n 1)
end=${last#*-}
end=${end% s:}
case $labels in
"0.000-1.000 s: 1.000-2.000 s: 2.000-"*) ;;
*) fail "--top 1 -t 2.5 drew: $labels" ;;
esac
awk -v e="$end" 'BEGIN { exit !(e > 2.0 && e < 3.0) }' ||
    fail "--top 1 -t 2.5: the last interval ends at $end, want between 2 and 3 (cut where the run stopped)"
echo "ok: a cut-short last interval is drawn and labelled: $labels"

# 4. The same run filtered to the loop device (-d): Cache-W (when the kernel
# has task I/O accounting) still counts every process on the machine, as a
# page-cache write has no disk; a line under each time line and a note on
# stderr say so.
if [ -r /proc/self/io ]; then
    lines=$(grep -c '^[0-9.]*-[0-9.]* s: .* cached' "$work/cut.txt")
    whole=$(grep -A1 '^[0-9.]*-[0-9.]* s: .* cached' "$work/cut.txt" |
        grep -c '^Cache-W: every process on this machine (the filters pick block requests)$')
    [ "$lines" -ge 3 ] && [ "$whole" = "$lines" ] ||
        fail "-d $name: $whole of $lines time lines say Cache-W is the whole machine's: $(head -n 2 "$work/cut.txt")"
    grep -q "note: --top's Cache-W column counts every process on this machine" "$work/cut.err" ||
        fail "-d $name: no note that Cache-W is the whole machine's: $(cat "$work/cut.err")"
    echo "ok: under -d, Cache-W is said to be the whole machine's ($lines time lines and a note)"
else
    echo "ok: no /proc/self/io (no task I/O accounting): no Cache-W column to label"
fi
exit 0
