#!/bin/bash
# linux_cgroup_race.sh DISKMON - a request's cgroup is where its process was
# when it issued it, even when the process is gone or has moved by the time
# diskmon reads the request; a request whose cgroup cannot be known is
# counted under --cgroup, never dropped silently. On both transports
# (--backend tracefs, perf), on a loop device, in two new cgroups
# (dmtest-race-PID-a and -b under the cgroup2 mount of /proc/self/mounts).
#
#   short_dds (DM_CGROUP_ROUNDS rounds, 20 by default, per backend): in
#     cgroup a, one long dd (25 O_DIRECT writes of 64 KiB, fed through a
#     pipe every 20 ms) and five short dd's (two 64 KiB O_DIRECT writes
#     each, exiting at once), watched by `diskmon --cgroup /a -f csv`. In
#     odd rounds diskmon is stopped (SIGSTOP) while the short dd's run and
#     continued after they exited, so the reader sees their requests only
#     once they are gone. Every write dd reports ("N+0 records out") must be
#     a line, each short dd exactly its 2, the long dd its 25, all naming
#     /a, nothing else, exit 0 and no unknown count. The one exception, on
#     perf only: samples the kernel never delivered, which diskmon counts
#     and says (exit 3); then the lines and the count add up to dd's writes.
#   moved: one dd in cgroup a writes 4 blocks, is moved to b (its pid
#     written into b's cgroup.procs from outside), writes 4 more and exits,
#     with diskmon stopped throughout: the csv shows its first 4 lines in a
#     and the last 4 in b; --cgroup /a shows 4, --cgroup /b shows 4.
#   unknown: DM_LINUX_CGROUPS=proc (the fallback reading /proc/PID/cgroup
#     when a request is read), diskmon stopped while five short dd's run in
#     a and exit: --cgroup /a shows none of them, says "10 requests of
#     unknown cgroup not shown" (at the end, in -s, and on --top's time
#     line) and exits 3 (the exit code of a loss).
#
# Prints "PASS linux_cgroup_race/name" / "FAIL ..." lines; exit 0, 1, or 77
# (skip: not root, no loop devices, no cgroup2 mount; a failure under
# CI=true).
set -u

DISKMON=${1:?usage: linux_cgroup_race.sh DISKMON}
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${DM_CGROUP_ROUNDS:-20}
BS=65536
LONG_N=25

# shellcheck source=../lib/loop_common.sh
. "$HERE/../lib/loop_common.sh"
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$mnt" ] || skip "no cgroup2 file system in /proc/self/mounts (a v1-only machine)"
make_loop 64M cgrace

