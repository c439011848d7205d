#!/bin/bash
# linux_live.sh DISKMON DM_DIO - diskmon's Linux live capture, end to end.
#
# Creates a loop device over a file in /dev/shm, starts diskmon on it, has
# dm_dio issue O_DIRECT reads, writes, a flush and a discard at known
# offsets, stops diskmon with SIGINT and checks that each request appears
# exactly once with the right request, sector, length, device name, and
# dm_dio's pid and process name. Then the same with --queue, the same on
# the pre-6.5 tracepoints (DM_LINUX_LEGACY=1), and `diskmon | head -n 1`
# ending quietly; all of it on both transports (--backend tracefs, perf). Needs root and perf events: otherwise prints "SKIP: why"
# and exits 77, except under CI=true (CI runs as root), where that is a
# failure.
set -u

DISKMON=${1:?usage: linux_live.sh DISKMON DM_DIO}
DM_DIO=${2:?usage: linux_live.sh DISKMON DM_DIO}

# shellcheck source=../lib/loop_common.sh
. "$(dirname "$0")/../lib/loop_common.sh"
make_loop 64M live

# The I/O: OP:OFFSET:LEN as dm_dio takes it; the request diskmon must show.
# Offsets and lengths are multiples of 4 KiB and at most 64 KiB (one
# request each: loop's max_sectors_kb is 128 and 64 KiB discards are not
# split).
ops=(r:4096:8192 w:1048576:4096 f r:2097152:65536 w:3145728:32768 d:8388608:65536 r:0:4096)

# start_diskmon OUT ERR [ARGS...]: start diskmon in the background and wait
# until its header is in OUT, which it writes once the capture is on.
start_diskmon() {
    local out=$1 err=$2
    shift 2
    "$DISKMON" -d "$name" -f csv -o "$out" -s "$@" 2>"$err" &
    dm=$!
    bg="$bg $dm"
    wait_started "$dm" "$err" test -s "$out"
}

# stop_diskmon: SIGINT, then its exit code must be 0 within 10 s.
stop_diskmon() {
    local err=$1
    interrupt "$dm"
    [ "$rc" = 0 ] || fail "diskmon exit code $rc after SIGINT: $(cat "$err")"
    grep -q "lost 0 (" "$err" || fail "summary does not say lost 0: $(cat "$err")"
}

