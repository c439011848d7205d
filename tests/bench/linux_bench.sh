#!/bin/bash
# linux_bench.sh DISKMON [SECONDS] [ROUNDS] - what watching costs, side by side.
#
# Not run by CI (it needs a quiet machine). On a loop device over /dev/shm,
# fio random 4 KiB O_DIRECT reads (libaio, iodepth 32) run SECONDS (default
# 10) each, ROUNDS times (default 5, at least 5 for the medians docs/benchmarks.md
# quotes), the configurations interleaved so that noise spreads over all:
#   alone        fio only
#   tracefs      diskmon (default backend: a tracefs instance), all disks,
#                text to /dev/null, -s for its counts
#   perf         diskmon --backend perf, likewise
#   perf record  perf record -e block:block_io_start -e block:block_rq_complete
#                -a -o /dev/shm/...: the same two tracepoints into perf's file
#   bpftrace     a biosnoop-style bpftrace script on the same two tracepoints
#                (start time, pid and comm kept per dev+sector; one printf per
#                completed request), its output to /dev/null; the column shows
#                "-" when bpftrace is not installed (apt-get install bpftrace)
# It prints each round's IOPS, then a table of medians: IOPS, the share of
# fio's IOPS kept (ratio to alone), diskmon's lost count and exit code, and
# diskmon's max RSS (VmHWM from /proc, read just before it is stopped).
#
# DM_BENCH_PROFILE=1 adds one more run of fio under the default backend with
# `perf record -a -g` beside it and prints where the CPU time went, by
# command and by object (kernel vs diskmon's threads vs fio).
set -u

DISKMON=${1:?usage: linux_bench.sh DISKMON [SECONDS] [ROUNDS]}
SECONDS_EACH=${2:-10}
ROUNDS=${3:-5}

. "$(dirname "$0")/../lib/bench_common.sh"
bench_need

work=$(mktemp -d /dev/shm/diskmon_bench.XXXXXX) || exit 1
loop=""
bgpid=""
cleanup() {
    [ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null
    wait 2>/dev/null
    [ -n "$loop" ] && losetup -d "$loop"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

bench_loop

run_fio() { # IOPS only
    local out
    out=$(bench_fio bench "$SECONDS_EACH") || return 1
    echo "${out% *}"
}

# diskmon_round BACKEND TAG: one fio run under diskmon; appends IOPS, lost,
# exit code and max RSS (KiB) to $work/TAG.*.
diskmon_round() {
    local backend=$1 tag=$2 iops rss lost rc
    start_bg "$DISKMON" --backend "$backend" -s >/dev/null 2>"$work/$tag.err" ||
        { cat "$work/$tag.err"; exit 1; }
    iops=$(run_fio)
    sleep 0.5
    rss=$(awk '/^VmHWM:/ { print $2 }' "/proc/$bgpid/status")
    stop_bg
    rc=$?
    lost=$(sed -n 's/.*; lost \([0-9]*\) (.*/\1/p' "$work/$tag.err")
    echo "$iops" >>"$work/$tag.iops"
    echo "${lost:-?}" >>"$work/$tag.lost"
    echo "$rc" >>"$work/$tag.rc"
    echo "${rss:-0}" >>"$work/$tag.rss"
    grep -E 'lost before diskmon saw (it|them); block tracepoints' "$work/$tag.err" >>"$work/$tag.why"
    echo "$iops"
}

bench_biosnoop
[ "$have_bpftrace" = 1 ] || echo "bpftrace is not installed (apt-get install bpftrace): its column shows -"

printf '%-6s %12s %12s %12s %12s %12s\n' round alone tracefs perf "perf record" bpftrace
for round in $(seq "$ROUNDS"); do
    a=$(run_fio); echo "$a" >>"$work/alone.iops"
    t=$(diskmon_round tracefs tracefs)
    p=$(diskmon_round perf perf)
    start_bg perf record -q -e block:block_io_start -e block:block_rq_complete -a \
        -o "$work/perf.data" >/dev/null 2>"$work/rec.err" || { cat "$work/rec.err"; exit 1; }
    r=$(run_fio)
    sleep 0.5
    stop_bg
    echo "$r" >>"$work/record.iops"
    rm -f "$work/perf.data"
    b=-
    if [ "$have_bpftrace" = 1 ]; then
        start_bpftrace
        b=$(run_fio)
        sleep 0.5
        stop_bg
        echo "$b" >>"$work/bpftrace.iops"
    fi
    printf '%-6s %12s %12s %12s %12s %12s\n' "$round" "$a" "$t" "$p" "$r" "$b"
done

ma=$(median <"$work/alone.iops")
echo
echo "medians of $ROUNDS rounds, fio 4 KiB randread iodepth 32 on $loop (/dev/shm), ${SECONDS_EACH}s each:"
printf '%-12s %10s %8s %10s %14s %12s\n' config IOPS kept "lost" "exit codes" "max RSS"
row() { # NAME TAG
    local m kept lost rcs rss
    m=$(median <"$work/$2.iops")
    kept=$(awk -v a="$ma" -v m="$m" 'BEGIN { if (a > 0) printf "%.1f%%", 100 * m / a; else print "?" }')
    if [ -f "$work/$2.lost" ]; then
        lost=$(paste -sd, "$work/$2.lost")
        rcs=$(paste -sd, "$work/$2.rc")
        rss="$(median <"$work/$2.rss") KiB"
    else
        lost=- rcs=- rss=-
    fi
    printf '%-12s %10s %8s %10s %14s %12s\n' "$1" "$m" "$kept" "$lost" "$rcs" "$rss"
}
row alone alone
row tracefs tracefs
row perf perf
row "perf record" record
[ "$have_bpftrace" = 1 ] && row bpftrace bpftrace
for tag in tracefs perf; do
    [ -s "$work/$tag.why" ] && { echo "$tag losses:"; sed 's/^/  /' "$work/$tag.why"; }
done

if [ "${DM_BENCH_PROFILE:-0}" = 1 ]; then
    echo
    echo "where the time goes under the default backend (perf record -a -g):"
    start_bg "$DISKMON" -s >/dev/null 2>"$work/prof.err" || { cat "$work/prof.err"; exit 1; }
    perf record -q -a -g -o "$work/prof.data" -- sleep "$SECONDS_EACH" >/dev/null 2>&1 &
    prof=$!
    run_fio >/dev/null
    wait "$prof"
    stop_bg
    perf report -i "$work/prof.data" --no-children -g none --sort comm,dso --stdio 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -25
fi