cg_a="$mnt/dmtest-race-$$-a" cg_b="$mnt/dmtest-race-$$-b"
race_cleanup() {
    for d in "$cg_a" "$cg_b"; do
        [ -d "$d" ] || continue
        # A cgroup with processes cannot be removed: move them back first.
        while read -r p; do
            echo "$p" >"$mnt/cgroup.procs" 2>/dev/null
        done <"$d/cgroup.procs"
        rmdir "$d" 2>/dev/null || echo "# linux_cgroup_race: could not remove $d"
    done
    loop_cleanup
}
trap race_cleanup EXIT
mkdir "$cg_a" "$cg_b" || skip "cannot make cgroups in $mnt"
rel_a=${cg_a#"$mnt"} rel_b=${cg_b#"$mnt"}

fails=0
pass() { echo "PASS linux_cgroup_race/$1"; }
bad() { echo "FAIL linux_cgroup_race/$1: $2"; fails=$((fails + 1)); }

# start TAG ARGS...: diskmon on the loop device writing csv to TAG.csv, in
# the background, its pid in $dm_TAG; returns once its capture is on (the
# csv header is written after the source opened).
start() {
    local tag=$1 pid
    shift
    rm -f "$work/$tag.csv"
    "$DISKMON" -d "$name" -f csv -o "$work/$tag.csv" "$@" 2>"$work/$tag.err" &
    pid=$!
    eval "dm_$tag=$pid"
    bg="$bg $pid"
    wait_started "$pid" "$work/$tag.err" test -s "$work/$tag.csv"
}

# stop TAG: SIGINT, its exit code in $rc; the csv's CR LF made LF.
stop() {
    eval "interrupt \$dm_$1"
    sed -i 's/\r$//' "$work/$1.csv"
}

# short_dd K CG: a shell moves itself into CG and becomes dd, which writes 2
# blocks of BS with O_DIRECT at block 4K; its pid in short.K.pid.
short_dd() {
    sh -c 'echo $$ >"$1/cgroup.procs" && echo $$ >"$2" &&
           exec dd if=/dev/zero of="$3" bs="$4" count=2 seek="$5" oflag=direct 2>"$6"' sh \
        "$2" "$work/short.$1.pid" "$loop" $BS $(($1 * 4)) "$work/short.$1.err"
}

# col CSV NAME: the column number of NAME in CSV's header.
col() { head -n 1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }

# lines CSV PID [CGROUP]: data lines of PID (with that cgroup).
lines() {
    awk -F, -v p="$(col "$1" pid)" -v c="$(col "$1" cgroup)" -v pid="$2" -v cg="${3:-}" \
        'NR > 1 && $p == pid && (cg == "" || $c == cg) { n++ } END { print n + 0 }' "$1"
}

# One round of the newcomer's case; prints "" or what went wrong.
round() {
    local backend=$1 i=$2 why="" total want_total
    rm -f "$work"/short.* "$work/long".*
    start sel --backend "$backend" --cgroup "$rel_a"
    # The long dd, fed one block every 20 ms from outside the cgroup.
    (for _ in $(seq $LONG_N); do head -c $BS /dev/zero; sleep 0.02; done) |
        sh -c 'echo $$ >"$1/cgroup.procs" && echo $$ >"$2" &&
               exec dd of="$3" bs="$4" count="$5" seek=100 iflag=fullblock oflag=direct \
                    2>"$6"' sh "$cg_a" "$work/long.pid" "$loop" $BS $LONG_N "$work/long.err" &
    local feeder=$!
    [ $((i % 2)) = 1 ] && kill -STOP "$dm_sel"
    for k in 1 2 3 4 5; do short_dd $k "$cg_a"; done
    wait "$feeder"
    kill -CONT "$dm_sel"
    sleep 0.3
    stop sel
    # The perf backend's own kernel losses (docs/linux-live.md, "Perf
    # backend losses": samples the kernel counted or dropped and never
    # delivered), said by diskmon with exit 3, as linux_load_perf.sh takes
    # them: then every write is shown or among those counted, never more.
    local kernel_lost=0
    if [ "$backend" = perf ] && [ "$rc" = 3 ] &&
        grep -q 'lost before diskmon saw .*block tracepoints via perf' "$work/sel.err"; then
        kernel_lost=$(sed -n 's/^diskmon: \([0-9]*\) events\{0,1\} lost (.*/\1/p' "$work/sel.err")
        kernel_lost=${kernel_lost:-0}
    fi
    [ "$rc" = 0 ] || [ "$kernel_lost" -gt 0 ] || why="$why exit $rc: $(head -c 300 "$work/sel.err");"
    grep -q 'unknown' "$work/sel.err" && why="$why $(grep unknown "$work/sel.err");"
    want_total=0
    for k in 1 2 3 4 5; do
        grep -q '^2+0 records out' "$work/short.$k.err" ||
            why="$why short dd $k: $(cat "$work/short.$k.err");"
        local n
        n=$(lines "$work/sel.csv" "$(cat "$work/short.$k.pid")" "$rel_a")
        [ "$n" = 2 ] || { [ "$kernel_lost" -gt 0 ] && [ "$n" -lt 2 ]; } ||
            why="$why short dd $k: $n of its 2 writes shown in $rel_a;"
        want_total=$((want_total + 2))
    done
    grep -q "^$LONG_N+0 records out" "$work/long.err" || why="$why long dd: $(cat "$work/long.err");"
    n=$(lines "$work/sel.csv" "$(cat "$work/long.pid")" "$rel_a")
    [ "$n" = $LONG_N ] || { [ "$kernel_lost" -gt 0 ] && [ "$n" -lt $LONG_N ]; } ||
        why="$why long dd: $n of its $LONG_N writes shown;"
    want_total=$((want_total + LONG_N))
    total=$(($(wc -l <"$work/sel.csv") - 1))
    [ $((total + kernel_lost)) = "$want_total" ] ||
        why="$why $total lines under --cgroup and $kernel_lost counted lost, dd wrote $want_total;"
    [ -n "$why" ] || [ "$kernel_lost" = 0 ] ||
        echo "# round $i on perf: the kernel lost $kernel_lost, counted (exit 3): $total shown + $kernel_lost = $want_total" >&2
    echo "$why"
}

# The moved process, with diskmon stopped from before its first write to
# after its exit: where it was must come from the kernel's record.
moved() {
    local backend=$1 why="" pid fifo="$work/feed"
    start all --backend "$backend"
    start sela --backend "$backend" --cgroup "$rel_a"
    start selb --backend "$backend" --cgroup "$rel_b"
    rm -f "$fifo" "$work/moved.pid"
    mkfifo "$fifo"
    sh -c 'echo $$ >"$1/cgroup.procs" && echo $$ >"$2" &&
           exec dd if="$3" of="$4" bs="$5" count=8 seek=200 iflag=fullblock oflag=direct \
                2>"$6"' sh "$cg_a" "$work/moved.pid" "$fifo" "$loop" $BS "$work/moved.err" &
    local ddsh=$!
    exec 3>"$fifo"
    for _ in $(seq 100); do [ -s "$work/moved.pid" ] && break; sleep 0.02; done
    pid=$(cat "$work/moved.pid")
    kill -STOP "$dm_all" "$dm_sela" "$dm_selb"
    head -c $((4 * BS)) /dev/zero >&3
    # dd has read the 4 blocks (rchar) and is back in read: its writes are done.
    for _ in $(seq 250); do
        [ "$(awk '/^rchar/ { print $2 }' "/proc/$pid/io" 2>/dev/null)" = $((4 * BS)) ] && break
        sleep 0.02
    done
    sleep 0.3
    echo "$pid" >"$cg_b/cgroup.procs"
    head -c $((4 * BS)) /dev/zero >&3
    exec 3>&-
    wait "$ddsh"
    kill -CONT "$dm_all" "$dm_sela" "$dm_selb"
    sleep 0.3
    for t in all sela selb; do
        stop $t
        [ "$rc" = 0 ] || why="$why $t: exit $rc: $(head -c 300 "$work/$t.err");"
    done
    grep -q '^8+0 records out' "$work/moved.err" || why="$why dd: $(cat "$work/moved.err");"
    # In time order (the csv is), the first 4 lines in a, the last 4 in b.
    local seq
    seq=$(awk -F, -v p="$(col "$work/all.csv" pid)" -v c="$(col "$work/all.csv" cgroup)" \
              -v pid="$pid" 'NR > 1 && $p == pid { printf "%s ", $c }' "$work/all.csv")
    [ "$seq" = "$rel_a $rel_a $rel_a $rel_a $rel_b $rel_b $rel_b $rel_b " ] ||
        why="$why the moved dd's lines name: $seq;"
    [ "$(lines "$work/sela.csv" "$pid")" = 4 ] && [ "$(($(wc -l <"$work/sela.csv") - 1))" = 4 ] ||
        why="$why --cgroup $rel_a: $(($(wc -l <"$work/sela.csv") - 1)) lines, want 4;"
    [ "$(lines "$work/selb.csv" "$pid")" = 4 ] && [ "$(($(wc -l <"$work/selb.csv") - 1))" = 4 ] ||
        why="$why --cgroup $rel_b: $(($(wc -l <"$work/selb.csv") - 1)) lines, want 4;"
    echo "$why"
}

# The fallback, made to read each request only after its process exited;
# a --top beside it (text blocks in a file) says the count on its time line.
unknown() {
    local backend=$1 why="" n top
    DM_LINUX_CGROUPS=proc start unk --backend "$backend" --cgroup "$rel_a" -s
    rm -f "$work/unt.txt"
    DM_LINUX_CGROUPS=proc "$DISKMON" -d "$name" --backend "$backend" --cgroup "$rel_a" \
        --top 0.5 -o "$work/unt.txt" 2>"$work/unt.err" &
    top=$!
    bg="$bg $top"
    # Its first time line: the capture is on.
    for _ in $(seq 100); do [ -s "$work/unt.txt" ] && break; sleep 0.05; done
    kill -STOP "$dm_unk" "$top"
    for k in 1 2 3 4 5; do short_dd $k "$cg_a"; done
    kill -CONT "$dm_unk" "$top"
    sleep 1.2 # an interval drawn after the reader took them
    stop unk
    interrupt "$top"
    [ "$rc" = 3 ] || why="$why exit $rc, want 3;"
    n=$(($(wc -l <"$work/unk.csv") - 1))
    [ "$n" = 0 ] || why="$why $n lines shown of processes gone before the read;"
    # dd's own counts: five dd's of 2 writes each.
    want=0
    for k in 1 2 3 4 5; do
        grep -q '^2+0 records out' "$work/short.$k.err" && want=$((want + 2))
    done
    grep -q "^diskmon: $want requests of unknown cgroup not shown" "$work/unk.err" ||
        why="$why no line saying $want requests of unknown cgroup: $(head -c 400 "$work/unk.err");"
    grep -q "; $want requests of unknown cgroup not shown" "$work/unk.err" ||
        why="$why the -s summary does not count them;"
    grep -q 'DM_LINUX_CGROUPS=proc' "$work/unk.err" || why="$why the fallback is not said;"
    grep -q "lost, $want requests of unknown cgroup not shown" "$work/unt.txt" ||
        why="$why --top's time line does not say $want unknown: $(tail -n 3 "$work/unt.txt");"
    echo "$why"
}

for backend in tracefs perf; do
    failed=0
    for i in $(seq "$ROUNDS"); do
        why=$(round "$backend" "$i")
        if [ -n "$why" ]; then
            failed=$((failed + 1))
            echo "# round $i on $backend:$why"
        fi
    done
    if [ "$failed" = 0 ]; then
        pass "short_dds_$backend ($ROUNDS rounds, every write of 5 short dd's and a long one in $rel_a)"
    else
        bad "short_dds_$backend" "$failed of $ROUNDS rounds wrong (above)"
    fi
    why=$(moved "$backend")
    [ -z "$why" ] && pass "moved_$backend" || bad "moved_$backend" "$why"
    why=$(unknown "$backend")
    [ -z "$why" ] && pass "unknown_counted_$backend" || bad "unknown_counted_$backend" "$why"
done
[ "$fails" = 0 ] || exit 1
