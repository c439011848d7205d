#!/usr/bin/env bash
# replay_volumes.sh - replay names each request's volume from the trace's
# SystemConfig LogDisk records, checked against the reference decodings of
# the Windows 8 sample (PerfView's baseline for the LogDisk fields, the
# independent DiskIo decoding for every request) by volumes_check.py: the
# partition column of every request, and -d C: keeping exactly the
# requests inside C:.
# The Windows 11 sample carries LogDisk records too, but no reference
# decodes them: only its run is checked (exit 0, partition column present).
# Usage: replay_volumes.sh PATH/TO/diskmon. Exit 0 pass, 1 fail, 77 skip.
set -u
DISKMON=$(realpath "${1:?usage: replay_volumes.sh DISKMON}")
HERE=$(cd "$(dirname "$0")" && pwd)
ETL=${DM_SHARED_ETL:-$HERE/../../../shared/etl}
REF=$ETL/reference
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

skip() {
    if [ "${CI:-}" = true ]; then
        echo "FAIL replay_volumes: $* (required under CI=true)"
        exit 1
    fi
    echo "SKIP replay_volumes: $*"
    exit 77
}
command -v python3 >/dev/null || skip "python3 is not installed (apt-get install python3)"
w8=perfview-net452-x64-win8
[ -f "$ETL/$w8.etl" ] && [ -f "$REF/$w8.baseline.txt" ] && [ -f "$REF/$w8.diskio.csv" ] ||
    skip "sample trace or its reference not found at $ETL (set DM_SHARED_ETL)"

fails=0
"$DISKMON" -r "$ETL/$w8.etl" -f csv -o "$TMP/all.csv" 2>"$TMP/err" ||
    { echo "FAIL: diskmon -r $w8: $(cat "$TMP/err")"; exit 1; }
"$DISKMON" -r "$ETL/$w8.etl" -d C: -f csv -o "$TMP/c.csv" 2>"$TMP/err" ||
    { echo "FAIL: diskmon -r $w8 -d C:: $(cat "$TMP/err")"; exit 1; }
if python3 "$HERE/../oracles/volumes_check.py" "$REF/$w8.baseline.txt" \
    "$REF/$w8.diskio.csv" "$TMP/all.csv" "$TMP/c.csv" C:; then
    echo "PASS replay_volumes/$w8"
else
    echo "FAIL replay_volumes/$w8"
    fails=$((fails + 1))
fi
w11=filtrace-diskio-win11
if [ -f "$ETL/$w11.etl" ]; then
    if "$DISKMON" -r "$ETL/$w11.etl" -f csv -o "$TMP/w11.csv" 2>"$TMP/err" &&
        head -1 "$TMP/w11.csv" | grep -q ',partition,'; then
        echo "PASS replay_volumes/$w11 (runs; no reference for its volumes)"
    else
        echo "FAIL replay_volumes/$w11: $(cat "$TMP/err")"
        fails=$((fails + 1))
    fi
fi
[ "$fails" = 0 ]
