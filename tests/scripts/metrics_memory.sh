#!/usr/bin/env bash
# metrics_memory.sh BUILD_DIR - --metrics keeps what grows with the disks and
# --metrics-top K, not with the number of distinct process names: a replay
# of a trace in which 100,000 distinct image names do I/O has a max RSS
# within 2 MiB of the same replay of a trace with 10 names (both made by
# tests/bench/gen_etl, the same number of requests, and the same processes
# coming and going: the second trace's new processes take 10 names in turn,
# so only the names differ, not what the decoder's thread and process tables
# hold), and its file still has K process series plus one (other) per disk
# and passes promtool.
# Exit 0 pass, 1 fail, 77 skip.
set -u
BUILD=$(realpath "${1:?usage: metrics_memory.sh BUILD_DIR}")
HERE=$(cd "$(dirname "$0")" && pwd)
DISKMON=$BUILD/diskmon
GEN=$BUILD/gen_etl
TMP=$(mktemp -d "$BUILD/metrics_memory.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
SUITE=metrics_memory
# shellcheck source=../lib/results.sh
. "$HERE/../lib/results.sh"

command -v python3 >/dev/null || need python3 "python3 is not installed"
command -v promtool >/dev/null || need promtool "promtool is not installed (apt-get install prometheus)"
[ -x "$GEN" ] || cmake --build "$BUILD" --target gen_etl >"$TMP/build.log" 2>&1 ||
    need gen_etl "cannot build gen_etl: $(tail -c 300 "$TMP/build.log")"

IOS=600000
"$GEN" --ios $IOS --processes 10 --threads 8 --names 100020 --name-pool 10 "$TMP/names10.etl" >/dev/null ||
    { fail generate "gen_etl failed"; exit 1; }
"$GEN" --ios $IOS --processes 10 --threads 8 --names 100020 "$TMP/names100k.etl" >/dev/null ||
    { fail generate "gen_etl failed"; exit 1; }

# The trace really has 100,000 distinct names doing I/O (diskmon's own json).
n=$("$DISKMON" -r "$TMP/names100k.etl" -f json | python3 -c '
import json, sys
print(len({json.loads(l).get("process") for l in sys.stdin}))')
check distinct_names_100000 test "${n:-0}" -ge 100000
n10=$("$DISKMON" -r "$TMP/names10.etl" -f json | python3 -c '
import json, sys
print(len({json.loads(l).get("process") for l in sys.stdin}))')
check distinct_names_at_most_20 test "${n10:-999}" -le 20

# Max RSS (KiB) of one run, from the kernel's rusage of the child.
maxrss() {
    python3 -c '
import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if rc == 0 else -1)' "$@"
}
r10=$(maxrss "$DISKMON" -r "$TMP/names10.etl" --metrics "$TMP/names10.prom")
r100k=$(maxrss "$DISKMON" -r "$TMP/names100k.etl" --metrics "$TMP/names100k.prom")
echo "# metrics_memory: max RSS with 10 names ${r10} KiB, with $n names ${r100k} KiB"
if [ "$r10" -gt 0 ] && [ "$r100k" -gt 0 ] && [ $((r100k - r10)) -le 2048 ]; then
    pass rss_within_2MiB
else
    fail rss_within_2MiB "10 names: $r10 KiB, $n names: $r100k KiB"
fi
series=$(grep -c '^diskmon_process_bytes_total{' "$TMP/names100k.prom")
# K (process, disk) pairs and one "(other)" per disk, four ops each.
disks=$(grep '^diskmon_busy_seconds_total{' "$TMP/names100k.prom" | grep -c .)
check process_series_k_plus_disks test "$series" -eq $(((20 + disks) * 4))
check promtool_100k promtool check metrics <"$TMP/names100k.prom"
[ "$fails" -eq 0 ]
