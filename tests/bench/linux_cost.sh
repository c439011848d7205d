#!/bin/bash
# linux_cost.sh DISKMON [SECONDS] [ROUNDS] - what each request costs diskmon
# on Linux, and what watching takes from fio, side by side in one run.
#
# Not run by CI (timings need a quiet machine; on a busy one read the
# ratios, not the absolute figures). On a loop device over /dev/shm, fio
# random 4 KiB O_DIRECT reads (libaio, iodepth 32) run SECONDS (default 5)
# each, ROUNDS times (default 5), every configuration once per round, in
# the same order each round, so that drifting noise spreads over all:
#   alone        fio only
#   tracepoints  a tracefs instance with block_io_start and block_rq_complete
#                enabled and no reader (overwrite on): the kernel's own cost,
#                the floor for any tracefs reader
#   mmap         diskmon (tracefs, the mapped ring), all disks, text to
#                /dev/null, -s
#   read         the same with DM_TRACEFS_RING=read (read(2) of each
#                sub-buffer: the fallback for kernels before 6.10)
#   perf         diskmon --backend perf
#   old          DISKMON_OLD (an environment variable naming another
#                diskmon, e.g. a build of main) on its default backend;
#                absent when not set
#   perf record  perf record -e block:block_io_start -e block:block_rq_complete
#                -a into /dev/shm
#   bpftrace     a biosnoop-style bpftrace script (one printf per request),
#                "-" when bpftrace is missing
# For each diskmon: CPU per request, the user + system time of the whole
# process (all its threads, /proc/PID/stat just before it is stopped)
# divided by the requests fio made while it watched, and the requests it
# lost. DM_COST_CONFIGS="alone mmap read ..." runs only those. The table
# prints medians: IOPS, the share of fio's IOPS kept (ratio
# to alone), CPU ns per request, lost.
set -u

DISKMON=${1:?usage: linux_cost.sh DISKMON [SECONDS] [ROUNDS]}
SECONDS_EACH=${2:-5}
ROUNDS=${3:-5}
OLD=${DISKMON_OLD:-}

[ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
for t in fio perf losetup; do
    command -v "$t" >/dev/null || { echo "needs $t"; exit 1; }
done
T=/sys/kernel/tracing
[ -d "$T/instances" ] || T=/sys/kernel/debug/tracing
[ -d "$T/instances" ] || { echo "needs tracefs instances (run diskmon once as root)"; exit 1; }

work=$(mktemp -d /dev/shm/diskmon_cost.XXXXXX) || exit 1
loop="" bgpid="" inst=""
cleanup() {
    [ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null
    wait 2>/dev/null
    [ -n "$inst" ] && [ -d "$inst" ] && { echo 0 >"$inst/tracing_on"; rmdir "$inst"; }
    [ -n "$loop" ] && losetup -d "$loop"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

truncate -s 512M "$work/disk.img"
loop=$(losetup -f --show "$work/disk.img") || exit 1
command -v udevadm >/dev/null && udevadm settle -t 5 2>/dev/null
TICKS=$(getconf CLK_TCK)

# run_fio: prints "IOPS TOTAL_IOS".
run_fio() {
    fio --name=cost --filename="$loop" --rw=randread --bs=4k --ioengine=libaio \
        --iodepth=32 --direct=1 --runtime="$SECONDS_EACH" --time_based \
        --output-format=json >"$work/fio.json" 2>/dev/null || return 1
    awk '/"read" : \{/ { r = 1 }
        r && /"total_ios"/ { gsub(/[^0-9]/, "", $3); n = $3 }
        r && /"iops"/ && !i { gsub(/[^0-9.]/, "", $3); i = $3 }
        n != "" && i != "" { printf "%.0f %s\n", i, n; exit }' "$work/fio.json"
}

start_bg() {
    "$@" &
    bgpid=$!
    sleep 1
    kill -0 "$bgpid" 2>/dev/null
}

stop_bg() {
    kill -INT "$bgpid"
    wait "$bgpid"
    local rc=$?
    bgpid=""
    return $rc
}

median() {
    sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
        else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# cpu_ticks PID: utime + stime of the whole process (fields 14 and 15 of
# /proc/PID/stat, after the parenthesised name).
cpu_ticks() {
    sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12, $13 }'
}

# diskmon_round TAG DISKMON [ENV=VALUE...] -- ARGS...: one fio run under a
# diskmon; appends IOPS, ns per request and lost to $work/TAG.*.
diskmon_round() {
    local tag=$1 bin=$2 out iops ios t0 t1 lost
    shift 2
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    start_bg env "${envs[@]}" "$bin" "$@" -s >/dev/null 2>"$work/$tag.err" ||
        { echo "$tag: $(cat "$work/$tag.err")"; exit 1; }
    t0=$(cpu_ticks "$bgpid")
    out=$(run_fio)
    sleep 0.3
    t1=$(cpu_ticks "$bgpid")
    stop_bg
    read -r iops ios <<<"$out"
    lost=$(sed -n 's/.*; lost \([0-9]*\) (.*/\1/p' "$work/$tag.err")
    echo "$iops" >>"$work/$tag.iops"
    awk -v a="$t0" -v b="$t1" -v hz="$TICKS" -v n="$ios" -v f="$work/$tag.sys" \
        'BEGIN { split(a, x, " "); split(b, y, " ")
                 printf "%.0f\n", (y[2] - x[2]) / hz * 1e9 / n >>f
                 printf "%.0f\n", (y[1] + y[2] - x[1] - x[2]) / hz * 1e9 / n }' >>"$work/$tag.ns"
    echo "${lost:-?}" >>"$work/$tag.lost"
    echo "$iops"
}

plain_round() { # TAG: fio under whatever runs now
    local out
    out=$(run_fio)
    echo "${out% *}" >>"$work/$1.iops"
    echo "${out% *}"
}

cat >"$work/biosnoop.bt" <<'BT'
tracepoint:block:block_io_start
{
    @start[args->dev, args->sector] = nsecs;
    @pid[args->dev, args->sector] = pid;
    @comm[args->dev, args->sector] = comm;
}
tracepoint:block:block_rq_complete
/@start[args->dev, args->sector]/
{
    $k0 = args->dev;
    $k1 = args->sector;
    printf("%d %s %d %d %d %d\n", @pid[$k0, $k1], @comm[$k0, $k1], $k0, $k1,
           args->nr_sector, (nsecs - @start[$k0, $k1]) / 1000);
    delete(@start[$k0, $k1]);
    delete(@pid[$k0, $k1]);
    delete(@comm[$k0, $k1]);
}
BT
have_bpftrace=0
command -v bpftrace >/dev/null && have_bpftrace=1

configs="alone tracepoints mmap read perf"
[ -n "$OLD" ] && configs="$configs old"
configs="$configs record"
[ "$have_bpftrace" = 1 ] && configs="$configs bpftrace"
# DM_COST_CONFIGS="alone mmap read": a subset, in that order (alone first:
# the ratios need it).
configs=${DM_COST_CONFIGS:-$configs}

printf '%-6s' round
for c in $configs; do printf ' %11s' "$c"; done
echo
for round in $(seq "$ROUNDS"); do
    printf '%-6s' "$round"
    for c in $configs; do
        case $c in
        alone) v=$(plain_round alone) ;;
        tracepoints)
            inst=$T/instances/diskmon_cost_$$
            mkdir "$inst"
            echo 1 >"$inst/events/block/block_io_start/enable"
            echo 1 >"$inst/events/block/block_rq_complete/enable"
            v=$(plain_round tracepoints)
            echo 0 >"$inst/tracing_on"
            echo 0 >"$inst/events/block/block_io_start/enable"
            echo 0 >"$inst/events/block/block_rq_complete/enable"
            rmdir "$inst"
            inst="" ;;
        mmap) v=$(diskmon_round mmap "$DISKMON" DM_TRACEFS_RING=mmap -- --backend tracefs) ;;
        read) v=$(diskmon_round read "$DISKMON" DM_TRACEFS_RING=read -- --backend tracefs) ;;
        perf) v=$(diskmon_round perf "$DISKMON" -- --backend perf) ;;
        old) v=$(diskmon_round old "$OLD" -- ) ;;
        record)
            start_bg perf record -q -e block:block_io_start -e block:block_rq_complete -a \
                -o "$work/perf.data" >/dev/null 2>"$work/rec.err" ||
                { cat "$work/rec.err"; exit 1; }
            v=$(plain_round record)
            sleep 0.3
            stop_bg
            rm -f "$work/perf.data" ;;
        bpftrace)
            bpftrace "$work/biosnoop.bt" >/dev/null 2>"$work/bt.err" &
            bgpid=$!
            for _ in $(seq 30); do
                grep -q 'Attaching' "$work/bt.err" && break
                kill -0 "$bgpid" 2>/dev/null || break
                sleep 0.5
            done
            sleep 1
            kill -0 "$bgpid" 2>/dev/null || { echo "bpftrace failed: $(cat "$work/bt.err")"; exit 1; }
            v=$(plain_round bpftrace)
            sleep 0.3
            stop_bg ;;
        esac
        printf ' %11s' "$v"
    done
    echo
done

ma=$(median <"$work/alone.iops")
echo
echo "medians of $ROUNDS rounds, fio 4 KiB randread iodepth 32 on $loop (/dev/shm), ${SECONDS_EACH}s each,"
echo "$(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d):"
printf '%-12s %10s %8s %14s %8s %10s\n' config IOPS kept "CPU ns/request" "of it sys" lost
for c in $configs; do
    m=$(median <"$work/$c.iops")
    kept=$(awk -v a="$ma" -v m="$m" 'BEGIN { if (a > 0) printf "%.1f%%", 100 * m / a; else print "?" }')
    ns=- sys=- lost=-
    if [ -f "$work/$c.ns" ]; then
        ns=$(median <"$work/$c.ns")
        sys=$(median <"$work/$c.sys")
        lost=$(paste -sd, "$work/$c.lost")
    fi
    printf '%-12s %10s %8s %14s %8s %10s\n' "$c" "$m" "$kept" "$ns" "$sys" "$lost"
done
