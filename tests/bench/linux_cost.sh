#!/bin/bash
# linux_cost.sh DISKMON [SECONDS] [ROUNDS] - what diskmon costs, in one
# table: each Linux live request, what watching takes from fio, the ETW
# live path per record, and replay.
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
#   read         diskmon (tracefs, read(2) of each sub-buffer: the default),
#                all disks, text to /dev/null, -s
#   mmap         the same with DM_TRACEFS_RING=mmap (the mapped ring)
#   perf         diskmon --backend perf
#   old          DISKMON_OLD (an environment variable naming another
#                diskmon, e.g. a build of main) on its default backend;
#                absent when not set
#   perf record  perf record -e block:block_io_start -e block:block_rq_complete
#                -a into /dev/shm
#   bpftrace     a biosnoop-style bpftrace script (one printf per request),
#                "-" when bpftrace is missing
#   callback     bench_callback (tests/bench/bench_callback.c) on the sample
#                traces (../shared/etl, or DM_SHARED_ETL): the ETW live
#                path's decode + filter + enqueue, ns per DiskIo record and
#                per record of all kinds
#   replay       diskmon -r of a trace from gen_etl (DM_COST_IOS requests,
#                default 1000000), text to /dev/null: MB/s, records/s and
#                max RSS (GNU time)
# bench_callback and gen_etl come from DISKMON's build folder (built there
# when missing); without them, or without the sample traces, those rows
# say why. For each diskmon: CPU per request, the user + system time of
# the whole process (all its threads, /proc/PID/stat just before it is
# stopped) divided by the requests fio made while it watched, and the
# requests it lost. DM_COST_CONFIGS="alone read mmap ..." runs only those.
# The table prints medians: IOPS, the share of fio's IOPS kept (ratio to
# alone), CPU ns per request, lost; then the callback and replay rows.
set -u

DISKMON=${1:?usage: linux_cost.sh DISKMON [SECONDS] [ROUNDS]}
SECONDS_EACH=${2:-5}
ROUNDS=${3:-5}
OLD=${DISKMON_OLD:-}

. "$(dirname "$0")/../lib/bench_common.sh"
bench_need
BUILD=$(dirname "$DISKMON")
CALLBACK=$BUILD/bench_callback GEN=$BUILD/gen_etl
ETL_DIR=${DM_SHARED_ETL:-$(dirname "$0")/../../../shared/etl}
REPLAY_IOS=${DM_COST_IOS:-1000000}
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

bench_loop
TICKS=$(getconf CLK_TCK)

run_fio() { bench_fio cost "$SECONDS_EACH"; }

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

bench_biosnoop

# The callback and replay rows' tools: what is missing is said in the table.
cb_why="" replay_why=""
for t in bench_callback gen_etl; do
    [ -x "$BUILD/$t" ] || cmake --build "$BUILD" --target "$t" >"$work/build.log" 2>&1 ||
        { [ $t = gen_etl ] && replay_why="cannot build gen_etl in $BUILD" || cb_why="cannot build bench_callback in $BUILD"; }
done
[ -z "$cb_why" ] && { [ -f "$ETL_DIR/perfview-net452-x64-win8.etl" ] && [ -f "$ETL_DIR/filtrace-diskio-win11.etl" ]; } ||
    cb_why=${cb_why:-"the sample traces are not in $ETL_DIR"}
/usr/bin/time -f %M true >/dev/null 2>&1 || replay_why=${replay_why:-"GNU time is missing (apt-get install time)"}
if [ -z "$replay_why" ]; then
    "$GEN" --ios "$REPLAY_IOS" --cpus 8 --seed 11 "$work/replay.etl" >"$work/replay.gen" 2>"$work/replay.gen.err" ||
        replay_why="gen_etl failed: $(tail -1 "$work/replay.gen.err")"
fi

# callback_round: one bench_callback run of 5 rounds; appends its ns per
# record, "NAME: DiskIo records only: ...; decode+filter+enqueue X
# ns/record" and the same with "all records", to $work/cb.NAME.{diskio,all}.
callback_round() {
    [ -z "$cb_why" ] || { echo -; return; }
    "$CALLBACK" "$ETL_DIR" 5 >"$work/callback.out" 2>&1 || { echo "bench_callback failed"; exit 1; }
    for what in diskio all; do
        if [ $what = diskio ]; then pat='DiskIo records only'; else pat='all records'; fi
        sed -n "s/^\([^:]*\): $pat: .*; decode+filter+enqueue \([0-9.]*\) ns\/record\$/\1 \2/p" \
            "$work/callback.out" | while read -r n v; do echo "$v" >>"$work/cb.$n.$what"; done
    done
    echo ok
}

