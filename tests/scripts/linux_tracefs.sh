#!/bin/bash
# linux_tracefs.sh DISKMON DM_DIO - the tracefs instance backend, end to end.
#
#   1. The disk of / (vda here): `diskmon -d DISK` while dm_dio writes
#      8 MiB with O_DIRECT to a file on /: Write lines on that disk from
#      dm_dio's pid and name add up to at least 8 MiB; exit 0 after SIGINT;
#      nothing lost; no note about completions that never came. Skipped,
#      with the reason, when the disk of / cannot be determined.
#   2. No leftovers: the instance instances/diskmon-PID exists while
#      diskmon runs and is gone (with its lifetime instance,
#      diskmon-PID-tasks) after every way of ending: -n, -t, SIGINT,
#      SIGTERM, SIGHUP, a closed pipe, and an error after it was made
#      (output to /dev/full; strace sees the instance made and removed).
#   3. A text run makes no lifetime instance (its lines carry no cgroup, so
#      none is followed); a -f csv run does. After SIGKILL of it the
#      instance stays; the next diskmon removes it (and its lifetime
#      instance) with a note; `diskmon --cleanup` removes one and exits 0 without capturing.
#   4. Two diskmons at once on a loop device both see every request.
#   5. When no instance can be made (tracefs read-only, in a private mount
#      namespace), diskmon uses perf and says so in one note.
#   6. A `perf record` of block_io_start beside diskmon sees every request
#      too, and the top-level tracing settings are the same afterwards.
# Needs root and tracefs: otherwise "SKIP: why" and exit 77 (a failure
# under CI=true).
set -u

DISKMON=${1:?usage: linux_tracefs.sh DISKMON DM_DIO}
DM_DIO=${2:?usage: linux_tracefs.sh DISKMON DM_DIO}

# shellcheck source=../lib/loop_common.sh
. "$(dirname "$0")/../lib/loop_common.sh"
command -v strace >/dev/null || skip "strace is not installed (apt-get install strace)"
make_loop 64M tracefs

T=/sys/kernel/tracing
[ -d "$T/instances" ] || T=/sys/kernel/debug/tracing
# diskmon mounts tracefs itself when it is missing; one short run does it.
"$DISKMON" -t 0.2 >/dev/null 2>&1
[ -d "$T/instances" ] || skip "no tracefs instances directory"