# check_csv CSV PID MODE: every op appears exactly once. MODE legacy: the
# pid is that of the task that dispatched the request, which for a flush or
# a discard on a loop device is a kernel worker, so only reads and writes
# are checked for dm_dio's pid there.
check_csv() {
    local csv=$1 pid=$2 mode=$3
    local queue_col=0
    tr -d '\r' <"$csv" >"$csv.lf"
    head -n 1 "$csv.lf" | grep -q '^seq,time,duration,queue,' && queue_col=1
    # Drop the queue column so the fields are at fixed places:
    # seq,time,duration,disk,request,sector,length,pid,tid,process,file,offset,bytes
    awk -F, -v q="$queue_col" 'NR > 1 {
        if (q) print $1","$2","$3","$5","$6","$7","$8","$9","$10","$11","$12","$13","$14
        else print }' "$csv.lf" >"$csv.rows"
    awk -F, -v d="$name" '$4 != d { bad = 1 } END { exit bad }' "$csv.rows" ||
        fail "$mode: a line of another disk came through -d $name"
    local total=0
    for op in "${ops[@]}"; do
        local kind off len req
        kind=${op%%:*}
        if [ "$kind" = f ]; then
            req=Flush off=0 len=0
        else
            off=${op#*:}; off=${off%%:*}; len=${op##*:}
            case $kind in r) req=Read ;; w) req=Write ;; d) req=Discard ;; esac
        fi
        local want_pid=$pid
        case ${mode%%/*}:$req in legacy:Flush | legacy:Discard) want_pid=any ;; esac
        local n
        n=$(awk -F, -v r="$req" -v o="$off" -v l="$len" -v p="$want_pid" -v d="$name" '
            $5 == r && $12 == o && $13 == l && $4 == d &&
            $6 == o / 512 && $7 == l / 512 &&
            (p == "any" || ($8 == p && $10 == "dm_dio")) { n++ }
            END { print n + 0 }' "$csv.rows")
        [ "$n" = 1 ] || fail "$mode: $op ($req at byte $off, $len bytes, pid $want_pid) \
appears $n times; dm_dio's lines: $(awk -F, -v p="$pid" '$8 == p' "$csv.rows")"
        total=$((total + 1))
    done
    local mine want=$total
    mine=$(awk -F, -v p="$pid" '$8 == p { n++ } END { print n + 0 }' "$csv.rows")
    if [ "${mode%%/*}" = legacy ]; then
        mine=$(awk -F, -v p="$pid" '$8 == p && ($5 == "Read" || $5 == "Write") { n++ }
            END { print n + 0 }' "$csv.rows")
        want=$(printf '%s\n' "${ops[@]}" | grep -c '^[rw]:')
    fi
    [ "$mine" = "$want" ] || fail "$mode: $mine lines with dm_dio's pid, want $want: \
$(awk -F, -v p="$pid" '$8 == p' "$csv.rows")"
    if [ "$queue_col" = 1 ]; then
        awk -F, -v p="$pid" 'NR > 1 && $9 == p && $4 == "" { bad = 1 } END { exit bad }' "$csv.lf" ||
            fail "$mode: a line of dm_dio has no queue time"
    fi
    echo "ok: $mode: ${#ops[@]} requests, each exactly once"
}

run_case() {
    local mode="$1/${*: -1}"
    shift
    local out=$work/${mode//\//_}.csv err=$work/${mode//\//_}.err
    start_diskmon "$out" "$err" "$@"
    "$DM_DIO" "$loop" "${ops[@]}" >"$work/dio.out" || fail "dm_dio failed"
    local pid
    pid=$(awk '/^pid / { print $2 }' "$work/dio.out")
    [ -n "$pid" ] || fail "dm_dio printed no pid"
    # The last completion is shown within the reader's 100 ms poll.
    sleep 0.5
    stop_diskmon "$err"
    check_csv "$out" "$pid" "$mode"
}

# Every case on both transports: the tracefs instance (default) and perf.
for backend in tracefs perf; do
    run_case modern --backend "$backend"
    run_case queue --queue --backend "$backend"
    DM_LINUX_LEGACY=1 run_case legacy --backend "$backend"
done

# `diskmon | head -n 1`: head exits after the header; diskmon must notice
# the closed pipe at its next line, stop quietly and exit 0.
"$DM_DIO" "$loop" r:0:4096 >/dev/null || fail "dm_dio failed"
( while :; do "$DM_DIO" "$loop" r:0:4096 r:4096:4096 >/dev/null || exit; sleep 0.01; done ) &
bg="$bg $!"
start=$(date +%s)
for backend in tracefs perf; do
    start=$(date +%s)
    rm -f "$work/head.rc"
    timeout -s KILL 20 bash -c '"$1" -d "$2" --backend "$6" 2>"$3" | head -n 1 >"$4"; echo "${PIPESTATUS[0]}" >"$5"' \
        _ "$DISKMON" "$name" "$work/head.err" "$work/head.out" "$work/head.rc" "$backend"
    elapsed=$(( $(date +%s) - start ))
    [ -s "$work/head.rc" ] || fail "$backend: diskmon | head -n 1 did not end within 20 s"
    [ "$(cat "$work/head.rc")" = 0 ] || fail "$backend: diskmon | head -n 1: exit code $(cat "$work/head.rc"): $(cat "$work/head.err")"
    [ -s "$work/head.err" ] && fail "$backend: diskmon | head -n 1 printed on stderr: $(cat "$work/head.err")"
    [ "$elapsed" -le 5 ] || fail "$backend: diskmon | head -n 1 took $elapsed s to end"
    grep -q 'Request' "$work/head.out" || fail "$backend: head saw no header line: $(cat "$work/head.out")"
    echo "ok: $backend: diskmon | head -n 1 ended quietly in ${elapsed}s"
done

echo "linux_live: 8 passed, 0 failed"
exit 0