# replay_round: diskmon -r of the generated trace, text to /dev/null;
# appends its wall time (ns) and max RSS (KiB); prints the ms.
replay_round() {
    local t0 t1
    [ -z "$replay_why" ] || { echo -; return; }
    t0=$(date +%s%N)
    /usr/bin/time -f %M -o "$work/rss.tmp" "$DISKMON" -r "$work/replay.etl" -o /dev/null \
        2>"$work/replay.err" || { echo "replay failed: $(head -2 "$work/replay.err")"; exit 1; }
    t1=$(date +%s%N)
    echo $((t1 - t0)) >>"$work/replay.ns"
    tail -1 "$work/rss.tmp" >>"$work/replay.rss"
    echo "$(((t1 - t0) / 1000000))ms"
}

configs="alone tracepoints read mmap perf"
[ -n "$OLD" ] && configs="$configs old"
configs="$configs record"
[ "$have_bpftrace" = 1 ] && configs="$configs bpftrace"
configs="$configs callback replay"
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
            start_bpftrace
            v=$(plain_round bpftrace)
            sleep 0.3
            stop_bg ;;
        callback) v=$(callback_round) ;;
        replay) v=$(replay_round) ;;
        esac
        printf ' %11s' "$v"
    done
    echo
done

ma=$(median - <"$work/alone.iops")
echo
echo "medians of $ROUNDS rounds, fio 4 KiB randread iodepth 32 on $loop (/dev/shm), ${SECONDS_EACH}s each,"
echo "$(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d):"
printf '%-12s %10s %8s %14s %8s %10s\n' config IOPS kept "CPU ns/request" "of it sys" lost
for c in $configs; do
    [ -f "$work/$c.iops" ] || continue
    m=$(median - <"$work/$c.iops")
    kept=$(awk -v a="$ma" -v m="$m" 'BEGIN { if (a > 0) printf "%.1f%%", 100 * m / a; else print "?" }')
    ns=- sys=- lost=-
    if [ -f "$work/$c.ns" ]; then
        ns=$(median - <"$work/$c.ns")
        sys=$(median - <"$work/$c.sys")
        lost=$(paste -sd, "$work/$c.lost")
    fi
    printf '%-12s %10s %8s %14s %8s %10s\n' "$c" "$m" "$kept" "$ns" "$sys" "$lost"
done
case " $configs " in *" callback "*)
    echo
    if [ -n "$cb_why" ]; then
        echo "ETW live path (bench_callback): skipped, $cb_why"
    else
        echo "ETW live path, decode + filter + enqueue (bench_callback, medians of the rounds' 5-round runs):"
        for f in "$work"/cb.*.diskio; do
            n=${f#"$work/cb."}; n=${n%.diskio}
            # bench_callback prints fractions: keep one decimal.
            printf '  %-32s %8s ns per DiskIo record %8s ns per record, all records\n' "$n" \
                "$(sort -n "$f" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')" \
                "$(sort -n "$work/cb.$n.all" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')"
        done
    fi ;;
esac
case " $configs " in *" replay "*)
    if [ -n "$replay_why" ]; then
        echo "replay: skipped, $replay_why"
    else
        ns=$(median - <"$work/replay.ns")
        bytes=$(stat -c %s "$work/replay.etl")
        records=$(awk 'NR == 1 { print $5 }' "$work/replay.gen")
        echo "replay of gen_etl's trace ($REPLAY_IOS requests, $records records, $bytes bytes), text to /dev/null:"
        awk -v b="$bytes" -v r="$records" -v ns="$ns" -v k="$(median - <"$work/replay.rss")" 'BEGIN {
            printf "  %.3f s: %.0f MB/s, %.2fM records/s, max RSS %.1f MiB\n",
                   ns / 1e9, b * 1000 / ns, r * 1000 / ns, k / 1024 }'
    fi ;;
esac
