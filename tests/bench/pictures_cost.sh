#!/usr/bin/env bash
# tests/bench/pictures_cost.sh [--build DIR] [--rounds R] [--no-callgrind]
#
# What --heatmap, --offset-map and --report cost a replay (the aim: within
# 10% of the time without them): the shared x64 sample trace and a
# 1M-request trace from gen_etl, each replayed to -o /dev/null without the
# pictures, with the two maps, and with the maps and the report, the three
# interleaved in every round (noise spreads over all of them); medians of
# wall and CPU (user + sys, GNU time) time, and the instruction count of one
# run of each under callgrind, the figure a shared, noisy machine cannot
# move. Files go to DM_BENCH_DIR (default /dev/shm), so the disk's fsync is
# not what is measured. Run by hand; prints a table.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=build/default ROUNDS=5 CALLGRIND=1
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=${2:?}; shift ;;
    --rounds) ROUNDS=${2:?}; shift ;;
    --no-callgrind) CALLGRIND=0 ;;
    *) echo "usage: $0 [--build DIR] [--rounds R] [--no-callgrind]" >&2; exit 2 ;;
    esac
    shift
done
DM=$PWD/$BUILD/diskmon
ETL=${DM_SHARED_ETL:-$PWD/../shared/etl}
W=$(mktemp -d "${DM_BENCH_DIR:-/dev/shm}/pictures_cost.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
cmake --build "$BUILD" --target diskmon gen_etl >/dev/null || exit 1
"$BUILD/gen_etl" --ios 1000000 "$W/m1.etl" >/dev/null || exit 1
traces="$W/m1.etl"
[ -f "$ETL/perfview-net452-x64-win8.etl" ] && traces="$ETL/perfview-net452-x64-win8.etl $traces"

conf() { # which -> the options
    case $1 in
    none) ;;
    maps) echo "--heatmap $W/h.svg --offset-map $W/o.svg" ;;
    all) echo "--heatmap $W/h.svg --offset-map $W/o.svg --report $W/r.html" ;;
    esac
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-34s %-5s %8s %7s %8s %14s %7s\n' trace with wall_s vs_none cpu_s instructions vs_none
for t in $traces; do
    for _ in $(seq "$ROUNDS"); do
        for c in none maps all; do
            # wall from bash's microsecond clock (time's %e has 10 ms steps,
            # a fifth of the sample trace's run); CPU from time
            t0=$EPOCHREALTIME
            # shellcheck disable=SC2046
            /usr/bin/time -f "%U %S" -o "$W/t" "$DM" -r "$t" -o /dev/null $(conf $c) 2>/dev/null
            t1=$EPOCHREALTIME
            read -r u s <"$W/t"
            awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }' >>"$W/wall.$c"
            echo "$u $s" | awk '{ print $1 + $2 }' >>"$W/cpu.$c"
        done
    done
    base="" base_wall=""
    for c in none maps all; do
        ir=-
        if [ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null; then
            # shellcheck disable=SC2046
            ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$DM" -r "$t" \
                -o /dev/null $(conf $c) 2>&1 | awk '/Collected/ { print $4 }')
        fi
        [ -z "$base" ] && base=$ir
        rel=-
        [ "$ir" != - ] && rel=$(awk -v a="$ir" -v b="$base" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }')
        wall=$(median <"$W/wall.$c")
        [ -z "$base_wall" ] && base_wall=$wall
        printf '%-34s %-5s %8s %7s %8s %14s %7s\n' "$(basename "$t")" "$c" "$wall" \
            "$(awk -v a="$wall" -v b="$base_wall" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }')" \
            "$(median <"$W/cpu.$c")" "$ir" "$rel"
        rm -f "$W/wall.$c" "$W/cpu.$c"
    done
done
echo "(medians of $ROUNDS interleaved rounds; instructions: one callgrind run each; load: $(cut -d' ' -f1-3 /proc/loadavg))"