# wait_instance PID: until instances/diskmon-PID exists (10 s at most).
wait_instance() {
    for _ in $(seq 200); do
        [ -d "$T/instances/diskmon-$1" ] && return 0
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

no_instance() { # PID WHAT: neither the block instance nor its lifetime one
    for i in "diskmon-$1" "diskmon-$1-tasks"; do
        [ -d "$T/instances/$i" ] && fail "$2: instance $i left behind"
    done
    return 0
}

# A stream of I/O on the loop device so that -n and the pipe see lines.
io_loop() {
    ( while :; do "$DM_DIO" "$loop" r:0:4096 r:8192:4096 >/dev/null || exit; sleep 0.02; done ) &
    iopid=$!
    bg="$bg $iopid"
}

# --- 1. the disk of / --------------------------------------------------------
root_disk() {
    local src parent
    src=$(findmnt -n -o SOURCE / 2>/dev/null) || return 1
    case $src in /dev/*) ;; *) return 1 ;; esac
    [ -b "$src" ] || return 1
    parent=$(lsblk -no PKNAME "$src" 2>/dev/null | head -n 1)
    if [ -n "$parent" ]; then echo "$parent"; else basename "$src"; fi
}

rootcase() {
    local disk file=/root/.diskmon_test_$$ out=$work/root.csv err=$work/root.err
    # Skipped alone (the other cases still run), with the reason.
    disk=$(root_disk) || { echo "skipped: the disk of / cannot be determined ($(findmnt -n -o SOURCE / 2>&1))"; return 0; }
    [ -e "/sys/block/$disk" ] || { echo "skipped: / is on $disk, not a whole disk in /sys/block"; return 0; }
    fallocate -l 8M "$file" 2>/dev/null || dd if=/dev/zero of="$file" bs=1M count=8 status=none ||
        fail "cannot make $file"
    sync "$file"
    "$DISKMON" -d "$disk" -f csv -o "$out" -s 2>"$err" &
    dm=$!
    bg="$bg $dm"
    wait_instance "$dm" || { rm -f "$file"; fail "diskmon -d $disk did not start: $(cat "$err")"; }
    sleep 0.3
    local ops=() i
    for i in $(seq 0 7); do ops+=("w:$((i * 1048576)):1048576"); done
    "$DM_DIO" "$file" "${ops[@]}" >"$work/root.dio" || { rm -f "$file"; fail "dm_dio on $file failed"; }
    rm -f "$file"
    sleep 0.5
    interrupt "$dm"
    [ "$rc" = 0 ] || fail "-d $disk: exit code $rc after SIGINT: $(cat "$err")"
    local pid bytes lines
    pid=$(awk '/^pid / { print $2 }' "$work/root.dio")
    # csv: seq,time,duration,disk,request,sector,length,pid,tid,process,...
    read -r lines bytes < <(tr -d '\r' <"$out" | awk -F, -v d="$disk" -v p="$pid" '
        $4 == d && $5 == "Write" && $8 == p && $10 == "dm_dio" { n++; b += $13 }
        END { print n + 0, b + 0 }')
    [ "$bytes" -ge 8388608 ] ||
        fail "-d $disk: dm_dio's Write lines add up to $bytes bytes ($lines lines), want >= 8 MiB"
    grep -q "lost 0 (" "$err" || fail "-d $disk: something was lost: $(cat "$err")"
    grep -qi "never showed a completion\|never delivered" "$err" &&
        fail "-d $disk: a note about undelivered completions: $(cat "$err")"
    echo "ok: -d $disk: $lines Write lines from dm_dio (pid $pid), $bytes bytes, nothing lost"
}
rootcase

# --- 2. every way of ending removes the instance -----------------------------
io_loop
end_case() { # WHAT SIGNAL-or-empty ARGS...
    local what=$1 sig=$2
    shift 2
    "$DISKMON" -d "$name" "$@" >/dev/null 2>"$work/end.err" &
    dm=$!
    wait_instance "$dm" || fail "$what: no instance appeared: $(cat "$work/end.err")"
    if [ -n "$sig" ]; then
        sleep 0.2
        kill "-$sig" "$dm"
    fi
    for _ in $(seq 200); do kill -0 "$dm" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$dm" 2>/dev/null && fail "$what: diskmon still running after 10 s"
    wait "$dm"
    rc=$?
    no_instance "$dm" "$what"
    echo "ok: $what: exit $rc, instance removed"
}
end_case "-n 3" "" -n 3
[ "$rc" = 0 ] || fail "-n 3: exit $rc"
end_case "-t 1" "" -t 1
[ "$rc" = 0 ] || fail "-t 1: exit $rc"
end_case SIGINT INT
[ "$rc" = 0 ] || fail "SIGINT: exit $rc"
end_case SIGTERM TERM
end_case SIGHUP HUP
# An output error: writing to /dev/full fails at the header, milliseconds
# after the instance is made, too soon for wait_instance's polling to see
# it; strace shows the instance made, then removed, around the error.
# (LeakSanitizer cannot run under a tracer: leaks are checked by the other
# cases of an ASan build.)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
strace -f -qq -e trace=mkdir,rmdir -o "$work/full.strace" \
    "$DISKMON" -d "$name" -o /dev/full >/dev/null 2>"$work/end.err"
rc=$?
[ "$rc" = 1 ] || fail "-o /dev/full: exit $rc, want 1: $(cat "$work/end.err")"
grep -q '/dev/full' "$work/end.err" || fail "-o /dev/full: the message does not name the file: $(cat "$work/end.err")"
made=$(grep -c 'mkdir(".*instances/diskmon-[0-9]*".* = 0' "$work/full.strace")
gone=$(grep -c 'rmdir(".*instances/diskmon-[0-9]*") = 0' "$work/full.strace")
[ "$made" = 1 ] && [ "$gone" = 1 ] ||
    fail "-o /dev/full: instance made $made time(s), removed $gone time(s): $(grep -e mkdir -e rmdir "$work/full.strace")"
echo "ok: output error (/dev/full): exit 1, instance made and removed"
# A closed pipe: head exits after the header and one line. It starts
# reading after 1 s: diskmon notices a closed pipe within milliseconds now,
# and the instance must be there long enough for wait_instance to see it.
"$DISKMON" -d "$name" 2>"$work/pipe.err" > >(sleep 1; head -n 2 >/dev/null) &
dm=$!
wait_instance "$dm" || fail "closed pipe: no instance appeared: $(cat "$work/pipe.err")"
for _ in $(seq 200); do kill -0 "$dm" 2>/dev/null || break; sleep 0.05; done
kill -0 "$dm" 2>/dev/null && fail "diskmon | head did not end within 10 s"
wait "$dm"
rc=$?
[ "$rc" = 0 ] || fail "closed pipe: exit $rc: $(cat "$work/pipe.err")"
no_instance "$dm" "closed pipe"
echo "ok: closed pipe: exit 0, instance removed"

# --- cgroups are followed only where the run reads them -----------------------
# The lifetime instance (diskmon-PID-tasks) follows each process's cgroup;
# text lines print no cgroup, so a text run makes none. csv does (below,
# the SIGKILL case), on a kernel with the lifetime events.
"$DISKMON" -d "$name" >/dev/null 2>"$work/text.err" &
dm=$!
wait_instance "$dm" || fail "no instance for the text run: $(cat "$work/text.err")"
sleep 0.5
[ -d "$T/instances/diskmon-$dm-tasks" ] &&
    fail "a text run made diskmon-$dm-tasks: it follows cgroups nothing reads"
kill -INT "$dm"
wait "$dm"
echo "ok: a text run follows no cgroup (no diskmon-PID-tasks)"

# --- 3. SIGKILL, then the next run and --cleanup remove the leftover ---------
# -f csv: its lines carry the cgroup, so the lifetime instance is made too.
"$DISKMON" -d "$name" -f csv >/dev/null 2>&1 &
dm=$!
wait_instance "$dm" || fail "no instance for the SIGKILL case"
tasks_left=0
for _ in $(seq 40); do
    [ -d "$T/instances/diskmon-$dm-tasks" ] && { tasks_left=1; break; }
    sleep 0.05
done
[ "$tasks_left" = 1 ] || [ ! -d "$T/events/cgroup/cgroup_attach_task" ] ||
    fail "-f csv: no diskmon-$dm-tasks, though this kernel has cgroup:cgroup_attach_task"
kill -KILL "$dm"
wait "$dm" 2>/dev/null
[ -d "$T/instances/diskmon-$dm" ] || fail "SIGKILL: the instance vanished by itself?"
"$DISKMON" -d "$name" -t 0.5 >/dev/null 2>"$work/next.err" || fail "next run failed: $(cat "$work/next.err")"
no_instance "$dm" "the run after SIGKILL"
grep -q "removed the tracefs instance .*diskmon-$dm left by diskmon process $dm" "$work/next.err" ||
    fail "no note about the stale instance: $(cat "$work/next.err")"
# The lifetime instance (ftrace_tasks.h), where this kernel has its events.
[ "$tasks_left" = 0 ] ||
    grep -q "removed the tracefs instance .*diskmon-$dm-tasks left by diskmon process $dm" \
        "$work/next.err" || fail "no note about the stale diskmon-$dm-tasks: $(cat "$work/next.err")"
echo "ok: SIGKILL: the next run removed diskmon-$dm with a note"

"$DISKMON" -d "$name" >/dev/null 2>&1 &
dm=$!
wait_instance "$dm" || fail "no instance for the --cleanup case"
kill -KILL "$dm"
wait "$dm" 2>/dev/null
start=$(date +%s%N)
"$DISKMON" --cleanup >"$work/clean.out" 2>"$work/clean.err"
rc=$?
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$rc" = 0 ] || fail "--cleanup: exit $rc: $(cat "$work/clean.err")"
no_instance "$dm" "--cleanup"
[ -s "$work/clean.out" ] && fail "--cleanup printed on stdout (a capture?): $(head -3 "$work/clean.out")"
[ "$elapsed" -lt 3000 ] || fail "--cleanup took $elapsed ms"
grep -q "diskmon-$dm" "$work/clean.err" || fail "--cleanup said nothing of diskmon-$dm: $(cat "$work/clean.err")"
# A leftover with diskmon's own pid (a killed diskmon whose pid it now
# has) is replaced, not a reason to fall back to perf.
bash -c 'echo $$ >"$4"; mkdir "$1/instances/diskmon-$$" && exec "$2" -d "$3" -t 0.3' \
    _ "$T" "$DISKMON" "$name" "$work/own.pid" >/dev/null 2>"$work/own.err" ||
    fail "own-pid leftover: $(cat "$work/own.err")"
[ -s "$work/own.err" ] && fail "own-pid leftover: $(cat "$work/own.err")"
no_instance "$(cat "$work/own.pid")" "own-pid leftover"
echo "ok: a leftover instance with diskmon's own pid was replaced and removed"
"$DISKMON" --cleanup 2>"$work/clean2.err" || fail "--cleanup with nothing to do failed"
grep -q "no leftover" "$work/clean2.err" || fail "--cleanup with nothing to do: $(cat "$work/clean2.err")"
echo "ok: --cleanup removed diskmon-$dm and exited 0 in $elapsed ms without capturing"

# --- 4. two at once -------------------------------------------------------------
kill "$iopid" 2>/dev/null
wait "$iopid" 2>/dev/null
"$DISKMON" -d "$name" -f csv -o "$work/a.csv" 2>"$work/a.err" &
a=$!
bg="$bg $a"
"$DISKMON" -d "/dev/$name" -f csv -o "$work/b.csv" 2>"$work/b.err" &
b=$!
bg="$bg $b"
wait_instance "$a" && wait_instance "$b" || fail "two diskmons: both instances should exist"
sleep 0.3
ops=()
for i in $(seq 0 19); do ops+=("w:$((i * 65536)):4096" "r:$((i * 65536)):8192"); done
"$DM_DIO" "$loop" "${ops[@]}" >"$work/two.dio" || fail "dm_dio failed"
sleep 0.5
interrupt "$a"; rca=$rc
interrupt "$b"; rcb=$rc
[ "$rca" = 0 ] && [ "$rcb" = 0 ] || fail "two diskmons: exit $rca and $rcb"
pid=$(awk '/^pid / { print $2 }' "$work/two.dio")
for f in a b; do
    tr -d '\r' <"$work/$f.csv" | awk -F, -v p="$pid" '$8 == p { print $5, $6, $7 }' | sort >"$work/$f.rows"
done
n=$(wc -l <"$work/a.rows")
[ "$n" = 40 ] || fail "first diskmon saw $n of dm_dio's 40 requests"
cmp -s "$work/a.rows" "$work/b.rows" || fail "the two diskmons saw different requests: $(diff "$work/a.rows" "$work/b.rows" | head)"
no_instance "$a" "two at once"; no_instance "$b" "two at once"
echo "ok: two diskmons at once (-d $name and -d /dev/$name) each saw all 40 requests"

# --- 5. no instance can be made: perf, with one note ---------------------------
# A read-only tracefs, in a private mount namespace only.
if command -v unshare >/dev/null &&
    unshare -m --propagation private true 2>/dev/null; then
    unshare -m --propagation private sh -c \
        'mount -o remount,bind,ro "$1" && exec "$2" -d "$3" -t 1' _ "$T" "$DISKMON" "$name" \
        >/dev/null 2>"$work/ro.err"
    rc=$?
    [ "$rc" = 0 ] || fail "read-only tracefs: exit $rc: $(cat "$work/ro.err")"
    [ "$(grep -c . "$work/ro.err")" = 1 ] || fail "read-only tracefs: want one note: $(cat "$work/ro.err")"
    grep -q "^diskmon: using perf events, not a tracefs instance (cannot make the tracefs instance .*Read-only file system)" \
        "$work/ro.err" || fail "read-only tracefs: $(cat "$work/ro.err")"
    echo "ok: read-only tracefs: fell back to perf with one note"
else
    echo "skipped: unshare -m is not available for the read-only tracefs case"
fi

# --- 6. the top level and a perf record beside diskmon are left alone -------
top_state() {
    local f
    for f in tracing_on trace_clock buffer_size_kb current_tracer set_event \
        options/overwrite events/block/block_io_start/enable \
        events/block/block_io_start/filter events/block/block_rq_complete/enable \
        events/block/block_rq_complete/filter; do
        [ -e "$T/$f" ] && printf '%s: %s\n' "$f" "$(head -c 200 "$T/$f" | tr '\n' ' ')"
    done
}
top_state >"$work/top.before"
# One round: perf record of block_io_start (when perf exists), diskmon
# beside it, 10 reads; sets $n (diskmon's count) and $m (perf's, or -1
# without perf). perf record enables its events some time after it starts,
# and nothing says when: a round whose perf saw none of the reads says
# nothing about diskmon, so a second round is made then (the claim is that
# diskmon leaves perf able to see everything, which one round shows).
beside_perf_round() {
    local round=$1 pr="" dm pid loopdev
    m=-1
    if command -v perf >/dev/null; then
        perf record -q -e block:block_io_start -a -o "$work/perf$round.data" \
            >/dev/null 2>"$work/perf$round.err" &
        pr=$!
        bg="$bg $pr"
        sleep $((round + 1))
        kill -0 "$pr" 2>/dev/null || pr=""
    fi
    "$DISKMON" -d "$name" -f csv -o "$work/c$round.csv" 2>"$work/c.err" &
    dm=$!
    bg="$bg $dm"
    wait_instance "$dm" || fail "beside perf: no instance: $(cat "$work/c.err")"
    sleep 0.3
    ops=()
    for i in $(seq 0 9); do ops+=("r:$((i * 131072)):4096"); done
    "$DM_DIO" "$loop" "${ops[@]}" >"$work/c.dio" || fail "dm_dio failed"
    sleep 0.5
    interrupt "$dm"
    [ "$rc" = 0 ] || fail "beside perf: exit $rc: $(cat "$work/c.err")"
    pid=$(awk '/^pid / { print $2 }' "$work/c.dio")
    n=$(tr -d '\r' <"$work/c$round.csv" | awk -F, -v p="$pid" '$8 == p && $5 == "Read"' | wc -l)
    [ "$n" = 10 ] || fail "beside perf: diskmon saw $n of dm_dio's 10 reads"
    [ -n "$pr" ] || return 0
    kill -INT "$pr"
    wait "$pr"
    # Only this dm_dio's requests on the loop device: perf record -a also
    # sees whatever else runs on the machine (other dm_dio processes), and
    # dm_dio's own start reads its executable and libraries from the system
    # disk in its own name (readahead, "RA"), the sanitizer runtimes too.
    loopdev=$(printf '%d,%d' "0x$(stat -c %t "$loop")" "0x$(stat -c %T "$loop")")
    m=$(perf script -i "$work/perf$round.data" -F comm,pid,event,trace 2>/dev/null |
        awk -v p="$pid" -v d="$loopdev" \
            '$1 == "dm_dio" && $2 == p && $3 ~ /block_io_start/ && $4 == d' | wc -l)
}
beside_perf_round 1
if [ "$m" = 0 ]; then
    echo "note: perf record beside diskmon saw none of the 10 reads in round 1 (not recording yet?); round 2"
    beside_perf_round 2
fi
if [ "$m" = -1 ]; then
    echo "skipped: perf record is not available; diskmon alone saw all 10 reads"
else
    [ "$m" = 10 ] || fail "perf record beside diskmon saw $m of dm_dio's 10 reads"
    echo "ok: perf record beside diskmon: both saw all 10 reads"
fi
top_state >"$work/top.after"
diff "$work/top.before" "$work/top.after" >/dev/null ||
    fail "the top-level tracing settings changed: $(diff "$work/top.before" "$work/top.after")"
echo "ok: the top-level tracing settings are as before"

echo "linux_tracefs: passed"
exit 0
