#!/bin/bash
# linux_bench.sh DISKMON [SECONDS] [ROUNDS] - what watching costs, side by side.
#
# Not run by CI. On a loop device over /dev/shm, fio random 4 KiB O_DIRECT
# reads (libaio, iodepth 32) run SECONDS (default 5) each, ROUNDS times
# (default 3) in turn:
#   alone        fio only
#   diskmon      diskmon (all disks, text to /dev/null, -s for its counts)
#   perf record  perf record -e block:block_rq_issue -e block:block_rq_complete
#                -a -o /dev/shm/perf.data
#   source only  diskmon --op discard: every request captured, decoded and
#                paired, but none printed (what the Linux source itself costs)
# and prints each run's IOPS, the medians, the overhead against fio alone
# and diskmon's event and lost counts. The configurations alternate so
# that noise from a shared machine spreads over all of them.
set -u

DISKMON=${1:?usage: linux_bench.sh DISKMON [SECONDS] [ROUNDS]}
SECONDS_EACH=${2:-5}
ROUNDS=${3:-3}

[ "$(id -u)" = 0 ] || { echo "needs root"; exit 1; }
for t in fio perf losetup; do
    command -v "$t" >/dev/null || { echo "needs $t"; exit 1; }
done

work=$(mktemp -d /dev/shm/diskmon_bench.XXXXXX) || exit 1
loop=""
bgpid=""
cleanup() {
    [ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null
    wait 2>/dev/null
    [ -n "$loop" ] && losetup -d "$loop"
    rm -rf "$work" /dev/shm/perf.data
}
trap cleanup EXIT
trap 'exit 1' INT TERM

truncate -s 512M "$work/disk.img"
loop=$(losetup -f --show "$work/disk.img") || exit 1
command -v udevadm >/dev/null && udevadm settle -t 5 2>/dev/null

run_fio() {
    fio --name=bench --filename="$loop" --rw=randread --bs=4k --ioengine=libaio \
        --iodepth=32 --direct=1 --runtime="$SECONDS_EACH" --time_based \
        --output-format=json >"$work/fio.json" 2>/dev/null || return 1
    awk '/"read" : \{/ { r = 1 } r && /"iops"/ { gsub(/[^0-9.]/, "", $3); printf "%.0f\n", $3; exit }' \
        "$work/fio.json"
}

stop_bg() {
    kill -INT "$bgpid"
    wait "$bgpid"
    local rc=$?
    bgpid=""
    return $rc
}

median() {
    sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

: >"$work/alone" ; : >"$work/diskmon" ; : >"$work/perf" ; : >"$work/source"
printf '%-6s %12s %12s %12s %12s   %s\n' round alone diskmon "perf record" "source only" \
    "diskmon events / lost / exit"
for round in $(seq "$ROUNDS"); do
    a=$(run_fio)

    "$DISKMON" -s >/dev/null 2>"$work/dm.err" &
    bgpid=$!
    sleep 1
    kill -0 "$bgpid" 2>/dev/null || { cat "$work/dm.err"; exit 1; }
    d=$(run_fio)
    sleep 0.5
    stop_bg
    drc=$?
    devents=$(sed -n 's/^\([0-9]*\) events in .*/\1/p' "$work/dm.err")
    dlost=$(sed -n 's/.*; lost \([0-9]*\) (.*/\1/p' "$work/dm.err")
    grep -q 'dropped unreported)' "$work/dm.err" &&
        dlost="$dlost ($(sed -n 's/.* \([0-9]*\) dropped unreported).*/\1/p' "$work/dm.err") unreported by the kernel)"

    perf record -q -e block:block_rq_issue -e block:block_rq_complete -a \
        -o /dev/shm/perf.data >/dev/null 2>"$work/perf.err" &
    bgpid=$!
    sleep 1
    kill -0 "$bgpid" 2>/dev/null || { cat "$work/perf.err"; exit 1; }
    p=$(run_fio)
    sleep 0.5
    stop_bg

    "$DISKMON" --op discard >/dev/null 2>"$work/src.err" &
    bgpid=$!
    sleep 1
    kill -0 "$bgpid" 2>/dev/null || { cat "$work/src.err"; exit 1; }
    o=$(run_fio)
    sleep 0.5
    stop_bg

    echo "$a" >>"$work/alone"; echo "$d" >>"$work/diskmon"; echo "$p" >>"$work/perf"
    echo "$o" >>"$work/source"
    printf '%-6s %12s %12s %12s %12s   %s / %s / %s\n' "$round" "$a" "$d" "$p" "$o" \
        "$devents" "$dlost" "$drc"
done
ma=$(median <"$work/alone"); md=$(median <"$work/diskmon"); mp=$(median <"$work/perf")
mo=$(median <"$work/source")
printf '%-6s %12s %12s %12s %12s\n' median "$ma" "$md" "$mp" "$mo"
awk -v a="$ma" -v d="$md" -v p="$mp" -v o="$mo" 'BEGIN {
    printf "overhead vs fio alone: diskmon %.1f%%, perf record %.1f%%, source only %.1f%%\n",
           100 * (a - d) / a, 100 * (a - p) / a, 100 * (a - o) / a }'
